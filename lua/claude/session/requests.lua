--- The requests a session sends the CLI over the control protocol, one thin method each
-- (interrupt, models and modes, settings, MCP server control, files, skills and styles,
-- tasks, plugins, usage, environment): each names its subtype and fields and waits for
-- the answer through `Session:control` (claude.session), which owns the timeouts and
-- cancellation. claude.session copies these methods into its class. docs/api.md maps each
-- to its TypeScript Agent SDK `Query` method.
-- @module claude.session.requests
local json = require "claude.json"
local errors = require "claude.errors"

local check, check_field = errors.check, errors.check_field

-- A trailing optional timeout: a number or nil.
local function check_timeout(timeout, n, fname)
  if timeout ~= nil and (type(timeout) ~= "number" or timeout < 0) then
    errors.argerror(n, fname, "non-negative number expected, got %s", errors.typename(timeout))
  end
end

local M = {}

--- Interrupts the current turn (the CLI ends it with an error result).
-- @return the CLI's receipt (`still_queued`: the uuids of queued messages that will still
--   run, on CLIs that say so; else `{}`) | nil, err, kind
function M:interrupt(timeout)
  return self:control("interrupt", nil, timeout)
end

function M:set_model(model, timeout)
  return self:control("set_model", { model = model or json.null }, timeout)
end

function M:set_permission_mode(mode, timeout)
  return self:control("set_permission_mode", { mode = mode }, timeout)
end

local THINKING_DISPLAY = { summarized = true, omitted = true, highlights = true }

--- Sets the most thinking tokens (nil: the default). `opts` is a timeout (a number) or
-- `{ display = "summarized"|"omitted"|"highlights"|false, timeout = s }`: `display`
-- replaces the session's thinking display, `false` clears that override.
-- @function M:set_max_thinking_tokens
M.set_max_thinking_tokens = errors.public(function(self, n, opts)
  local fields = { max_thinking_tokens = n or json.null }
  local timeout = opts
  if type(opts) == "table" then
    errors.check_fields(opts, { display = true, timeout = true }, "set_max_thinking_tokens")
    local d = opts.display
    if d ~= nil and d ~= false and not THINKING_DISPLAY[d] then
      errors.bad_field("display", "set_max_thinking_tokens",
        "'summarized', 'omitted', 'highlights' or false expected, got %s", tostring(d))
    end
    if d == false then fields.thinking_display = json.null else fields.thinking_display = d end
    timeout = opts.timeout
  end
  check_timeout(timeout, 2, "set_max_thinking_tokens")
  return self:control("set_max_thinking_tokens", fields, timeout)
end)

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

--- The context window's use by category. `opts` is a timeout or `{ detail = "full"|
-- "summary", timeout = s }`: "summary" answers from the last response's usage, without
-- the CLI's token-count requests.
-- @function M:get_context_usage
M.get_context_usage = errors.public(function(self, opts)
  local fields, timeout = nil, opts
  if type(opts) == "table" then
    errors.check_fields(opts, { detail = true, timeout = true }, "get_context_usage")
    if opts.detail ~= nil and opts.detail ~= "full" and opts.detail ~= "summary" then
      errors.bad_field("detail", "get_context_usage", "'full' or 'summary' expected, got %s",
        tostring(opts.detail))
    end
    fields, timeout = { detail = opts.detail }, opts.timeout
  end
  check_timeout(timeout, 1, "get_context_usage")
  return self:control("get_context_usage", fields, timeout)
end)

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

--- Sends the blocking tasks running in the foreground (Bash commands, subagents) to the
-- background, as Ctrl+B does: only the one started by `tool_use_id` when given.
-- @function M:background_tasks
-- @return true when a task went to the background; false when `tool_use_id` matched none
M.background_tasks = errors.public(function(self, tool_use_id, timeout)
  check(tool_use_id, 1, "background_tasks", "string", true)
  check_timeout(timeout, 2, "background_tasks")
  local r, err, kind = self:control("background_tasks", { tool_use_id = tool_use_id }, timeout)
  if r == nil then return nil, err, kind end
  if r.backgrounded == nil then return true end
  return r.backgrounded == true
end)

local RELOAD_PLUGINS = { hold_on_cache_impact = "holdOnCacheImpact",
  add_plugins = "addPlugins", refuse_if_busy = "refuseIfBusy", timeout = "" }

--- Reloads the plugins (and their commands, agents, MCP servers) from disk. `opts` is a
-- timeout or `{ hold_on_cache_impact =, add_plugins = { {type="local", path=}... },
-- refuse_if_busy =, timeout = }`.
-- @function M:reload_plugins
M.reload_plugins = errors.public(function(self, opts)
  local fields, timeout = nil, opts
  if type(opts) == "table" then
    errors.check_fields(opts, RELOAD_PLUGINS, "reload_plugins")
    fields = {}
    for k, wire in pairs(RELOAD_PLUGINS) do
      if wire ~= "" and opts[k] ~= nil then fields[wire] = opts[k] end
    end
    if opts.add_plugins then
      check_field(opts.add_plugins, "add_plugins", "reload_plugins", "table")
      fields.addPlugins = json.array { table.unpack(opts.add_plugins) }
    end
    timeout = opts.timeout
  end
  check_timeout(timeout, 1, "reload_plugins")
  return self:control("reload_plugins", fields, timeout)
end)

--- Reloads the skills from disk: `{ skills = {...} }`.
function M:reload_skills(timeout)
  return self:control("reload_skills", nil, timeout)
end

--- Re-reads the output-style directories: `{ available_output_styles = {...} }`.
function M:reload_output_styles(timeout)
  return self:control("reload_output_styles", nil, timeout)
end

--- Reads a resource of an MCP server the CLI is connected to.
-- @return `{ contents = {...} }` | nil, err
function M:read_mcp_resource(server_name, uri, timeout)
  return self:control("mcp_read_resource", { serverName = server_name, uri = uri }, timeout)
end

--- Calls a tool of an MCP server the CLI is connected to, without a model turn.
-- `opts` is a timeout or `{ soft_error_result = true, timeout = }`: with it (CLI 2.1.332) a
-- tool's own error comes back as its result (`isError = true`) instead of a failure.
-- @function M:mcp_call
-- @tparam string tool the full name, `mcp__<server>__<tool>`
-- @tparam[opt] table arguments
-- @return the CLI's answer (the tool's result) | nil, err, kind
M.mcp_call = errors.public(function(self, tool, arguments, opts)
  check(tool, 1, "mcp_call", "string")
  check(arguments, 2, "mcp_call", "table", true)
  local timeout, soft = opts, nil
  if type(opts) == "table" then
    errors.check_fields(opts, { soft_error_result = true, timeout = true }, "mcp_call")
    soft, timeout = opts.soft_error_result, opts.timeout
  end
  check_timeout(timeout, 3, "mcp_call")
  return self:control("mcp_call", { tool = tool, soft_error_result = soft,
    arguments = arguments and json.object(arguments) or json.object() }, timeout)
end)

local READ_FILE = { max_bytes = true, encoding = true, timeout = true }

--- Reads a file as the session sees it (relative to its working directory, under the
-- Read tool's permission rules).
-- @function M:read_file
-- @tparam string path
-- @tparam[opt] table opts `{ max_bytes = n (1 MiB), encoding = "utf-8"|"base64",
--   timeout = s }`
-- @return `{ contents =, ... }` | nil, err, kind (a refused read is a `control` error)
M.read_file = errors.public(function(self, path, opts)
  check(path, 1, "read_file", "string")
  check(opts, 2, "read_file", "table", true)
  opts = opts or {}
  errors.check_fields(opts, READ_FILE, "read_file")
  check_field(opts.max_bytes, "max_bytes", "read_file", "number", true)
  if opts.encoding ~= nil and opts.encoding ~= "utf-8" and opts.encoding ~= "base64" then
    errors.bad_field("encoding", "read_file", "'utf-8' or 'base64' expected, got %s",
      tostring(opts.encoding))
  end
  check_timeout(opts.timeout, 2, "read_file")
  return self:control("read_file", { path = path, max_bytes = opts.max_bytes,
    encoding = opts.encoding }, opts.timeout)
end)

--- Tells the CLI that `path` was read when it had modification time `mtime` (epoch
-- milliseconds), so that an Edit of it needs no new Read (unless it changed since).
-- @function M:seed_read_state
M.seed_read_state = errors.public(function(self, path, mtime, timeout)
  check(path, 1, "seed_read_state", "string")
  check(mtime, 2, "seed_read_state", "number")
  check_timeout(timeout, 3, "seed_read_state")
  return self:control("seed_read_state", { path = path, mtime = math.floor(mtime) }, timeout)
end)

--- Merges `settings` into the CLI's flag settings layer (the `settings` option, applied
-- during the session); a key set to `json.null` is cleared.
-- @function M:apply_flag_settings
M.apply_flag_settings = errors.public(function(self, settings, timeout)
  check(settings, 1, "apply_flag_settings", "table")
  check_timeout(timeout, 2, "apply_flag_settings")
  return self:control("apply_flag_settings", { settings = json.object(settings) }, timeout)
end)

--- Writes settings to a settings file through the CLI's own writer and applies them:
-- `source` is "localSettings" (takes `outputStyle`) or "userSettings" (`effortLevel`).
-- @function M:update_settings
M.update_settings = errors.public(function(self, source, settings, timeout)
  if source ~= "localSettings" and source ~= "userSettings" then
    errors.argerror(1, "update_settings", "'localSettings' or 'userSettings' expected, got %s",
      tostring(source))
  end
  check(settings, 2, "update_settings", "table")
  check_timeout(timeout, 3, "update_settings")
  return self:control("update_settings", { source = source,
    settings = json.object(settings) }, timeout)
end)

--- Pins (or clears, with `mode` nil) the permission mode of one MCP server's tools:
-- "default" (ask for each action) or "auto"; it only ever tightens.
-- @function M:set_mcp_permission_mode_override
-- @return `{ warning = text? }` | nil, err, kind
M.set_mcp_permission_mode_override = errors.public(function(self, server_name, mode, timeout)
  check(server_name, 1, "set_mcp_permission_mode_override", "string")
  if mode ~= nil and mode ~= "default" and mode ~= "auto" then
    errors.argerror(2, "set_mcp_permission_mode_override",
      "'default', 'auto' or nil expected, got %s", tostring(mode))
  end
  check_timeout(timeout, 3, "set_mcp_permission_mode_override")
  return self:control("set_mcp_permission_mode_override", { serverName = server_name,
    mode = mode or json.null }, timeout)
end)

--- The effective settings, each source's settings, and the values applied to the session.
function M:get_settings(timeout)
  return self:control("get_settings", nil, timeout)
end

--- The session's cost and usage, and the plan's rate limits where they apply
-- (`rate_limits_available`). `opts` is a timeout or `{ skip_behaviors = true, timeout = }`.
-- @function M:usage
M.usage = errors.public(function(self, opts)
  local fields, timeout = nil, opts
  if type(opts) == "table" then
    errors.check_fields(opts, { skip_behaviors = true, timeout = true }, "usage")
    fields = { skip_behaviors = opts.skip_behaviors or nil }
    timeout = opts.timeout
  end
  check_timeout(timeout, 1, "usage")
  return self:control("get_usage", fields, timeout)
end)

--- The cost summary `/cost` prints: `{ text = ... }`.
function M:get_session_cost(timeout)
  return self:control("get_session_cost", nil, timeout)
end

--- The models the session may select: `{ models = {...} }`.
function M:list_models(timeout)
  return self:control("list_models", nil, timeout)
end

--- The live permission rules and workspace directories (what `/permissions` lists).
function M:list_permission_rules(timeout)
  return self:control("list_permission_rules", nil, timeout)
end

--- The hooks of the settings files, the session and the plugins, by event (what `/hooks`
-- lists).
function M:get_hooks_listing(timeout)
  return self:control("get_hooks_listing", nil, timeout)
end

--- The CLI's version and build time.
function M:get_binary_version(timeout)
  return self:control("get_binary_version", nil, timeout)
end

--- Drops a queued user message (sent with `send(prompt, { uuid = ... })`) before it runs.
-- @function M:cancel_async_message
-- @return true when it was dropped, false when it had already started | nil, err, kind
M.cancel_async_message = errors.public(function(self, uuid, timeout)
  check(uuid, 1, "cancel_async_message", "string")
  check_timeout(timeout, 2, "cancel_async_message")
  local r, err, kind = self:control("cancel_async_message", { message_uuid = uuid }, timeout)
  if r == nil then return nil, err, kind end
  return r.cancelled == true
end)

--- Renames the running session (its transcript's title); the CLI reports the change as a
-- `system` message `session_title_changed`.
-- @function M:rename_session
M.rename_session = errors.public(function(self, title, timeout)
  check(title, 1, "rename_session", "string")
  check_timeout(timeout, 2, "rename_session")
  return self:control("rename_session", { title = title, source = "host",
    session_id = self.session_id }, timeout)
end)

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
