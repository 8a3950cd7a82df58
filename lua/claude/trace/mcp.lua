--- MCP spans, by the OpenTelemetry conventions for MCP (`{mcp.method.name} {target}`, kind
-- SERVER on the server and CLIENT on the client, `mcp.*`, `jsonrpc.request.id`,
-- `gen_ai.tool.name`, `gen_ai.operation.name`), linked through the request's `_meta`
-- (`traceparent`, `tracestate`). Each traced path sits in front of the plain one and is put
-- there only while tracing is on (claude.trace.instrument; the router: when it is made).
-- @module claude.trace.mcp
local trace = require "claude.trace"
local call = require "claude.mcp.call"
local json = require "claude.json"

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

local function end_with(span, result)
  local kind, message = outcome(result)
  if kind then
    span:fail(message, kind)
    if kind ~= "tool_error" then span:set("rpc.response.status_code", kind) end
  end
  span:finish()
end

local open = trace._open

--- The links of a server span whose parent came in the request (`tp`): the context that was
-- current where it arrived (`ambient`: the session's turn, else the current span), as the
-- conventions ask ("link current ambient context"); nil when there is none.
function M.ambient_link(tp, ambient)
  if not tp then return nil end
  if ambient == nil then ambient = trace.current() end
  if not ambient or ambient == trace.NOOP then return nil end
  return { { trace_id = ambient.trace_id, span_id = ambient.span_id,
    tracestate = ambient.tracestate } }
end

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
    local ambient = parent and parent() or nil
    local span = open("tools/call " .. tostring(tool), "server", not tp and ambient or nil, tp,
      ts, {
        ["mcp.method.name"] = "tools/call", ["gen_ai.tool.name"] = tool,
        ["gen_ai.operation.name"] = "execute_tool", ["mcp.server.name"] = rec[SERVER],
        ["jsonrpc.request.id"] = id ~= nil and tostring(id) or nil,
        ["mcp.protocol.version"] = version, ["mcp.session.id"] = session,
        ["network.transport"] = transport }, tp and M.ambient_link(tp, ambient))
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

--- `router:handle_async` with a SERVER span around each request that is not a tool call
-- (initialize, a list, a read, a prompt, a completion, a ping: those answer through
-- `reply`); a tool call goes on to the traced entry. A message that came as JSON text (the
-- readers hand some so, for C to answer) is decoded first while tracing is on: the plain
-- path takes a decoded message the same.
function M.server_handle(handle, parent, transport)
  return function(self, name, message, reply, tag, auth, req)
    if not trace.enabled then return handle(self, name, message, reply, tag, auth, req) end
    if type(message) == "string" then
      local decoded = json.decode(message)
      if type(decoded) == "table" then message = decoded end
    end
    local method = type(message) == "table" and message.method
    if type(method) ~= "string" or method == "tools/call" or message.id == nil then
      return handle(self, name, message, reply, tag, auth, req)
    end
    local params = type(message.params) == "table" and message.params or {}
    local tp, ts = remote_context(params._meta)
    local target = method == "prompts/get" and params.name or nil
    local version, session
    if type(req) == "table" then version, session = req.protocol_version, req.session_id end
    if method == "initialize" then version = version or params.protocolVersion end
    local ambient = parent and parent() or nil
    local span = open(type(target) == "string" and method .. " " .. target or method, "server",
      not tp and ambient or nil, tp, ts, {
        ["mcp.method.name"] = method, ["mcp.server.name"] = name,
        ["jsonrpc.request.id"] = tostring(message.id),
        ["mcp.protocol.version"] = version, ["mcp.session.id"] = session,
        ["network.transport"] = transport,
        ["mcp.resource.uri"] = method == "resources/read" and params.uri or nil,
        ["gen_ai.prompt.name"] = target }, M.ambient_link(tp, ambient))
    return handle(self, name, message, function(t, response, ...)
      end_with(span, response)
      return reply(t, response, ...)
    end, tag, auth, req)
  end
end

-- The routers made while tracing was off (weak keys; the values their plain handle_async)
local untraced = setmetatable({}, { __mode = "k" })

local function install(router, handle_async)
  router.route = M.server_route(router.route, router._trace_parent, router._transport)
  router.handle_async = M.server_handle(handle_async, router._trace_parent, router._transport)
end

--- Puts a new router's traced paths (its entry `route`, `handle_async`) in front of its
-- plain ones: now when tracing is on, else when it turns on. Then whoever holds the old
-- entry (a reader's target) is pointed at the new one: `router._retarget(route)`, set by
-- that holder. The router's `_trace_parent` and `_transport` are the spans' (`server_route`).
-- @tparam claude.Router router
-- @tparam function handle_async the plain `Router.handle_async`
function M.router(router, handle_async)
  if trace.enabled then install(router, handle_async) else untraced[router] = handle_async end
end

trace.instrument(function()
  for router, handle_async in pairs(untraced) do
    untraced[router] = nil
    install(router, handle_async)
    if router._retarget then router._retarget(router.route) end
  end
end)

-- The client: a CLIENT span around a request, its context in the request's `_meta` (unless
-- the caller gave one).
-- The options that carry only a trace context (a table of this metatable): the client's
-- usual call keeps its way of writing the request (claude.mcp.client.call).
local TRACE_CONTEXT = trace._CONTEXT

local function traced_client(plain, method, target_of, fname)
  return function(self, a, b, c)
    if not trace.enabled then return plain(self, a, b, c) end
    local opts_index = method == "resources/read" and 2 or 3
    local opts = opts_index == 2 and b or c
    if opts ~= nil and type(opts) ~= "table" then return plain(self, a, b, c) end
    local target = target_of(a)
    local client = type(self) == "table" and self or {}
    local span = open(target and method .. " " .. target or method, "client", nil, nil, nil, {
      ["mcp.method.name"] = method,
      ["gen_ai.tool.name"] = method == "tools/call" and a or nil,
      ["gen_ai.operation.name"] = method == "tools/call" and "execute_tool" or nil,
      ["mcp.resource.uri"] = method == "resources/read" and a or nil,
      ["gen_ai.prompt.name"] = method == "prompts/get" and a or nil,
      ["mcp.server.name"] = client.name, ["mcp.protocol.version"] = client.protocol_version })
    if opts == nil then
      opts = setmetatable({ traceparent = span:traceparent(), tracestate = span.tracestate },
        TRACE_CONTEXT)
    elseif not opts.traceparent then
      local copy = {}
      for k, v in pairs(opts) do copy[k] = v end
      copy.traceparent, copy.tracestate = span:traceparent(), span.tracestate
      opts = copy
    end
    if opts_index == 2 then b = opts else c = opts end
    local ok, r, err, kind = pcall(plain, self, a, b, c)
    if not ok then
      span:fail(r, "error"):finish()
      error(r, 0)
    end
    if r == nil then
      span:fail(err, type(err) == "table" and err.code and tostring(err.code) or kind or "error")
      span:finish()
    else
      end_with(span, r)
    end
    return r, err, kind
  end, fname
end

--- A CLIENT span for a request the client makes itself (`initialize`), under the current
-- span, its context put in `params._meta`.
-- @tparam table client the claude.mcp client
-- @tparam string method
-- @tparam table params the request's params
-- @treturn claude.trace.Span
function M.client_span(client, method, params)
  local span = open(method, "client", nil, nil, nil, { ["mcp.method.name"] = method,
    ["mcp.server.name"] = client.name })
  local meta = type(params._meta) == "table" and params._meta or {}
  meta.traceparent, meta.tracestate = span:traceparent(), span.tracestate
  params._meta = meta
  return span
end

--- Ends the span of `client_span` with the request's outcome (`r, err, kind`).
function M.client_done(span, r, err, kind)
  if r == nil then
    span:fail(err, type(err) == "table" and err.code and tostring(err.code) or kind or "error")
  elseif type(r) == "table" then
    span:set("mcp.protocol.version", r.protocolVersion)
  end
  span:finish()
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
