--- MCP spans, by the OpenTelemetry conventions for MCP (`{mcp.method.name} {target}`, kind
-- SERVER on the server and CLIENT on the client, `mcp.*`, `jsonrpc.request.id`,
-- `gen_ai.tool.name`, `gen_ai.operation.name`), linked through the request's `_meta`
-- (`traceparent`, `tracestate`). Each traced path sits in front of the plain one and is put
-- there only while tracing is on (claude.trace.instrument; the router: when it is made).
-- @module claude.trace.mcp
local trace = require "claude.trace"
local call = require "claude.mcp.call"

local M = {}

local ID, TOOL, META, REPLY, REQ, SERVER = call.ID, call.TOOL, call.META, call.REPLY, call.REQ,
  call.SERVER

-- What a tool call's answer says of its outcome: nil when it succeeded, else the error's
-- type and message (a result with `isError`, or a JSON-RPC error response).
local function outcome(result)
  if type(result) ~= "table" then return nil end
  if result.isError == true then
    local c = type(result.content) == "table" and result.content[1]
    return "tool_error", type(c) == "table" and c.text or "the tool failed"
  end
  local e = result.error
  if type(e) == "table" then return tostring(e.code), e.message end
  return nil
end
M.outcome = outcome

local function request_attributes(span, method, id, req)
  span:set("mcp.method.name", method)
  if id ~= nil then span:set("jsonrpc.request.id", tostring(id)) end
  if type(req) == "table" then
    span:set("mcp.protocol.version", req.protocol_version)
    span:set("mcp.session.id", req.session_id)
  end
end

local function end_with(span, result)
  local kind, message = outcome(result)
  if kind then
    span:fail(message, kind)
    if kind ~= "tool_error" then span:set("rpc.response.status_code", kind) end
  end
  span:finish()
end

local open = trace._open

-- The parent of a server span: the request's `_meta` trace context (W3C), else `parent()`
-- (the session's turn), else the current span.
local function remote_context(meta)
  if type(meta) ~= "table" then return nil end
  local tp, ts = meta.traceparent, meta.tracestate
  if type(tp) ~= "string" then return nil end
  return tp, type(ts) == "string" and ts or nil
end

--- The router's entry with a SERVER span around each tool call: its parent the request's
-- `_meta` trace context, else `parent()` (the session's turn), else the current span. The
-- span is current in the tool's task. Its attributes are made by one constructor.
-- @tparam function route the plain entry (`router.route`)
-- @tparam[opt] function parent
-- @tparam[opt] string transport `network.transport` ("pipe", "tcp")
-- @treturn function
function M.server_route(route, parent, transport)
  return function(rec)
    if not trace.enabled then return route(rec) end
    local tool, id, req = rec[TOOL], rec[ID], rec[REQ]
    local tp, ts = remote_context(rec[META])
    local version, session
    if type(req) == "table" then version, session = req.protocol_version, req.session_id end
    local span = open("tools/call " .. tostring(tool), "server",
      not tp and parent and parent() or nil, tp, ts, {
        ["mcp.method.name"] = "tools/call", ["gen_ai.tool.name"] = tool,
        ["gen_ai.operation.name"] = "execute_tool", ["mcp.server.name"] = rec[SERVER],
        ["jsonrpc.request.id"] = id ~= nil and tostring(id) or nil,
        ["mcp.protocol.version"] = version, ["mcp.session.id"] = session,
        ["network.transport"] = transport })
    local reply = rec[REPLY]
    rec[REPLY] = function(tag, result, rid, text)
      if text then span:finish() else end_with(span, result) end
      return reply(tag, result, rid, text)
    end
    local previous = trace._pending(span)
    local ok, ctx = pcall(route, rec)
    trace._pending(previous)
    rec[REPLY] = reply -- (the record is the transport's, filled again by its next call)
    if not ok then
      span:fail(ctx, "error"):finish()
      error(ctx, 0)
    end
    local task = type(ctx) == "table" and ctx._task
    if task and task.co and not span.end_time then trace._adopt(span, task.co) end
    return ctx
  end
end

--- `router:handle_async` with a SERVER span around each request that is not a tool call (a
-- read, a prompt, a completion, a list: those answer through `reply`); a tool call goes on
-- to the traced entry.
function M.server_handle(handle, parent)
  return function(self, name, message, reply, tag, auth, req)
    local method = trace.enabled and type(message) == "table" and message.method
    if type(method) ~= "string" or method == "tools/call" or message.id == nil then
      return handle(self, name, message, reply, tag, auth, req)
    end
    local params = type(message.params) == "table" and message.params or {}
    local meta = type(params._meta) == "table" and params._meta or {}
    local target = params.name or (method == "resources/read" and "" or nil)
    local tp = type(meta.traceparent) == "string" and meta.traceparent or nil
    local span = trace.start(target and target ~= "" and method .. " " .. target or method,
      { kind = "server", traceparent = tp,
        tracestate = type(meta.tracestate) == "string" and meta.tracestate or nil,
        parent = not tp and parent and parent() or nil })
    request_attributes(span, method, message.id, req)
    span:set("mcp.server.name", name)
    if method == "resources/read" then span:set("mcp.resource.uri", params.uri) end
    if method == "prompts/get" then span:set("gen_ai.prompt.name", params.name) end
    return handle(self, name, message, function(t, response, ...)
      end_with(span, response)
      return reply(t, response, ...)
    end, tag, auth, req)
  end
end

-- The client: a CLIENT span around a request, its context in the request's `_meta` (unless
-- the caller gave one).
local function traced_client(plain, method, target_of, fname)
  return function(self, a, b, c)
    if not trace.enabled then return plain(self, a, b, c) end
    local opts_index = method == "resources/read" and 2 or 3
    local opts = opts_index == 2 and b or c
    if opts ~= nil and type(opts) ~= "table" then return plain(self, a, b, c) end
    local target = target_of(a)
    local span = trace.start(target and method .. " " .. target or method, { kind = "client" })
    span:set("mcp.method.name", method)
    if method == "tools/call" then
      span:set("gen_ai.tool.name", a):set("gen_ai.operation.name", "execute_tool")
    elseif method == "resources/read" then
      span:set("mcp.resource.uri", a)
    else
      span:set("gen_ai.prompt.name", a)
    end
    if type(self) == "table" then
      span:set("mcp.server.name", self.name)
      span:set("mcp.protocol.version", self.protocol_version)
    end
    if not (opts and opts.traceparent) then
      local copy = {}
      for k, v in pairs(opts or {}) do copy[k] = v end
      copy.traceparent, copy.tracestate = span:traceparent(), span.tracestate
      opts = copy
    end
    if opts_index == 2 then b = opts else c = opts end
    local r = table.pack(pcall(plain, self, a, b, c))
    if not r[1] then
      span:fail(r[2], "error"):finish()
      error(r[2], 0)
    end
    if r[2] == nil then
      local err, kind = r[3], r[4]
      span:fail(err, type(err) == "table" and err.code and tostring(err.code) or kind or "error")
      span:finish()
    else
      end_with(span, r[2])
    end
    return table.unpack(r, 2, r.n)
  end, fname
end

local function name_target(name) return type(name) == "string" and name or nil end
local function no_target() return nil end

--- Puts the traced `call_tool`, `read_resource` and `get_prompt` in front of `Client`'s.
function M.instrument_client(Client)
  if Client._traced then return end
  Client._traced = true
  Client.call_tool = traced_client(Client.call_tool, "tools/call", name_target, "call_tool")
  Client.read_resource = traced_client(Client.read_resource, "resources/read", no_target,
    "read_resource")
  Client.get_prompt = traced_client(Client.get_prompt, "prompts/get", name_target, "get_prompt")
end

return M
