--- The modern era of the MCP server side (protocol 2026-07-28 on), for one `claude.server`,
-- whatever carries the messages: no handshake, no session, every request carries its
-- client's capabilities and protocol version in its `_meta` envelope, and a request that
-- needs the client (an elicitation, sampling, the roots) ends with an `input_required`
-- result the client retries with the answers (multi round-trip requests).
-- (Over 600 lines: the envelope's checks, a request's context, the answers with their
-- stamps, discover and listen, and a connection's usual call share the request context and
-- the reply; apart they would reach into each other.)
--
--     local m = modern.new(server, { state = claude.mcp.server.state.new() })
--     local code, message, data = modern.check(msg, header_version)  -- the envelope ladder
--     m:handle(msg, out, auth)     -- one request or notification whose envelope was checked
--     m:set_server(new)            -- --watch: listens are told the lists changed
--     m:close(reason)              -- calls cancelled, listens ended
--
-- `out` is where the messages of one request go: `out:send(msg)` (its answer, its progress
-- and logs, the notifications of a listen), and optionally `out:text(id, text, ends)`, a
-- transport that writes a text result with its envelope itself (`ends`: the end of a text
-- result of this server, `claude.mcp.wire.text_end`). `out.listening` is
-- set to the subscription while the request is a listen (the transport keeps it open);
-- `out.own_ids` says the request ids are one client's (stdio), so that
-- `notifications/cancelled` can name them.
--
-- The tools, resources and prompts are served by the same router as in the legacy era
-- (`claude.mcp.router`); this module adds what the era changes: `server/discover`,
-- `subscriptions/listen`, the methods it removed (-32601), the wire stamps of each result
-- (`claude.mcp.wire`), logging at the request's own level (none when it names none), and
-- `ctx.elicit`, `ctx.sample`, `ctx.roots` and `ctx.input` as input requests. A tool resumes
-- by running again from its start with the answers: those of the earlier rounds come back in
-- the signed `requestState` (`claude.mcp.server.state`), so any process holding the key can
-- serve the retry. See docs/mcp-server.md.
-- @module claude.mcp.server.modern
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local wire = require "claude.mcp.wire"
local input = require "claude.mcp.input"
local router_mod = require "claude.mcp.router"
local call = require "claude.mcp.call"
local state_mod = require "claude.mcp.server.state"
local tasks_mod = require "claude.mcp.server.tasks"
local shared_mod = require "claude.mcp.server.shared"
local limits_mod = require "claude.mcp.server.limits"
local skills_mod = require "claude.mcp.server.skills"
local apps = require "claude.mcp.apps"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
-- (RMETA: META is era.META here)
local TOOL <const>, RMETA <const>, TOKEN <const>, TOOL_USE_ID <const> = 2, 4, 5, 6
local VERSION <const>, TAG <const>, SERVER <const>, REPLY <const> = 7, 8, 9, 10
local AUTH <const>, REQ <const> = 11, 12

local M = {}

local rpc_error, dispatch, jobject, jarray = core.jsonrpc_error, core.mcp_dispatch, json.object,
  json.array
local array_mt, getmetatable = json.array_mt, getmetatable
local is_unwind, stamp = input.is_unwind, wire.stamp
local envelope_meta = call.envelope_meta
local type, fmt, pairs, setmetatable = type, string.format, pairs, setmetatable

local META = era.META
local PV, CAPS, INFO, LEVEL, SUB = META.protocol_version, META.client_capabilities,
  META.client_info, META.log_level, META.subscription_id
local E = era.ERRORS
local LATEST = era.LATEST_MODERN

-- Severity of each MCP log level: a request's logLevel lets through what is at least as severe.
local SEVERITY = {}
for i, l in ipairs(core.LOG_LEVELS) do SEVERITY[l] = i end

---------------------------------------------------------------------------------------------
-- The envelope
---------------------------------------------------------------------------------------------

local usual_envelope = era.usual_envelope

--- The checks every modern request passes before it is served, in the order of the
-- specification's ladder: the envelope is there and names a protocol version (-32602), the
-- `MCP-Protocol-Version` header agrees with it (-32020, HTTP only: `header` is false over
-- stdio), the version is one we speak (-32022, data `{supported, requested}`), the client's
-- capabilities are there (-32602), the log level is one of MCP's.
-- @tparam table msg a decoded request (a table with a `method`)
-- @param header the `MCP-Protocol-Version` header (nil: absent), or false (no headers: stdio)
-- @return nil when the request may go on; else code, message, data
function M.check(msg, header)
  local params = msg.params
  local meta = type(params) == "table" and params._meta
  if type(meta) ~= "table" then
    return -32602, "Invalid params: the request is missing the per-request envelope (_meta) "
      .. "of protocol " .. era.MODERN .. " and later",
      { envelope = { missing = jarray { "_meta" } } }
  end
  local v, caps = meta[PV], meta[CAPS]
  -- the usual request first: the version we speak, in the header too, capabilities, no level
  if (header == false or header == v) and usual_envelope(meta) then return nil end
  if type(v) ~= "string" then
    return -32602, "Invalid params: the envelope (_meta) is missing '" .. PV .. "'",
      { envelope = { missing = jarray { PV } } }
  end
  if header ~= false and header ~= nil and header ~= v then
    return E.header_mismatch, fmt("Header mismatch: MCP-Protocol-Version says '%s', the "
      .. "envelope '%s'", header, v), { mismatch = { header = header, body = v } }
  end
  if not era.MODERN_SET[v] then
    return E.unsupported_version, fmt("Unsupported protocol version '%s' (supported: %s)", v,
      table.concat(era.MODERN_VERSIONS, ", ")),
      { supported = jarray(era.MODERN_VERSIONS), requested = v }
  end
  if header == nil then
    return E.header_mismatch, "Header mismatch: the MCP-Protocol-Version header is missing "
      .. "(the envelope says '" .. v .. "')", { mismatch = { header = json.null, body = v } }
  end
  if type(caps) ~= "table" or getmetatable(caps) == array_mt
      or (getmetatable(caps) == nil and caps[1] ~= nil) then
    return -32602, "Invalid params: the envelope (_meta) is missing '" .. CAPS .. "' (an object)",
      { envelope = { key = CAPS, problem = caps == nil and "missing" or "invalid" } }
  end
  local level = meta[LEVEL]
  if level ~= nil and not SEVERITY[level] then
    return -32602, "Invalid params: '" .. LEVEL .. "' must be one of "
      .. table.concat(core.LOG_LEVELS, ", "), { envelope = { key = LEVEL, problem = "invalid" } }
  end
  return nil
end

--- Is `msg` (a decoded message) of the modern era, by its body and the
-- `MCP-Protocol-Version` header (nil over stdio)? Body first: an envelope that claims a
-- revision of the modern era makes it modern; without one, only a header that names a modern
-- revision does (the request then fails the envelope check).
-- @param msg
-- @tparam[opt] string header
-- @treturn boolean
function M.is_modern(msg, header)
  local v = era.claimed(msg)
  if v ~= nil then return era.is_modern(v) end
  return header ~= nil and era.is_modern(header)
end

---------------------------------------------------------------------------------------------
-- A request's record (ctx._req): ours, made beside the client's params and never inside them
-- (a field the client sent is data, not our state): its envelope (`_meta`, the client's), the
-- `_out` its messages go to, its `_method`, the `name` or `uri` its requestState is bound to,
-- and what the server keeps while it runs (`may_task`, `tasks`, `task`, `answers`, `used`,
-- `asked`). The usual calls (Modern:call, Modern:caller) make no other table: their record is
-- the one they build from the values a reader took apart.
---------------------------------------------------------------------------------------------

local Req = { era = "modern", _method = "tools/call" }
Req.__index = function(r, k)
  local v = Req[k]
  if v ~= nil then return v end
  if k == "client_address" then -- (HTTP: the exchange's; not the envelope's)
    local out = rawget(r, "_out")
    return out and out.client
  end
  local meta = rawget(r, "_meta")
  if meta == nil then -- the envelope as its text (Modern:call), decoded when first read
    local text = rawget(r, "_meta_text")
    if text == nil then return nil end
    meta = envelope_meta(text, rawget(r, "_token"), rawget(r, "_tool_use_id"))
    rawset(r, "_meta", meta)
    if k == "_meta" then return meta end
  end
  if k == "client_capabilities" then return meta[CAPS] end
  if k == "protocol_version" then return meta[PV] end
  if k == "client_info" then return meta[INFO] end
  return nil
end

---------------------------------------------------------------------------------------------
-- Answers
---------------------------------------------------------------------------------------------

local Modern = { __name = "claude.mcp.ModernServer" }
Modern.__index = Modern
Modern.__tostring = function(m)
  return fmt("claude.mcp.ModernServer (%s)", m._server.name)
end

-- What a requestState is bound to: the method and the name (or uri) of a request's record.
local function bind_of(method, req)
  local name = rawget(req, "name") or rawget(req, "uri") or ""
  return method .. "\0" .. tostring(name)
end

-- An unwound request (claude.mcp.input) -> the response: input_required, or -32021.
local function unwound(self, req, u, id)
  if u.kind == "missing_capability" then
    local names = {}
    for k in pairs(u.required) do names[#names + 1] = k end
    table.sort(names)
    return rpc_error(id, E.missing_capability, "Missing required client capability: "
      .. table.concat(names, ", "), { requiredCapabilities = u.required })
  end
  local used = req.used or jobject()
  return { jsonrpc = "2.0", id = id, result = {
    resultType = "input_required", inputRequests = u.requests,
    requestState = self._state:seal(used, bind_of(req._method, req)),
    _meta = self._meta } }
end

-- reply of the router: a tool call's (req, result, id), or a whole response (req, response)
local function reply(self) return function(req, response, id, text)
  local out = req._out
  if id ~= nil then -- tools/call: a CallToolResult, its text, or an unwind
    if text or type(response) == "string" then
      if out.text then return out:text(id, response, self._text_end) end
      return out:send(wire.answer(id, response, true, self._meta))
    elseif is_unwind(response) then
      return out:send(unwound(self, req, response, id))
    end
    response.resultType = "complete"
    local m = response._meta
    if m == nil then response._meta = self._meta else stamp("tools/call", response, self._meta) end
    return out:send({ jsonrpc = "2.0", id = id, result = response })
  end
  local result = response.result
  if result ~= nil then
    if is_unwind(result) then return out:send(unwound(self, req, result, response.id)) end
    stamp(req._method, result, self._meta, self._server.cache)
  end
  return out:send(response)
end end

-- notifications of a request (progress, logs) go where its answer goes; a log only when the
-- request asked for logs, at its level or above
local function notify(_, msg, ctx)
  local req = ctx._req
  if msg.method == "notifications/message" then
    local level = req._meta[LEVEL]
    if level == nil or SEVERITY[msg.params.level] < SEVERITY[level] then return end
  end
  return req._out:send(msg)
end

-- ctx.input: the answers the retry carries (and those of the earlier rounds, from the state),
-- or the request unwinds asking for the rest
local function ask(ctx, requests)
  local req = ctx._req
  local answers, got, missing = req.answers, {}, nil
  for key, r in pairs(requests) do
    local a = answers and answers[key]
    if a ~= nil and input.valid(r.method, a) then
      got[key] = a
      local used = req.used
      if not used then
        used = {}
        req.used = used
      end
      used[key] = a
    else
      missing = missing or {}
      missing[key] = { method = r.method, params = r.params or jobject() }
    end
  end
  if not missing then return got end
  if req.task then return req.tasks:ask(req, requests, got) end -- a task waits for them
  local caps = req._meta[CAPS]
  for _, r in pairs(missing) do
    if not input.declared(caps, r.method) then
      input.unwind("missing_capability", { required = input.required(r.method, r.params) })
    end
  end
  input.unwind("input_required", { requests = missing })
end

-- ctx.elicit / ctx.sample / ctx.roots / ctx.request: one input request, keyed by its kind and
-- its number in the request (elicit-1, sample-2, ...); other methods cannot be asked
local function ask_one(ctx, method, params)
  local short = input.SHORT[method]
  if not short then
    local err = errors.new("unsupported", fmt("'%s': in protocol %s a server asks its client "
      .. "only for elicitation, sampling and roots", method, era.MODERN))
    return nil, err, err.kind
  end
  local req = ctx._req
  local n = (req.asked or 0) + 1
  req.asked = n
  local key = short .. "-" .. n
  return ask(ctx, { [key] = { method = method, params = params } })[key]
end

---------------------------------------------------------------------------------------------
-- server/discover and subscriptions/listen
---------------------------------------------------------------------------------------------

--- The server's capabilities as `initialize` and `server/discover` state them.
-- @treturn table
function Modern:capabilities()
  local _, response = dispatch(self._server, { jsonrpc = "2.0", id = 0, method = "initialize",
    params = { protocolVersion = era.LATEST_LEGACY } })
  local caps = response.result.capabilities
  local e
  for _, x in ipairs(self._extensions) do
    local c = x:capability()
    if c then
      e = e or jobject()
      e[x.id] = c
    end
  end
  caps.extensions = e
  return caps
end

local function discover(self, msg)
  local server = self._server
  -- the whole serverInfo (title, description, websiteUrl, icons) here; each result has the
  -- name and version alone
  local info = server.server_info
  return { jsonrpc = "2.0", id = msg.id, result = stamp("server/discover", {
    supportedVersions = jarray(era.MODERN_VERSIONS), capabilities = self:capabilities(),
    instructions = server.instructions, _meta = info and { [META.server_info] = info } },
    self._meta, server.cache) }
end

-- The filter keys of listen, per list of claude.mcp.tool, and the notification of each.
local FILTER = { tools = "toolsListChanged", resources = "resourcesListChanged",
  resource_templates = "resourcesListChanged", prompts = "promptsListChanged" }
local CHANGED = { toolsListChanged = "notifications/tools/list_changed",
  resourcesListChanged = "notifications/resources/list_changed",
  promptsListChanged = "notifications/prompts/list_changed" }

local function tagged(id, method, params)
  params = params or {}
  params._meta = { [SUB] = id }
  return { jsonrpc = "2.0", method = method, params = params }
end

-- The strings of a listen's list, once each: the set and the list kept; or nil, nil and why
-- it is past a bound.
local function distinct(list, limits, what)
  local why, bound, max = limits_mod.check_list(list, limits, what)
  if why then return nil, nil, why, bound, max end
  local set, kept = {}, jarray()
  for _, u in ipairs(list) do
    if type(u) == "string" and not set[u] then
      set[u] = true
      kept[#kept + 1] = u
    end
  end
  return set, kept
end

-- A listen's resource subscriptions (a set of URIs, or nil) began or ended: a remote server
-- mounted in `server` is told (claude.mcp.mount).
local function subscribed(server, uris, on)
  if not (uris and server._mounts) then return end
  local mount = require "claude.mcp.mount"
  for uri in pairs(uris) do mount.subscribed(server, uri, on) end
end

local function listen(self, msg, out, auth)
  local params = msg.params
  local want = type(params) == "table" and params.notifications
  if type(want) ~= "table" then
    return out:send(rpc_error(msg.id, -32602, "Invalid params: 'notifications' must be an "
      .. "object (toolsListChanged, promptsListChanged, resourcesListChanged, "
      .. "resourceSubscriptions)"))
  end
  local server, honoured, uris = self._server, jobject(), nil
  if server.list_changed ~= false then
    for _, k in ipairs { "toolsListChanged", "promptsListChanged", "resourcesListChanged" } do
      if want[k] == true then honoured[k] = true end
    end
  end
  -- what the listen asks us to remember is bounded (claude.mcp.server.limits); so are the
  -- listens of one client's connection (over HTTP each is a connection: max_connections)
  if out.own_ids then
    local n, most = 0, self._limits.max_listens
    for s in pairs(self._listens) do
      if s.out == out then n = n + 1 end
    end
    if n >= most then
      return out:send(limits_mod.refused(msg.id, fmt("Too many listens open (%d)", n),
        "max_listens", most))
    end
  end
  local list, ids = want.resourceSubscriptions, nil
  if type(list) == "table" and server.subscribe then
    local kept, why, bound, max
    uris, kept, why, bound, max = distinct(list, self._limits, "resourceSubscriptions")
    if why then return out:send(limits_mod.refused(msg.id, why, bound, max)) end
    honoured.resourceSubscriptions = kept
  end
  -- the tasks extension's filter: only the tasks named, only for a client that declared it
  if type(want.taskIds) == "table" and tasks_mod.declared(params._meta[CAPS]) then
    local kept, why, bound, max
    ids, kept, why, bound, max = distinct(want.taskIds, self._limits, "taskIds")
    if why then return out:send(limits_mod.refused(msg.id, why, bound, max)) end
    honoured.taskIds = kept
  end
  local sub = { id = msg.id, filter = honoured, uris = uris, out = out, task_ids = ids,
    principal = tasks_mod.owner(auth) }
  self._listens[sub] = true
  out.listening = sub
  subscribed(server, uris, true)
  out:send(tagged(msg.id, "notifications/subscriptions/acknowledged",
    { notifications = honoured }))
  return sub
end

--- End a listen (its client left it, or cancelled it): nothing more is sent to it.
-- @param sub what `out.listening` holds
function Modern:unlisten(sub)
  if self._listens[sub] then subscribed(self._server, sub.uris, false) end
  self._listens[sub] = nil
end

-- server:add / remove and resource_updated reach the listens that asked for them
local function watch(self, server)
  server._watchers[self] = function(_, what)
    self:changed(FILTER[what])
  end
  server._subscribers[self] = function(uri)
    self:updated(uri)
    self._shared:publish { kind = "updated", uri = uri }
  end
end

--- Tell the listens that subscribed to a resource that it was updated.
-- @tparam string uri
function Modern:updated(uri)
  for sub in pairs(self._listens) do
    if sub.uris and sub.uris[uri] then
      sub.out:send(tagged(sub.id, "notifications/resources/updated", { uri = uri }))
    end
  end
end

--- Tell the listens that asked for it that a list changed (and the other replicas', with a
-- shared store, unless `heard`: the change is another replica's).
-- @tparam string key `"toolsListChanged"`, `"promptsListChanged"` or `"resourcesListChanged"`
-- @tparam[opt] boolean heard
function Modern:changed(key, heard)
  local method = CHANGED[key]
  if not method or self._server.list_changed == false then return end
  if not heard then self._shared:publish { kind = "changed", key = key } end
  for sub in pairs(self._listens) do
    if sub.filter[key] then sub.out:send(tagged(sub.id, method)) end
  end
end

--- An event of another replica (claude.mcp.server.shared): to the listens that may hear it.
-- @tparam table e `{kind = "task", task =, principal =}`, `{kind = "changed", key =}` or
--   `{kind = "updated", uri =}`
function Modern:heard(e)
  local kind = e.kind
  if kind == "task" and type(e.task) == "table" and type(e.task.taskId) == "string" then
    local view = e.task
    view.principal, view.node = nil, nil
    self._tasks:deliver(view.taskId, e.principal, function()
      local t = {}
      for k, v in pairs(view) do t[k] = v end
      return t
    end)
  elseif kind == "changed" and CHANGED[e.key] then
    self:changed(e.key, true)
  elseif kind == "updated" and type(e.uri) == "string" then
    self:updated(e.uri)
  end
end

-- A method of the legacy era only: not found here (-32601).
local function removed(_, msg, out)
  out:send(rpc_error(msg.id, -32601, fmt("Method not found: '%s' is not in protocol %s",
    msg.method, era.MODERN)))
end

---------------------------------------------------------------------------------------------
-- The server
---------------------------------------------------------------------------------------------

--- A modern-era server for `server`.
-- @tparam claude.Server server
-- @tparam[opt] table opts `state` (a `claude.mcp.server.state`; default: one with this
--   process's key), `node` (this process's name behind a load balancer: the prefix of its
--   task ids), `limits` (the bounds of claude.mcp.server.limits; default: its defaults),
--   `shared` (what the replicas share, claude.mcp.server.shared; default: nothing),
--   `transport` (its spans' `network.transport`: "pipe" over stdio, "tcp" over HTTP),
--   `session` (the connection it serves alone, `ctx.session`: stdio; nil over HTTP)
-- @treturn claude.mcp.ModernServer
function M.new(server, opts)
  opts = opts or {}
  local shared = opts.shared or shared_mod.memory
  -- (closed is there from the start: every answer reads it, a miss would reach Modern)
  local self = setmetatable({ _server = server, _key = server.name, _listens = {},
    _state = opts.state or state_mod.new(), node = opts.node, closed = false,
    _limits = limits_mod.of(opts.limits), _shared = shared }, Modern)
  -- the extensions: each has an `id`, `capability()` (nil: not offered now) and `methods`
  self._tasks = tasks_mod.new(self, self._limits, shared)
  shared:attach(self)
  self._extensions = { self._tasks, skills_mod.new(self), apps.extension(self) }
  -- the methods served here and not by the router, in one table
  local special = { ["server/discover"] = function(m, msg, out) out:send(discover(m, msg)) end,
    ["subscriptions/listen"] = listen }
  for method in pairs(era.LEGACY_ONLY) do special[method] = removed end
  for _, e in ipairs(self._extensions) do
    for method, f in pairs(e.methods) do special[method] = f end
  end
  self._special = special
  self._router = router_mod.new({ [server.name] = server }, { ack = false, notify = notify,
    request = ask_one, input = ask, transport = opts.transport, session = opts.session,
    task = function(ctx) -- ctx.task(): the call goes on as a task, when its client may
      local req = ctx._req
      if req.task then return true end
      if not req.may_task then return false end
      self._tasks:start(req, ctx, ctx.auth)
      return true
    end })
  self._reply = reply(self)
  self:set_meta()
  watch(self, server)
  return self
end

--- Work out again what each result carries of the server (its name and version).
function Modern:set_meta()
  local server = self._server
  self._meta = wire.server_meta(server.name, server.version or "1.0.0")
  -- the end of a text result written by the transport: `}]`, then the stamps
  self._text_end = wire.text_end(self._meta)
end

--- Serve one message of the modern era whose envelope passed `check` (a request, or a
-- notification). The answer and the request's notifications go to `out.send`.
-- @tparam table msg
-- @tparam table out
-- @tparam[opt] table auth the request's verified token (ctx.auth)
-- @return the request's context while it runs (a transport may cancel it:
--   `m:cancel(ctx)`), or nil
function Modern:handle(msg, out, auth)
  local method, id = msg.method, msg.id
  if id == nil then -- a notification: only a cancellation means something here
    if method == "notifications/cancelled" then
      local p = msg.params
      local rid = type(p) == "table" and p.requestId
      -- only where ids are the client's own (stdio): over HTTP the router is shared by
      -- every client, and a client cancels by leaving its request
      if rid ~= nil and out.own_ids then
        for sub in pairs(self._listens) do
          if sub.id == rid and sub.out == out then self._listens[sub] = nil end
        end
        self._router:handle_async(self._key, msg, self._reply, nil, auth)
      end
    end
    return nil
  end
  -- discover, listen, the extensions' methods and those this era removed; through the
  -- server's middleware when one wraps them (claude.mcp.middleware.run)
  local special = self._special[method]
  local params = msg.params
  if special then
    if self._server.middleware and special ~= removed then
      local req = setmetatable({ _meta = params._meta, _out = out, _method = method }, Req)
      local ctx = router_mod.middleware_run().around(self._router, self._server, self._key,
        msg, auth, req, out, function(m, o) return special(self, m, o, auth) end)
      if ctx ~= false then return ctx end
    end
    special(self, msg, out, auth)
    return nil
  end
  local req = setmetatable({ _meta = params._meta, _out = out, _method = method,
    name = rawget(params, "name"), uri = rawget(params, "uri") }, Req)
  if method == "tools/call" then
    local t = self._server.tools[req.name]
    if t and t.task then
      local refusal = self._tasks:check_call(t, req, id, auth)
      if refusal then
        out:send(refusal)
        return nil
      end
    end
  end
  local state, responses = rawget(params, "requestState"), rawget(params, "inputResponses")
  if state ~= nil or responses ~= nil then
    local answers
    if state ~= nil then
      local why
      answers, why = self._state:open(state, bind_of(method, req))
      if answers == nil or type(answers) ~= "table" then
        out:send(rpc_error(id, -32602, "Invalid or expired requestState ("
          .. tostring(why or "not an object") .. ")", { reason = "invalid_request_state" }))
        return nil
      end
    end
    if type(responses) == "table" then
      answers = answers or {}
      for k, v in pairs(responses) do answers[k] = v end
    end
    req.answers = answers
  end
  local ctx = self._router:handle_async(self._key, msg, self._reply, req, auth, req)
  -- a call that may be a task and waits becomes one (claude.mcp.server.tasks)
  if ctx and rawget(req, "may_task") and not rawget(req, "task") then
    self._tasks:start(req, ctx, auth)
  end
  return ctx
end

-- The reply of a connection's usual call (Modern:caller) to `out`, or a text result to
-- `write`: its tag is the tool's name, and the request's record is made only if the answer
-- needs it (anything but a text result written by the transport).
local function call_reply(self, out, write)
  return function(name, response, id, text)
    if text and write then
      if self.closed then return nil end
      return write(id, response, id, self._text_end, true)
    end
    return self._reply(setmetatable({ name = name, _out = out }, Req), response, id, text)
  end
end

--- The `call` of a connection pinned to this era, as a function of the call record alone
-- (`Conn:call`'s, or a reader's target: claude.mcp.call), whose answers go to `out`: the
-- usual call (the envelope of the version we speak as its text, a tool that is no task and
-- cannot see its ctx) goes straight to the router with the connection's own request record;
-- any other to `fallback(rec)`. A text result is written by `write`, when given: the
-- transport's `send_result` (`claude.mcp.server.connection`), called as
-- `write(id, text, id, ends, true)` until this server closes. (The connection drops it
-- when it closes.)
-- @tparam table out
-- @tparam function fallback
-- @tparam[opt] function write
-- @treturn function
function Modern:caller(out, fallback, write)
  local router = self._router
  local route, by_name, answer = router.route, router.by_name, call_reply(self, out, write)
  local req = setmetatable({ _out = out }, Req)
  return function(rec)
    if rec[VERSION] == LATEST then
      local key, name = self._key, rec[TOOL]
      -- the router's word (its limits' `usual`): every call of the tool is the usual call,
      -- so one request record serves them all (nothing of the tool can reach it); a tool
      -- not there yet goes the other way, whose `route` works its limits out
      local per = by_name[key]
      local l = per and per[name]
      if l and l.usual then
        -- (a record that served this connection last holds its values still)
        if rec[REPLY] ~= answer then rec[SERVER], rec[REPLY], rec[REQ] = key, answer, req end
        rec[TAG] = name
        return route(rec, l)
      end
    end
    return fallback(rec)
  end
end

--- `handle` of the `tools/call` in call record `rec` (`claude.mcp.call`), whose envelope
-- passed `check` (`claude.mcp.call.usual_modern`): the same answer, with no message table
-- made for it. The request's record keeps the envelope's text, decoded when something reads
-- it.
-- @tparam table rec
-- @tparam table out
-- @return as `handle`
function Modern:call(rec, out)
  local name, meta = rec[TOOL], rec[RMETA]
  local t = self._server.tools[name]
  if t and t.task then -- the tasks extension's checks: handle's way
    return self:handle(call.message(rec), out, rec[AUTH])
  end
  local req
  if type(meta) == "string" then
    req = setmetatable({ name = name, _meta_text = meta, _token = rec[TOKEN],
      _tool_use_id = rec[TOOL_USE_ID], _out = out }, Req)
  else
    req = setmetatable({ name = name, _meta = meta, _out = out }, Req)
  end
  rec[SERVER], rec[REPLY], rec[TAG], rec[REQ] = self._key, self._reply, req, req
  return self._router.route(rec)
end

--- Cancel a request in flight (its client left); its answer is dropped by the transport.
-- @param ctx what `handle` returned
-- @tparam[opt] string reason
function Modern:cancel(ctx, reason)
  return self._router:cancel_request(ctx, reason)
end

--- Serve another server from now on (the tools file was reloaded): calls in flight finish
-- on the old one; the listens are told the lists changed.
-- @tparam claude.Server server
function Modern:set_server(server)
  local old = self._server
  if old == server then return end
  old._watchers[self], old._subscribers[self] = nil, nil
  self._router:set_server(self._key, nil)
  self._server, self._key = server, server.name
  self._router:set_server(self._key, server)
  self:set_meta()
  watch(self, server)
  for _, key in ipairs { "toolsListChanged", "resourcesListChanged", "promptsListChanged" } do
    self:changed(key)
  end
end

--- The server served.
-- @treturn claude.Server
function Modern:server()
  return self._server
end

--- Requests in flight.
-- @treturn integer
function Modern:pending()
  return self._router:pending()
end

--- The listens open, as a list of `{id =, out =}`.
-- @treturn table
function Modern:listens()
  local list = {}
  for sub in pairs(self._listens) do list[#list + 1] = sub end
  return list
end

--- Stop: calls in flight are cancelled, listens end (each with its result, as a graceful
-- end), the server forgets this one. Idempotent.
-- @tparam[opt] string reason
function Modern:close(reason)
  if self.closed then return end
  self.closed = true
  self._shared:attach(nil)
  local server = self._server
  server._watchers[self], server._subscribers[self] = nil, nil
  self._router:cancel_all(reason or "server closed")
  for sub in pairs(self._listens) do
    self._listens[sub] = nil
    subscribed(server, sub.uris, false)
    sub.out:send({ jsonrpc = "2.0", id = sub.id, result = { resultType = "complete",
      _meta = { [SUB] = sub.id } } })
  end
end

M.ModernServer = Modern
return M
