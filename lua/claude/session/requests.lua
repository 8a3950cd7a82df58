--- The requests a session sends the CLI over the control protocol, one thin method each
-- (interrupt, models and modes, MCP server control, file rewind, tasks, plugins,
-- environment): each names its subtype and fields and waits for the answer through
-- `Session:control` (claude.session), which owns the timeouts and cancellation.
-- claude.session copies these methods into its class.
-- @module claude.session.requests
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

--- Interrupts the current turn (the CLI ends it with an error result).
function M:interrupt(timeout)
  return self:control("interrupt", nil, timeout)
end

function M:set_model(model, timeout)
  return self:control("set_model", { model = model or json.null }, timeout)
end

function M:set_permission_mode(mode, timeout)
  return self:control("set_permission_mode", { mode = mode }, timeout)
end

function M:set_max_thinking_tokens(n, timeout)
  return self:control("set_max_thinking_tokens", { max_thinking_tokens = n or json.null },
    timeout)
end

function M:mcp_status(timeout)
  return self:control("mcp_status", nil, timeout)
end

function M:mcp_set_servers(servers, timeout)
  return self:control("mcp_set_servers", { servers = servers }, timeout)
end

function M:mcp_toggle(name, enabled, timeout)
  return self:control("mcp_toggle", { serverName = name, enabled = enabled }, timeout)
end

function M:mcp_reconnect(name, timeout)
  return self:control("mcp_reconnect", { serverName = name }, timeout)
end

function M:rewind_files(user_message_id, dry_run, timeout)
  return self:control("rewind_files", { user_message_id = user_message_id,
    dry_run = dry_run or nil }, timeout)
end

function M:get_context_usage(timeout)
  return self:control("get_context_usage", nil, timeout)
end


--- Makes the CLI pick up tools added to an in-process server since the
-- start: it drops and re-adds the server, which runs a new handshake.
function M:refresh_server(name, timeout)
  local ok, err = self:mcp_set_servers(json.object(), timeout)
  if not ok then return nil, err end
  return self:mcp_set_servers({ [name] = { type = "sdk", name = name } }, timeout)
end


--- Stops a background task (a subagent, a background shell); a
-- `task_notification` with status `stopped` follows.
function M:stop_task(task_id, timeout)
  return self:control("stop_task", { task_id = task_id }, timeout)
end

--- Reloads the plugins (and their commands, agents, MCP servers) from disk.
function M:reload_plugins(timeout)
  return self:control("reload_plugins", nil, timeout)
end

--- Reads a resource of an MCP server the CLI is connected to.
-- @return `{ contents = {...} }` | nil, err
function M:read_mcp_resource(server_name, uri, timeout)
  return self:control("mcp_read_resource", { serverName = server_name, uri = uri }, timeout)
end

--- Gives the CLI new values of environment variables (refreshed tokens:
-- the CLI applies CLAUDE_CODE_SESSION_ACCESS_TOKEN and CLAUDE_CODE_OAUTH_TOKEN),
-- as its `update_environment_variables` stdin message, and waits for the answer.
-- @function M:update_environment_variables
-- @return true | nil, err, kind
M.update_environment_variables = errors.public(function(self, variables, timeout)
  if type(variables) ~= "table" then
    errors.misuse("bad argument #1 to 'update_environment_variables' (table expected, got %s)",
      type(variables))
  end
  for k, v in pairs(variables) do
    if type(k) ~= "string" or type(v) ~= "string" then
      errors.misuse("bad argument #1 to 'update_environment_variables' (entry '%s' must be a "
        .. "string)", tostring(k))
    end
  end
  local r, err, kind = self.peer:request("update_environment_variables",
    { variables = json.object(variables) }, timeout)
  if r == nil then return nil, err, kind end
  return true
end)

return M
