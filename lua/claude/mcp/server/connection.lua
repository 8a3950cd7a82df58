--- One MCP client connection to a `claude.server`: the whole server side of the protocol,
-- whatever carries the messages (stdio, one Streamable HTTP session, a test).
--
--     local connection = require "claude.mcp.server.connection"
--     local conn = connection.new{
--       server = srv,                         -- a claude.server
--       send = function(msg, related_id) end, -- one JSON-RPC message (a table) out
--       send_result = nil,                    -- optional fast path, see below
--       stateless = false,                    -- no initialize needed, no requests to the client
--       on_close = function(reason) end,
--     }
--     conn:receive(msg, auth)            -- one decoded JSON-RPC message, or a batch (a list);
--                                        -- auth: the request's verified token (ctx.auth)
--     conn:receive_invalid(err, line)    -- a line/body that is not JSON: -32700, id null
--     conn:receive_oversized(err)        -- a message over the transport's limit: -32600, id null
--     conn:close(reason)                 -- cancels the calls in flight, drops their answers,
--                                        -- fails the pending requests to the client
--     conn.era, conn.initialized, conn.protocol_version, conn.client_info,
--     conn.client_capabilities, conn.log_level, conn.closed
--     conn:pending()                     -- requests being served
--     conn:set_server(srv)               -- serve another server from now on (--watch)
--
-- `send(msg, related_id)`: `related_id` is the id of the inbound request the message belongs
-- to (its answer, its progress and log notifications, the requests to the client made while
-- serving it), or nil for messages of no request (list_changed, resources/updated, and the
-- answer to a message without a valid id). A transport that routes answers per request (a
-- Streamable HTTP POST) uses it; stdio ignores it. `send` returns true, or nil, err.
--
-- `send_result(id, result, related_id, ends, text)`, when given, sends a `tools/call`
-- answer: `result` is the CallToolResult table, or a string standing for `{content = {{type =
-- "text", text = result}}}` (the tool returned a string or a number; `text` is then true),
-- so that a transport writes the answer around its values (claude.mcp.wire's pieces: stdio's
-- `stream:write_pieces`, HTTP's `wire.answer_text`) and builds no table; `ends` is the end of
-- a text result of the modern era (`wire.text_end`), nil in the legacy era. Without it the
-- connection builds the response (`wire.answer`) and calls `send`.
--
-- Server-level changes reach every live connection of the server: `server:add(item)` and
-- `server:remove(name)` send `notifications/{tools,resources,prompts}/list_changed`
-- (unless the server was made with `list_changed = false`), `server:resource_updated(uri)` sends
-- `notifications/resources/updated` to the connections subscribed to `uri`.
--
-- Two protocol eras (claude.mcp.era), pinned by the first request: `initialize` (or any
-- request without an envelope) makes the connection legacy; a request whose `_meta` envelope
-- claims a modern revision makes it modern, served by `claude.mcp.server.modern` (a
-- `server/discover` is answered without pinning, so a client may still fall back to
-- `initialize`). `conn.era` says which (nil until pinned).
--
-- Legacy: before `initialize` only `initialize` and `ping` are served; any other request gets
-- an error at once (-32600), so a client probing with a method of a later protocol falls
-- back without a timeout. Requests to the client (`ctx.sample`, `ctx.elicit`, `ctx.roots`,
-- `ctx.request`) go through a `claude.rpc` peer and wait in the tool's task. Modern: they
-- become `input_required` results.
-- @module claude.mcp.server.connection
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local router_mod = require "claude.mcp.router"
local content = require "claude.mcp.content"
local tool = require "claude.mcp.tool"
local era = require "claude.mcp.era"
local apps = require "claude.mcp.apps"
local limits_mod = require "claude.mcp.server.limits"
local call = require "claude.mcp.call"
local wire = require "claude.mcp.wire"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local TAG <const>, SERVER <const>, REPLY <const> = 8, 9, 10
local AUTH <const>, REQ <const> = 11, 12

local M = {}

-- The modern era's server (with its tasks, skills and requestState), loaded by the first
-- message of that era: a legacy client's start-up does not wait for it.
local modern_mod
local function modern()
  modern_mod = modern_mod or require "claude.mcp.server.modern"
  return modern_mod
end

local rpc_error, null, jobject = core.jsonrpc_error, json.null, json.object
local usual_envelope, usual_modern = era.usual_envelope, call.usual_modern
local type, fmt = type, string.format
local misuse, typename = errors.misuse, content.typename

-- Severity of each MCP log level (logging/setLevel filters below it).
local SEVERITY = {}
for i, l in ipairs(core.LOG_LEVELS) do SEVERITY[l] = i end

-- Which client capability each request to the client needs.
local NEEDS = { ["sampling/createMessage"] = "sampling", ["elicitation/create"] = "elicitation",
  ["roots/list"] = "roots" }

local INVALID_REQUEST, PARSE_ERROR = -32600, -32700

local listen -- (self, server)

local Conn = { __name = "claude.mcp.Connection" }
Conn.__index = Conn
Conn.__tostring = function(c)
  return fmt("claude.mcp.Connection (%s, %s)", c._server.name,
    c.closed and "closed" or c.initialized and ("protocol " .. c.protocol_version)
      or "not initialized")
end

local function valid_id(id)
  local t = type(id)
  return t == "string" or t == "number"
end

local function out(self, msg, related)
  if self.closed then return nil end
  return self._send(msg, related)
end

-- notifications from a request's ctx (progress, log), filtered by the log level
local function notify(self, _, msg, ctx)
  if msg.method == "notifications/message" then
    local level = self.log_level
    if level and SEVERITY[msg.params.level] < SEVERITY[level] then return end
  end
  return out(self, msg, ctx and ctx.request_id)
end

-- The connection's JSON-RPC peer, for its requests to the client (sampling, elicitation,
-- roots) and their answers: made by the first of them, so that a connection whose tools
-- never ask does not load claude.rpc at start-up.
local function peer(self)
  local p = self._peer
  if p then return p end
  local rpc = require "claude.rpc"
  p = rpc.new {
    codec = rpc.jsonrpc, name = "client", timeout = self._peer_timeout,
    send = function(msg)
      local related = self._related
      self._related = nil
      local ok, err = out(self, msg, related)
      if ok == nil and not self.closed then return nil, err end
      return true
    end,
  }
  self._peer = p
  return p
end

-- A request to the client from a tool's task: waits for the answer.
local function client_request(self, ctx, method, params, timeout)
  if self.closed then return errors.fail("closed", "the client connection is closed") end
  if self.stateless then
    return errors.fail("unsupported", fmt("'%s': a stateless server cannot send requests "
      .. "to the client", method))
  end
  local need = NEEDS[method]
  local caps = self.client_capabilities
  if need and not (type(caps) == "table" and caps[need] ~= nil and caps[need] ~= null) then
    return errors.fail("unsupported", fmt("'%s': the client does not support %s", method,
      need))
  end
  -- the peer sends synchronously inside request(): the message is sent with this id
  self._related = ctx.request_id
  local r, err, kind = peer(self):request(method, params, timeout)
  return r, err, kind
end

local NEW_OPTIONS = { server = 1, send = 1, send_result = 1, stateless = 1, on_close = 1,
  request_timeout = 1, close_stream = 1, state = 1, limits = 1, flush = 1, record = 1,
  bind_calls = 1, transport = 1, session = 1, client_address = 1 }

-- The ids of the connections that name none of their own (stdio): one process, one counter.
local connections = 0

--- Make a connection (see the top of this file).
-- @tparam table opts `server`, `send`, `send_result`, `stateless`, `on_close`, `state` (the
--   `claude.mcp.server.state` sealing the modern era's `requestState`),
--   `request_timeout` (seconds a request to the client may take; default 60, false: none),
--   `close_stream` (`function(request_id)`: the transport ends that request's stream, for
--   `ctx.close_stream()`; returns true when it did), `limits` (what a client may ask us to
--   remember, claude.mcp.server.limits; default: its defaults), `flush` (`function()`: a
--   transport that coalesces its writes sends them now; called after the `initialize`
--   answer, so that it leaves before a request of the same read can stall the loop),
--   `record` and `bind_calls` (`function(target)`): the call record the transport's reader
--   fills (claude.mcp.call) and how the reader is pointed at `target(record)`, the function
--   that serves this connection's calls once its era is pinned (nil: the reader hands its
--   calls to `call` again), so that they skip `call`; `transport` (its spans'
--   `network.transport` when traced: "pipe" over stdio, "tcp" over HTTP); `session` (the id
--   of the connection's session, `ctx.session`: legacy HTTP's `Mcp-Session-Id`; default: one
--   made for the connection, none when `stateless`) and `client_address` (the client's
--   network address, `ctx.client_address`)
-- @treturn claude.mcp.Connection
-- @function new
M.new = errors.public(function(opts)
  errors.check(opts, 1, "new", "table")
  errors.check_fields(opts, NEW_OPTIONS, "new")
  if not tool.is_server(opts.server) then
    misuse("bad field 'server' to 'new' (claude.Server expected, got %s)",
      typename(opts.server))
  end
  for _, f in ipairs { "send", "send_result", "on_close" } do
    local v = opts[f]
    if (v ~= nil or f == "send") and type(v) ~= "function" then
      misuse("bad field '%s' to 'new' (function expected, got %s)", f, typename(v))
    end
  end
  local session = opts.session
  if session == nil and not opts.stateless then
    connections = connections + 1
    session = "connection-" .. connections
  end
  local self = setmetatable({
    stateless = opts.stateless and true or false,
    initialized = opts.stateless and true or false,
    closed = false, subscriptions = {},
    _server = opts.server, _key = opts.server.name, _send = opts.send,
    _send_result = opts.send_result, _on_close = opts.on_close, _related = nil, _peer = false,
    _state = opts.state, _modern = false, _limits = limits_mod.of(opts.limits), nsubs = 0,
    _flush = opts.flush, _record = opts.record, _bind = opts.bind_calls,
    -- what the tools' ctx reads of the client (claude.mcp.router), filled by initialize
    _req = { era = "legacy", client_address = opts.client_address }, _session = session,
  }, Conn)
  self._transport = opts.transport
  self._router = router_mod.new({ [self._key] = opts.server }, {
    ack = false, transport = opts.transport, session = session,
    notify = function(name, msg, ctx) return notify(self, name, msg, ctx) end,
    request = function(ctx, method, params, timeout)
      return client_request(self, ctx, method, params, timeout)
    end,
    -- ctx.close_stream(): the transport ends the stream of the request (HTTP polling)
    close_stream = opts.close_stream and function(ctx)
      return opts.close_stream(ctx.request_id)
    end,
  })
  self._peer_timeout = opts.request_timeout == nil and 60 or opts.request_timeout
  -- answers of the router: a tool call's (tag = id, result, id) or a whole response
  local send_result = opts.send_result
  self._reply = function(tag, response, id, text)
    if self.closed then return end
    if send_result then
      if text then return send_result(id, response, tag, nil, true) end
      if id ~= nil then return send_result(id, response, tag) end
    end
    if id == nil then return self._send(response, tag) end
    return self._send(wire.answer(id, response, text), tag)
  end
  listen(self, opts.server)
  return self
end)

-- Which notification a change of each list makes (the lists claude.mcp.tool names).
local CHANGED = { tools = "notifications/tools/list_changed",
  resources = "notifications/resources/list_changed",
  resource_templates = "notifications/resources/list_changed",
  prompts = "notifications/prompts/list_changed" }

-- Registers the connection with the server: list changes (server._watchers, shared with the
-- sessions serving it) and resource updates (server._subscribers). Both are weak-keyed.
listen = function(self, server)
  server._watchers[self] = function(_, what) self:server_event("list_changed", CHANGED[what]) end
  server._subscribers[self] = function(uri) self:server_event("updated", uri) end
end

local function unlisten(self, server)
  server._watchers[self] = nil
  server._subscribers[self] = nil
  if server._mounts then -- its subscriptions end (a remote mounted there is told)
    for uri in pairs(self.subscriptions) do
      require("claude.mcp.mount").subscribed(server, uri, false)
    end
  end
end

-- The few methods the connection keeps state for; everything else is the router's.
local function initialize(self, msg, id)
  local response
  self._router:handle_async(self._key, msg, function(_, r) response = r end)
  local result = response.result
  if result then
    local params = msg.params
    apps.declare(self._server, result.capabilities) -- MCP Apps, when the server has views
    self.initialized = true
    self.era = "legacy"
    self.protocol_version = result.protocolVersion
    self.client_info = params and params.clientInfo
    self.client_capabilities = params and params.capabilities
    local req = self._req
    req.protocol_version, req.client_info, req.client_capabilities = self.protocol_version,
      self.client_info, self.client_capabilities
    -- the reader's calls go to the router straight (Conn:call's legacy way)
    local rec, bind = self._record, self._bind
    if rec and bind then
      rec[SERVER], rec[REPLY], rec[TAG], rec[REQ] = self._key, self._reply, nil, req
      bind(self._router.route)
      -- (tracing turned on later: the reader's target is the traced entry, unless the era
      -- moved on to its modern server's, which reads the router's entry at each call)
      self._router._retarget = function(route)
        if self.era ~= "modern" and not self.closed then bind(route) end
      end
    end
  end
  local ok, err = out(self, response, id)
  -- (the client waits for this answer alone: it goes now, whatever the next line does)
  if self._flush then self._flush() end
  return ok, err
end

-- (the router answers it, through the server's middleware when one wraps it: maybe later)
local function set_level(self, msg, id, auth)
  self._router:handle_async(self._key, msg, function(_, response)
    if response.result then self.log_level = msg.params.level end
    return out(self, response, id)
  end, nil, auth, self._req)
  return true
end

-- The answer to resources/subscribe (`on`) or unsubscribe.
local function subscription(self, msg, id, on)
  local params = msg.params
  local uri = type(params) == "table" and params.uri
  if type(uri) ~= "string" then
    return rpc_error(id, -32602, "Invalid params: 'uri' must be a string")
  end
  -- what a session asks us to remember is bounded (claude.mcp.server.limits)
  local l, subs = self._limits, self.subscriptions
  if on and not subs[uri] then
    local why, bound, max = limits_mod.check_list({ uri }, l, "uri")
    if not why and self.nsubs >= l.max_subscriptions then
      why, bound, max = "Invalid params: too many subscriptions", "max_subscriptions",
        l.max_subscriptions
    end
    if why then return limits_mod.refused(id, why, bound, max) end
    self.nsubs = self.nsubs + 1
  elseif not on and subs[uri] then
    self.nsubs = self.nsubs - 1
  end
  local was = subs[uri]
  subs[uri] = on or nil
  local server = self._server
  if server._mounts and (was ~= nil) ~= on then -- a remote mounted there is told
    require("claude.mcp.mount").subscribed(server, uri, on)
  end
  return { jsonrpc = "2.0", id = id, result = jobject() }
end

-- A request the connection answers itself, through the server's middleware when one wraps it
-- (claude.mcp.middleware.run): `answer(msg)` gives its response.
local function own(self, msg, id, auth, answer)
  if self._server.middleware then
    local started = router_mod.middleware_run().around(self._router, self._server,
      self._key, msg, auth, self._req, { send = function(_, r) return out(self, r, id) end },
      function(m, o) return o:send(answer(m)) end)
    if started ~= false then return true end
  end
  return out(self, answer(msg), id)
end

local function subscribe(self, msg, id, on, auth)
  return own(self, msg, id, auth, function(m) return subscription(self, m, id, on) end)
end

-- The modern era's server of this connection, made on its first modern request; its `out`
-- is the connection's (ids are this client's own: a cancellation may name them).
local function modern_of(self)
  local m = self._modern
  if m then return m end
  m = modern().new(self._server, { state = self._state, limits = self._limits,
    transport = self._transport, session = self._session })
  local send_result = self._send_result
  self._mout = { own_ids = true,
    send = function(_, msg) return out(self, msg, msg.id) end,
    text = send_result and function(_, id, text, ends)
      if self.closed then return nil end
      return send_result(id, text, id, ends, true)
    end }
  self._modern = m
  return m
end

-- A message of the modern era (its envelope claims a modern revision, or the connection is
-- pinned modern).
local function receive_modern(self, msg, auth)
  local id, method = msg.id, msg.method
  if method == nil then return true end -- an answer: this era sends no request to the client
  if id ~= nil then
    -- the usual request (the version we speak, capabilities, no log level) without a call
    local params = msg.params
    local code, message, data
    if not usual_envelope(type(params) == "table" and params._meta) then
      code, message, data = modern().check(msg, false)
    end
    if code then
      if method == "initialize" and era.claimed(msg) == nil then
        code, message, data = era.ERRORS.unsupported_version, "Unsupported protocol version: "
          .. "this connection speaks " .. era.LATEST_MODERN .. " (no initialize)",
          { supported = json.array(era.MODERN_VERSIONS),
            requested = type(msg.params) == "table" and msg.params.protocolVersion or null }
      end
      return out(self, rpc_error(id, code, message, data), id)
    end
    if self.era ~= "modern" and method ~= "server/discover" then
      self.era = "modern"
      -- from now on the usual tools/call a reader took apart is the modern server's at once
      local function serve_calls() -- (again when tracing turns on: around the traced entry)
        local target = modern_of(self):caller(self._mout, function(rec)
          return Conn.call(self, rec)
        end, self._send_result)
        self.call = function(_, rec) return target(rec) end
        if self._record and self._bind then self._bind(target) end
      end
      serve_calls()
      modern_of(self)._router._retarget = function() if not self.closed then serve_calls() end end
    end
  end
  return (self._modern or modern_of(self)):handle(msg, self._mout, auth)
end

local function receive_one(self, msg, auth)
  if type(msg) ~= "table" then
    return out(self, rpc_error(null, INVALID_REQUEST, "Invalid Request: a JSON-RPC message "
      .. "must be an object, got " .. typename(msg)))
  end
  if self.era == "modern" then return receive_modern(self, msg, auth) end
  local method, id = msg.method, msg.id
  if method == nil then
    -- an answer to one of our requests
    if id ~= nil and (msg.result ~= nil or msg.error ~= nil) then
      peer(self):receive(msg)
      return true
    end
  elseif id ~= nil and valid_id(id) then
    if method == "initialize" then return initialize(self, msg, id) end
    if not self.initialized and modern().is_modern(msg) then
      return receive_modern(self, msg, auth)
    end
    if not self.initialized and method ~= "ping" then
      return out(self, rpc_error(id, INVALID_REQUEST, fmt("Invalid Request: '%s' before "
        .. "'initialize' (the server is not initialized)", tostring(method))), id)
    end
    if method == "logging/setLevel" then return set_level(self, msg, id, auth) end
    if self._server.subscribe then
      if method == "resources/subscribe" then return subscribe(self, msg, id, true, auth) end
      if method == "resources/unsubscribe" then return subscribe(self, msg, id, false, auth) end
    end
    return self._router:handle_async(self._key, msg, self._reply, id, auth, self._req)
  end
  -- notifications (cancellation among them) and invalid messages: the router decides
  return self._router:handle_async(self._key, msg, self._reply, valid_id(id) and id or nil,
    auth)
end

--- Handle one decoded JSON-RPC message from the client (or a batch: a list of them, each
-- handled as if it came alone). Never raises for bad input: it is answered.
-- @param msg
-- @tparam[opt] table auth what the transport verified of the request's bearer token
--   (`claude.mcp.server.auth`): the requests' `ctx.auth`
function Conn:receive(msg, auth)
  if self.closed then return end
  -- a connection pinned to the modern era: one message (no batch in that era)
  if self.era == "modern" and type(msg) == "table" and msg.jsonrpc ~= nil then
    return receive_modern(self, msg, auth)
  end
  if type(msg) == "table" and msg[1] ~= nil and msg.jsonrpc == nil then
    if self.era == "modern" then
      return out(self, rpc_error(null, INVALID_REQUEST, "Invalid Request: no batch in "
        .. "protocol " .. era.MODERN .. " and later"))
    end
    for i = 1, #msg do receive_one(self, msg[i], auth) end
    return
  end
  if type(msg) == "table" and #msg == 0 and json.is_array(msg) then
    out(self, rpc_error(null, INVALID_REQUEST, "Invalid Request: an empty batch"))
    return
  end
  receive_one(self, msg, auth)
end

--- A `tools/call` a reader took apart into a call record (`claude.mcp.call`: a stream's
-- envelope reader, the HTTP transport's): the connection's answer to the message it was. A
-- connection of the legacy era hands the record to the router; one pinned to the modern era,
-- with the usual envelope, to its modern server; any other call is the message it was
-- (`receive`). (A connection of the modern era has a `call` of its own:
-- `claude.mcp.server.modern`'s `caller`, which comes here for what it does not serve.)
-- @tparam table rec the call record; `auth` is the request's verified token
-- @return the call's context while it runs, else nil
function Conn:call(rec)
  local pinned = not self.closed and self.era
  if pinned == "legacy" then
    -- (the answer needs no tag: its id says which request it ends; a record that served
    -- this connection last holds its values still)
    local reply = self._reply
    if rec[REPLY] ~= reply then
      rec[SERVER], rec[REPLY], rec[TAG], rec[REQ] = self._key, reply, nil, self._req
    end
    return self._router.route(rec)
  end
  if pinned == "modern" and usual_modern(rec) then return self._modern:call(rec, self._mout) end
  return self:receive(call.message(rec), rec[AUTH])
end

--- A line or body that is not JSON: answered with -32700 (id null); the connection goes on.
-- @param err the decoder's error (a claude error or a string)
-- @tparam[opt] string line the text, unused but for the transport's logs
function Conn:receive_invalid(err, line) -- luacheck: no unused args
  if self.closed then return end
  local text = errors.is(err) and err.message or tostring(err)
  out(self, rpc_error(null, PARSE_ERROR, "Parse error: " .. text))
end

--- A message over the transport's size limit: answered with -32600 (id null); the
-- connection goes on.
-- @param err what the transport says (a claude error or a string)
function Conn:receive_oversized(err)
  if self.closed then return end
  local text = errors.is(err) and err.message or tostring(err)
  out(self, rpc_error(null, INVALID_REQUEST, "Invalid Request: message too large: " .. text))
end

--- Serve another server from now on (the tools file was reloaded): calls in flight finish
-- on the old one; the client is told the lists changed.
-- @tparam claude.Server server
function Conn:set_server(server)
  if not tool.is_server(server) then
    misuse("bad argument #1 to 'set_server' (claude.Server expected, got %s)",
      typename(server))
  end
  local old = self._server
  if old == server then return end
  unlisten(self, old)
  self._router:set_server(self._key, nil)
  self._server, self._key = server, server.name
  self._router:set_server(self._key, server)
  listen(self, server)
  if self._modern then self._modern:set_server(server) end
  if self.initialized and server.list_changed ~= false then
    for _, m in ipairs { "notifications/tools/list_changed",
      "notifications/resources/list_changed", "notifications/prompts/list_changed" } do
      out(self, { jsonrpc = "2.0", method = m })
    end
  end
end

--- Called for the server's changes (`server:add`, `server:remove`,
-- `server:resource_updated`).
-- @tparam string what `"list_changed"` or `"updated"`
-- @param arg the notification's method, or the uri
function Conn:server_event(what, arg)
  if self.closed or not self.initialized or self.stateless then return end
  if what == "list_changed" then
    if arg and self._server.list_changed ~= false then
      out(self, { jsonrpc = "2.0", method = arg })
    end
  elseif what == "updated" then
    if self.subscriptions[arg] then
      out(self, { jsonrpc = "2.0", method = "notifications/resources/updated",
        params = { uri = arg } })
    end
  end
end

--- Requests being served (tool calls, reads, prompts, completions in their tasks).
-- @treturn integer
function Conn:pending()
  return self._router:pending() + (self._modern and self._modern:pending() or 0)
end

--- Close the connection: calls in flight are cancelled and their answers dropped, pending
-- requests to the client fail with `closed`, the server forgets it. Idempotent.
-- @tparam[opt] string reason
function Conn:close(reason)
  if self.closed then return end
  reason = reason or "connection closed"
  self.closed = true
  self.call = nil -- the modern era's own (Modern:caller): Conn.call again, which sees closed
  if self._bind then self._bind(nil) end -- (and the reader's calls come to it)
  unlisten(self, self._server)
  self._router:cancel_all(reason)
  if self._modern then self._modern:close(reason) end
  if self._peer then self._peer:close(reason) end
  if self._on_close then self._on_close(reason) end
end

--- The server served.
-- @treturn claude.Server
function Conn:server()
  return self._server
end

M.Connection = Conn
return M
