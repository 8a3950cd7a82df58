--- A session's in-process MCP servers (`mcp_servers = { name = claude.server(...) }`): the
-- router that answers the CLI's `mcp_message` control requests, the writer of its answers,
-- the manifests that spare the CLI its handshakes, and the relay of list changes.
--
-- The answers are the tool-call hot path: the control envelope, the JSON-RPC envelope and a
-- text result's CallToolResult are written around the values in C (`write_pieces`), with
-- no Lua table built for them; a value that cannot be encoded leaves nothing half-written
-- and raises.
-- @module claude.session.servers
local core = require "claude.core"
local json = require "claude.json"
local wire = require "claude.mcp.wire"

local M = {}

local type = type

-- the control envelope around the answer (claude.mcp.wire's pieces in it)
local HEAD = '{"type":"control_response","response":{"subtype":"success","request_id":'
local MCP = ',"response":{"mcp_response":'
local RPC, TEXT, RESULT = MCP .. wire.RPC, wire.TEXT, wire.RESULT
local TEXT_TAIL, RESULT_TAIL = wire.TEXT_END.body .. "}}}\n", "}}}}\n"

-- The session's reply function: (request_id, response) or, for a tool call, (request_id,
-- result, rpc_id, text), where a string result is the text of a one-block CallToolResult
-- (`text` is true then: the router knows it).
local function replier(session)
  if session.recorder then
    -- a recorded session writes its replies as messages (the recording takes messages)
    return function(request_id, response, rpc_id, text)
      if rpc_id ~= nil then response = wire.answer(rpc_id, response, text) end
      session.write_message({ type = "control_response", response = { subtype = "success",
        request_id = request_id, response = { mcp_response = response } } })
    end
  end
  local write_pieces -- the stream's method, looked up once
  return function(request_id, response, rpc_id, text)
    local raw = session.raw
    if not raw then return end
    write_pieces = write_pieces or raw.write_pieces
    local ok, err, kind
    if text or (rpc_id ~= nil and type(response) == "string") then
      ok, err, kind = write_pieces(raw, HEAD, request_id, RPC, rpc_id, TEXT, response, TEXT_TAIL)
    elseif rpc_id == nil then
      ok, err, kind = write_pieces(raw, HEAD, request_id, MCP, response, "}}}\n")
    else
      ok, err, kind = write_pieces(raw, HEAD, request_id, RPC, rpc_id, RESULT, response,
        RESULT_TAIL)
    end
    if not ok and kind == "encode" then error(err, 0) end
  end
end

local LIST_CHANGED = { tools = "tools", resources = "resources",
  resource_templates = "resources", prompts = "prompts" }

--- Makes `server:add(...)` / `server:remove(...)` on the session's in-process servers
-- send the CLI `notifications/<list>/list_changed` (through `mcp_message`); CLI 2.1.330
-- then lists the server anew and the next turn sees the change.
local function watch_servers(self, sdk)
  for name, server in pairs(sdk) do
    server._watchers[self] = function(_, what)
      if self.closed or self.error or self.stdin_closed or self.exited
        or not LIST_CHANGED[what] then return end -- (middleware added: nothing to tell)
      self.peer:notify("mcp_message", { server_name = name, message = { jsonrpc = "2.0",
        method = "notifications/" .. LIST_CHANGED[what] .. "/list_changed" } })
    end
  end
end

local sessions = 0 -- (the ids of the sessions' connections to their servers: ctx.session)

--- Gives the session `self` its router over the servers `sdk` (name -> claude.server),
-- its reply function (`self.mcp_reply`), the call record its reader fills
-- (`self.call_record`), and the list-change relay.
-- @param self the session (its `peer`, `raw`, `options.tool_budget`)
-- @tparam table sdk
function M.attach(self, sdk)
  self.mcp_reply = replier(self)
  local traced = self.trace and require "claude.trace.session"
  sessions = sessions + 1
  self.router = require("claude.mcp.router").new(sdk, {
    budget = self.options.tool_budget, transport = "pipe", -- (the CLI's stdio)
    session = "in-process-" .. sessions,
    -- traced: a call's span is under the turn that asked for it
    trace_parent = traced and function() return traced.current(self) end or nil,
    notify = function(server_name, message)
      -- a control request whose answer nobody waits for
      if not self.stdin_closed then
        self.peer:notify("mcp_message", { server_name = server_name, message = message })
      end
    end,
  })
  -- the record the control reader fills with each tool call (claude.mcp.call)
  local call = require "claude.mcp.call"
  self.call_record = call.new { [call.REPLY] = self.mcp_reply }
  watch_servers(self, sdk)
end

--- The manifests of `initialize.sdkMcpServerManifests`, by server name, or nil: the CLI's
-- first handshake with each server, answered ahead of time. With them it skips the
-- initialize and tools/list round trips (newer CLIs; older ones ignore the field and ask).
-- @param router the session's router
-- @tparam {string,...} names
function M.manifests(router, names)
  local out = {}
  for _, name in ipairs(names) do
    local server = router:servers()[name]
    local kind, init = core.mcp_dispatch(server, { jsonrpc = "2.0", id = 0, method = "initialize",
      params = { protocolVersion = core.MCP_PROTOCOL_VERSION, capabilities = json.object(),
        clientInfo = { name = "claude-code", version = "0" } } })
    if kind ~= "reply" or not init.result then return nil end
    out[name] = { initializeResult = init.result,
      toolsListResult = { tools = json.array(server:list("tools")) } }
  end
  return out
end

--- `initialize.sdkMcpServerConfigs`, by server name, or nil when no in-process server has
-- settings: a server's `timeout` (milliseconds), as the TypeScript SDK sends it.
function M.configs(router, names)
  local out
  for _, name in ipairs(names) do
    local server = router:servers()[name]
    if type(server) == "table" and server.kind == "server" and server.timeout then
      out = out or {}
      out[name] = { timeout = server.timeout }
    end
  end
  return out
end

return M
