--- The fake CLI's control protocol, both ways: the requests it makes of the SDK
-- (`can_use_tool`, `hook_callback`, `mcp_message` and the MCP handshake, waiting for their
-- answers) and its answers to the SDK's requests (`respond`, `answer`). Methods of the cli
-- object of `claude.testing.fake_cli`, which installs them; see docs/testing.md.
-- @module claude.testing.fake_cli_control
local json = require "claude.json"
local errors = require "claude.errors"
local peer = require "claude.testing.peer"

local null, jarray, jobject = json.null, json.array, json.object
local fmt = string.format
local merge, describe = peer.merge, peer.describe

local Cli = {} -- the methods, copied into the cli class by `install`
local M, display_name, matcher_matches -- the fake_cli module and its helpers, from `install`

---------------------------------------------------------------------------
-- Control requests, CLI -> SDK

--- Sends a control_request without waiting; returns its request_id (a UUID).
function Cli:send_request(subtype, fields)
  if type(subtype) ~= "string" then
    return errors.blame("bad argument #1 to 'send_request' (string expected, got %s)",
      type(subtype))
  end
  local id = M.uuid()
  self.pending[id] = true
  self:send({ type = "control_request", request_id = id,
    request = merge({ subtype = subtype }, fields) })
  return id
end

--- Waits for the control_response to `request_id`; other lines that arrive
-- meanwhile are kept for the next `read`.
-- @return the response body (`{}` when absent), or nil and the error message
--   of an error response; fails at EOF
function Cli:await_response(request_id)
  while not self.responses[request_id] do
    local e = self:_read_input()
    if e == nil then
      self:fail("expected the control_response to request %s, got EOF (stdin closed)",
        request_id)
    end
    if e then self.backlog[#self.backlog + 1] = e end
  end
  local r = self.responses[request_id]
  self.responses[request_id] = nil
  if r.subtype == "success" then
    local body = r.response
    if body == nil or body == null then body = jobject() end
    return body
  end
  return nil, r.error or fmt("control_response subtype %s", tostring(r.subtype))
end

--- Sends a control_request and waits for its answer (see `await_response`).
function Cli:request(subtype, fields)
  return self:await_response(self:send_request(subtype, fields))
end

--- Sends `control_cancel_request` for a request: the SDK should stop
-- working on it; a late answer is dropped.
function Cli:cancel(request_id)
  self.pending[request_id] = nil
  self.cancelled[request_id] = true
  return self:send({ type = "control_cancel_request", request_id = request_id })
end

--- Passes a JSON-RPC message to the SDK's MCP server `server`.
-- @return the JSON-RPC response (`mcp_response`), or nil and an error
function Cli:mcp(server, message)
  local body, err = self:request("mcp_message", { server_name = server, message = message })
  if not body then return nil, err end
  return body.mcp_response
end

function Cli:_server(name)
  local s = self.servers[name]
  if not s then
    s = { next_id = 0 }
    self.servers[name] = s
  end
  return s
end

--- Connects to the SDK's MCP server as the real CLI does: `initialize`
-- (id 0), `notifications/initialized`, `tools/list` (id 1). Fails the
-- script when the server answers with an error.
-- @return the tools list, the initialize result
function Cli:mcp_connect(server)
  local s = self:_server(server)
  s.next_id = 0
  local init, err = self:mcp(server, { method = "initialize", params = {
    protocolVersion = "2025-11-25", capabilities = jobject(),
    clientInfo = { name = "claude-code", title = "Claude Code", version = M.version,
      description = "Anthropic's agentic coding tool",
      websiteUrl = "https://claude.com/claude-code" } }, jsonrpc = "2.0", id = 0 })
  if not init or init.error then
    self:fail("MCP server %s: initialize failed: %s", server, describe(err or init.error))
  end
  self:mcp(server, { method = "notifications/initialized", jsonrpc = "2.0" })
  local list
  list, err = self:mcp(server, { method = "tools/list", jsonrpc = "2.0", id = 1 })
  if not list or list.error or type(list.result) ~= "table" then
    self:fail("MCP server %s: tools/list failed: %s", server, describe(err or list))
  end
  s.next_id, s.connected, s.tools = 2, true, list.result.tools or jarray()
  return s.tools, init.result
end

--- Calls `tool` of the SDK's MCP server with `arguments` (`tools/call`),
-- passing `tool_use_id` in `_meta` as the real CLI does.
-- @return the MCP result (`{content = ..., isError = ...}`), or nil and the
--   JSON-RPC error (a table) or the control error (a string)
function Cli:call_tool(server, tool, arguments, tool_use_id)
  local s = self:_server(server)
  local id = s.next_id
  s.next_id = id + 1
  local resp, err = self:mcp(server, { method = "tools/call", params = {
    name = tool, arguments = arguments or jobject(),
    _meta = { ["claudecode/toolUseId"] = tool_use_id or M.tool_use_id(), progressToken = id },
  }, jsonrpc = "2.0", id = id })
  if not resp then return nil, err end
  if resp.error then return nil, resp.error end
  return resp.result
end

--- Asks the SDK whether a tool may run (`can_use_tool`); `fields` override
-- (`tool_use_id`, `permission_suggestions`, `blocked_path`...). A "deny"
-- (or an error answer) is listed in the turn's `permission_denials`.
-- @return the decision (`{behavior = "allow", updatedInput = ...}` or
--   `{behavior = "deny", message = ...}`), or nil and the error message
function Cli:can_use_tool(tool_name, input, fields)
  input = input or jobject()
  local last = self.last_tool_use
  local tool_use_id = (fields and fields.tool_use_id)
    or (last and last.name == tool_name and last.id) or M.tool_use_id()
  local body, err = self:request("can_use_tool", merge({
    tool_name = tool_name, display_name = display_name(tool_name), input = input,
    permission_suggestions = jarray({ { type = "addRules",
      rules = jarray({ { toolName = tool_name } }), behavior = "allow",
      destination = "localSettings" } }),
    tool_use_id = tool_use_id,
  }, fields))
  if not body or body.behavior ~= "allow" then
    local d = self.turn.permission_denials
    d[#d + 1] = { tool_name = tool_name, tool_use_id = tool_use_id, tool_input = input }
  end
  return body, err
end

--- The hook callback ids the SDK registered in `initialize` for `event`
-- (and, for tool events, whose matcher matches `tool_name`).
function Cli:hooks(event, tool_name)
  local out = {}
  for _, h in ipairs(self.hook_callbacks or {}) do
    if h.event == event and matcher_matches(h.matcher, tool_name) then out[#out + 1] = h.id end
  end
  return out
end

--- Calls hook callback `callback_id` (`hook_callback`). The input gets the
-- fields every hook input has (`session_id`, `transcript_path`, `cwd`,
-- `prompt_id`, `permission_mode`, and `hook_event_name` from `initialize`).
-- @return the hook output, or nil and the error message
function Cli:hook(callback_id, input, tool_use_id)
  input = input or {}
  local event
  for _, h in ipairs(self.hook_callbacks or {}) do
    if h.id == callback_id then event = h.event end
  end
  local full = merge({
    session_id = self.session_id,
    transcript_path = fmt("%s/.claude/projects/fake/%s.jsonl", os.getenv("HOME") or "",
      self.session_id),
    cwd = self.cwd, prompt_id = self.turn.prompt_id, permission_mode = self.permission_mode,
    hook_event_name = event,
  }, input)
  return self:request("hook_callback", { callback_id = callback_id, input = full,
    tool_use_id = tool_use_id or input.tool_use_id or M.uuid() })
end

--- Runs every hook registered for `event` (matching `input.tool_name`), in
-- order; returns the list of their outputs (an error answer gives
-- `{error = message}`).
function Cli:run_hooks(event, input)
  input = merge({ hook_event_name = event }, input)
  local outs = {}
  for _, id in ipairs(self:hooks(event, input.tool_name)) do
    local out, err = self:hook(id, input)
    outs[#outs + 1] = out or { error = err }
  end
  return outs
end

---------------------------------------------------------------------------
-- Answering the SDK's control requests

-- (respond and respond_error are public: a misuse here blames the script's line)
local function request_id_of(request, fname)
  if type(request) == "string" then return request end
  if type(request) == "table" and request.request_id then return request.request_id end
  errors.misuse("bad argument #1 to '%s' (a control_request or its request_id expected, got "
    .. "%s)", fname, type(request))
end

--- Answers a control_request from the SDK with success and `body` (no
-- `response` key when `body` is nil, as for `interrupt`). Answering
-- `set_model` or `set_permission_mode` also changes the fake's state.
-- @function respond
Cli.respond = errors.public(function(self, request, body)
  local response = { subtype = "success", request_id = request_id_of(request, "respond") }
  if body ~= nil then response.response = body end
  if type(request) == "table" and type(request.request) == "table" then
    local r = request.request
    if r.subtype == "set_model" then
      self.model = (r.model == nil or r.model == null or r.model == "default")
        and M.default_model or r.model
    elseif r.subtype == "set_permission_mode" and type(r.mode) == "string" then
      self.permission_mode = r.mode
    end
  end
  return self:send({ type = "control_response", response = response })
end)

--- Answers a control_request from the SDK with an error.
-- @function respond_error
Cli.respond_error = errors.public(function(self, request, message)
  return self:send({ type = "control_response", response = {
    subtype = "error", request_id = request_id_of(request, "respond_error"),
    error = tostring(message) } })
end)

--- Answers a control_request as the real CLI would: `interrupt` and
-- `set_max_thinking_tokens` with success, `set_model` (after the replayed
-- user line), `set_permission_mode` (then a `system/status` line),
-- `mcp_status`, `get_binary_version`, `get_settings`, `initialize`;
-- anything else with "Unsupported control request subtype: X".
function Cli:answer(request)
  local r = type(request) == "table" and request.request or {}
  local sub = r.subtype
  if sub == "interrupt" or sub == "set_max_thinking_tokens" then
    return self:respond(request)
  elseif sub == "set_model" then
    local model = r.model
    if model == nil or model == null then model = "default" end
    self:user(fmt("<local-command-stdout>Set model to %s</local-command-stdout>", model),
      { isReplay = true })
    return self:respond(request)
  elseif sub == "set_permission_mode" then
    local sent = self:respond(request, { mode = r.mode })
    self:system("status", { status = null, permissionMode = r.mode })
    return sent
  elseif sub == "mcp_status" then
    local list = jarray()
    for name, s in pairs(self.servers) do
      if s.connected then
        list[#list + 1] = { name = name, status = "connected", scope = "dynamic",
          serverInfo = { name = name, version = "1.0.0" } }
      end
    end
    return self:respond(request, { mcpServers = list })
  elseif sub == "get_binary_version" then
    return self:respond(request, { version = M.version, buildTime = M.build_time })
  elseif sub == "get_settings" then
    return self:respond(request, { effective = jobject(), sources = jarray(),
      applied = { model = self.model, effort = null, ultracode = false } })
  elseif sub == "initialize" then
    self:_take_initialize(r)
    return self:respond(request, self:initialize_response())
  end
  return self:respond_error(request, "Unsupported control request subtype: " .. tostring(sub))
end


return {
  --- Adds the methods to `class`; `fake_cli` is the module (ids, version, helpers).
  install = function(class, fake_cli)
    M, display_name, matcher_matches = fake_cli, fake_cli.display_name, fake_cli.matcher_matches
    for k, v in pairs(Cli) do class[k] = v end
  end,
}
