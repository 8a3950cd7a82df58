--- An MCP client: one connection to one MCP server, over stdio (a child
-- process) or HTTP (Streamable HTTP, or the HTTP+SSE transport of
-- 2024-11-05), with a lifecycle that reconnects when the server goes away.
--
--     local c = assert(claude.mcp.connect{ command = "npx", args = { "-y", "some-server" } })
--     for _, t in ipairs(assert(c:list_tools())) do print(t.name) end
--     local r = assert(c:call_tool("add", { a = 1, b = 2 }))
--
-- A connection speaks the protocol era the server does (claude.mcp.era): the legacy one
-- (`initialize`) or the modern one (`server/discover`, then every request with its
-- envelope): claude.mcp.client.negotiate decides, claude.mcp.client.modern carries the
-- modern requests; the methods are the same in both.
--
-- Every method waits (inside a task other tasks run meanwhile; outside one
-- it runs the loop) and has a timeout. Failures are `nil, err, kind`:
-- `timeout`, `connection` (the server went away, or could not be reached:
-- a call whose outcome is unknown is never replayed), `protocol` (the server
-- broke the protocol), `remote` (the server answered with a JSON-RPC error:
-- `err.code`, `err.data`), `unsupported` (the server needs input the client
-- cannot give), `auth` (the server wants authorization and it could not be had:
-- see claude.oauth), `overflow`, `closed`. A tool's `isError` result is a result,
-- not a failure. See docs/mcp-client.md.
--
-- (Over 600 lines: the lifecycle (connect in either era, reconnect, close) and the
-- methods share the client's state machine and one request path; the transports, the
-- options, the inbound requests, authorization, the era's probe, the modern requests,
-- their input, headers, listen, the cache and tasks are files of their own in
-- claude.mcp.client.*.)
-- @module claude.mcp.client
local core = require "claude.core"
local async = require "claude.async"
local rpc = require "claude.rpc"
local request_written = rpc.Peer.request_written -- (call_tool's: no look-up through Peer)
local UNCHECKED = rpc.UNCHECKED
local usual_call = core.usual_call
local now = core.now
local json = require "claude.json"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local options = require "claude.mcp.client.options"
local inbound = require "claude.mcp.client.inbound"
local negotiate = require "claude.mcp.client.negotiate"
local modern = require "claude.mcp.client.modern"
local cache_mod = require "claude.mcp.client.cache"
local param_headers = require "claude.mcp.client.param_headers"
local listen = require "claude.mcp.client.listen"
local tasks = require "claude.mcp.client.tasks"
local pages = require "claude.mcp.client.pages"
local output = require "claude.mcp.client.output"
local check_output = output.check

local M = {}

local misuse, public = errors.misuse, errors.public
local pack = table.pack
local type = type -- (call_tool's checks: an upvalue, not a look-up in the globals)
local jobject = json.object

local SUPPORTED = {}
for _, v in ipairs(core.MCP_PROTOCOL_VERSIONS) do SUPPORTED[v] = true end
M.PROTOCOL_VERSIONS = core.MCP_PROTOCOL_VERSIONS
M.PROTOCOL_VERSION = core.MCP_PROTOCOL_VERSION

local Client = {}
Client.__index = Client
Client.__name = "claude.mcp.Client"

function Client:__tostring()
  return string.format("claude.mcp.Client (%s, %s)", self.name, self.state)
end

local function set_state(self, new)
  local old = self.state
  if old == new then return end
  self.state = new
  local fn = self.opts.on_state
  if fn then
    local ok, err = pcall(fn, old, new)
    if not ok then io.stderr:write("claude.mcp: error in on_state: ", tostring(err), "\n") end
  end
end

local function report(self, err)
  local fn = self.opts.on_error
  if fn then
    local ok, e = pcall(fn, err)
    if ok then return end
    err = e
  end
  io.stderr:write("claude.mcp: ", tostring(err), "\n")
end

local handlers_for, capabilities_of = inbound.handlers, inbound.capabilities

local function on_notification(self, method, params)
  if method == "notifications/progress" and type(params) == "table" then
    local fn = self.progress[params.progressToken]
    if fn then
      local ok, err = pcall(fn, params.progress, params.total, params.message)
      if not ok then report(self, err) end
      return
    end
  end
  if self.listening and self.listening:notified(method, params) then return end
  self.cache:notified(method, params)
  if method == "notifications/tools/list_changed" then self.tool_headers = nil end
  if self.tasks_live and type(params) == "table" and params.taskId ~= nil then
    local t = self.tasks_live[params.taskId]
    if t then t:notified(method, params) end
  end
  local fn = self.opts.on_notification
  if fn then
    local ok, err = pcall(fn, method, params)
    if not ok then report(self, err) end
  end
end

---------------------------------------------------------------------------------------------
-- One connection: a transport, a peer, the handshake
---------------------------------------------------------------------------------------------

local transports = {
  stdio = "claude.mcp.client.stdio",
  http = "claude.mcp.client.http",
  sse = "claude.mcp.client.sse",
}

local on_lost -- (self, conn, err): the connection is gone by itself

-- The Mcp-Param-* headers of a modern tools/call (the tool's x-mcp-header declarations).
local function param_headers_of(self, msg)
  if msg.method ~= "tools/call" or not self.tool_headers then return nil end
  local params = msg.params
  local decls = self.tool_headers[params.name]
  if not decls or not decls[1] then return nil end
  return param_headers.build(decls, params.arguments)
end

-- The ids of requests given up on (a timeout, a cancellation) whose late answers are
-- dropped without a word: the last DROPPED_KEPT of them.
local DROPPED_KEPT = 256

local function abandoned(conn, id)
  local dropped = conn.dropped
  if dropped[id] then return end
  dropped[id] = true
  local order = conn.dropped_order
  order[#order + 1] = id
  if #order > DROPPED_KEPT then dropped[table.remove(order, 1)] = nil end
end

-- Opens a transport and its peer; returns the connection | nil, err, kind. While the era
-- is being found (`conn.probe`), the probe's answer goes to it and nothing else is read;
-- an answer to a probe that timed out (`conn.dropped`) is dropped.
local function open_connection(self, kind)
  local conn = { alive = true, era = nil, dropped = {}, dropped_order = {} }
  local events = {
    message = function(msg)
      local peer = conn.peer
      if not peer then return end
      local probe = conn.probe
      if probe then
        if type(msg) == "table" and msg.id == probe.id and msg.method == nil then
          if msg.error ~= nil then
            local e = msg.error
            probe.done({ error = type(e) == "table" and e or { message = tostring(e) } })
          else
            probe.done({ result = msg.result })
          end
        end
        return
      end
      if type(msg) == "table" and msg.method == nil and msg.id ~= nil then
        local id = msg.id
        if peer.pending:get(id) == nil then
          -- the late answer of a request we gave up on (timeout, cancellation) goes; any
          -- other is the server's mistake, said (it was dropped silently: issue 23)
          if conn.dropped[id] then return end
          if math.type(id) == "integer" and id >= 1 and id <= peer.counter then
            return report(self, errors.new("protocol", "the MCP server '" .. self.name
              .. "' answered request id " .. id .. " again (it was answered already); the "
              .. "second answer was dropped"))
          end
          return report(self, errors.new("protocol", "the MCP server '" .. self.name
            .. "' answered request id " .. tostring(id) .. ", which was never sent"))
        end
      end
      if self.listening:cancelled(msg) then return end
      local ok, why = peer:receive(msg)
      if not ok then
        report(self, errors.new("protocol", "the MCP server '" .. self.name
          .. "' sent an invalid message: " .. tostring(why)))
      end
    end,
    -- an answer the transport's envelope reader took apart (core.RPC_RESULT): its call's
    -- callback at once, as `message` would do for it; anything else goes that way
    result = function(id, value)
      local peer = conn.peer
      if not peer then return end
      if not conn.probe and not conn.dropped[id] then
        local callback = peer.pending:take(id)
        if callback then return callback(value) end
      end
      return conn.events.message({ jsonrpc = "2.0", id = id, result = value })
    end,
    problem = function(err) report(self, err) end,
    -- a message that does not decode (cut short, invalid UTF-8, ...): when it answers a
    -- call in flight (its id, no method), that call fails with `err` now rather than
    -- timing out; anything else is reported
    undecodable = function(text, err)
      local peer = conn.peer
      local _, id, _, has_method = core.json_peek_ids(text)
      local cb = peer and id ~= nil and not has_method and peer.pending:take(id)
      if cb then return cb(nil, err) end
      report(self, err)
    end,
    lost = function(err)
      -- the lost message may have been the answer to any call in flight
      report(self, err)
      local peer = conn.peer
      for _, id in ipairs(peer and peer.pending:ids() or {}) do
        local cb = peer.pending:take(id)
        abandoned(conn, id)
        peer:notify("notifications/cancelled", { requestId = id, reason = err.message })
        cb(nil, err)
      end
    end,
    closed = function(err)
      if conn.probe then conn.probe.done({ closed = err }) end
      on_lost(self, conn, err)
    end,
    -- a request the transport could not deliver (HTTP: its POST failed)
    failed = function(id, err)
      if conn.probe and conn.probe.id == id then return conn.probe.done({ failed = err }) end
      local peer = conn.peer
      local cb = peer and peer.pending:take(id)
      if cb then
        cb(nil, err)
      end
    end,
    headers = function(msg) return param_headers_of(self, msg) end,
  }
  conn.events = events
  local mod = require(transports[kind])
  local t, err, ekind = mod.open(self.opts, events, self.provider)
  if not t then return nil, err, ekind end
  conn.transport = t
  local function send(msg)
    -- a notification of the modern era carries the envelope too
    if conn.era == "modern" and msg.method ~= nil and msg.id == nil then
      msg.params = modern.params(self, msg.params)
    end
    return t:send(msg)
  end
  conn.peer = rpc.new {
    codec = rpc.jsonrpc,
    name = "MCP server '" .. self.name .. "'",
    send = send,
    -- a transport that writes a request's envelope itself (stdio) is given its values
    send_request = t.send_request,
    handlers = self.handlers,
    on_notification = function(method, params) on_notification(self, method, params) end,
    -- a modern HTTP request is abandoned by closing its stream; elsewhere the server is told
    on_cancel = function(id, _, cerr)
      abandoned(conn, id)
      if conn.era == "modern" and t.abort then
        t:abort(id)
        return
      end
      send(rpc.jsonrpc.cancel(id, cerr.message))
    end,
    context = { client = self },
    timeout = self.opts.timeout,
  }
  -- a transport that reads answers in C hands those of the requests waiting straight to them
  if t.bind_answers then t:bind_answers(conn.peer.pending) end
  return conn
end

local function close_connection(conn, reason)
  if not conn.alive then return end
  conn.alive = false
  conn.peer:close(reason)
  conn.transport:close()
end

-- With OAuth a request's clock stops while an authorization runs (a person
-- may be signing in in a browser): its timeout counts the rest of the time.
-- The same as peer:request otherwise.
local function timed_by_auth(provider, peer, method, params, timeout)
  local start, spent = core.now(), provider:authorizing_seconds()
  local id, answered, timed_out = nil, false, false
  local timer = core.timer()
  local r = pack(pcall(async.await, function(done)
    local serr
    id, serr = peer:start(method, params, function(...)
      answered = true -- also by the cancellation below
      return done(...)
    end)
    if not id then return done(nil, serr) end
    local function check()
      if answered then return end -- the answer came in the same turn of the loop
      local left = timeout - (core.now() - start - (provider:authorizing_seconds() - spent))
      if left > 0 then return timer:start(left, check) end
      timed_out = true
      peer:cancel(id, "timed out") -- the server is told, as for any timeout
    end
    timer:start(timeout, check)
    return function() timer:stop() end
  end))
  timer:close()
  if not r[1] then -- the waiting task was cancelled
    if id and errors.is(r[2], "cancelled") then peer:cancel(id, errors.message(r[2])) end
    error(r[2], 0)
  end
  if timed_out then
    return errors.fail("timeout", string.format("request '%s' timed out after %g s", method,
      timeout))
  end
  local result, err = r[3], r[4]
  if err then return nil, err, err.kind end
  return result
end

-- A request on a peer, with the client's timeout rules.
local function peer_request(self, peer, method, params, timeout)
  if self.provider and timeout then
    return timed_by_auth(self.provider, peer, method, params, timeout)
  end
  return peer:request(method, params, timeout)
end

-- The legacy handshake on a new connection: `initialize`, `notifications/initialized`.
local function initialize(self, conn, offered)
  set_state(self, "initializing")
  local o = self.opts
  local r, err, kind = peer_request(self, conn.peer, "initialize", {
    protocolVersion = offered, capabilities = self.offered, clientInfo = self.client_info,
  }, o.connect_timeout)
  if r == nil then return nil, err, kind end
  local version = type(r) == "table" and r.protocolVersion
  if not SUPPORTED[version] then
    return errors.fail("protocol", string.format("the MCP server '%s' answered initialize "
      .. "with protocol version %s; this client supports %s", self.name,
      type(version) == "string" and ("'" .. version .. "'") or "none",
      table.concat(M.PROTOCOL_VERSIONS, ", ")), { server_version = version })
  end
  if conn.transport.set_protocol_version then conn.transport:set_protocol_version(version) end
  conn.era = "legacy"
  self.era, self.protocol_version = "legacy", version
  modern.changed(self)
  self.discovered = nil
  self.server_info = type(r.serverInfo) == "table" and r.serverInfo or {}
  self.capabilities = type(r.capabilities) == "table" and r.capabilities or {}
  self.instructions = type(r.instructions) == "string" and r.instructions or nil
  local ok, nerr, nkind = conn.peer:notify("notifications/initialized")
  if not ok then return nil, nerr, nkind end
  if conn.transport.initialized then conn.transport:initialized() end
  if self.log_level then
    -- the level asked for at connect, told the legacy way (a server without logging
    -- declines, which changes nothing)
    peer_request(self, conn.peer, "logging/setLevel", { level = self.log_level },
      o.connect_timeout)
  end
  return true
end

-- The modern era, found by `server/discover`: no handshake; what the server said of itself.
local function adopt_modern(self, conn, version, r)
  if conn.transport.set_protocol_version then conn.transport:set_protocol_version(version) end
  conn.era = "modern"
  self.era, self.protocol_version = "modern", version
  modern.changed(self)
  self.discovered = r
  local meta = type(r._meta) == "table" and r._meta or {}
  local info = meta[era.META.server_info]
  if type(info) ~= "table" then info = r.serverInfo end
  self.server_info = type(info) == "table" and info or {}
  self.capabilities = type(r.capabilities) == "table" and r.capabilities or {}
  self.instructions = type(r.instructions) == "string" and r.instructions or nil
  return true
end

-- Finds the era of a new connection (claude.mcp.client.negotiate) and opens it in that era:
-- true | nil, err, kind | "respawn" (a stdio server exited on the probe: start it again for
-- the legacy handshake).
local function handshake(self, conn)
  local o, mode = self.opts, self.mode
  if mode.legacy or self.transport_kind == "sse" then
    return initialize(self, conn, mode.version or M.PROTOCOL_VERSION)
  end
  set_state(self, "initializing")
  local version = mode.version or era.LATEST_MODERN
  local timeout = o.probe_timeout or (self.transport_kind == "stdio"
    and math.min(3, o.connect_timeout / 3) or o.connect_timeout)
  local corrected = false
  while true do
    self.probes = self.probes + 1
    local msg = negotiate.request(self.probes, modern.envelope(self, version))
    local outcome = negotiate.probe(conn, msg, timeout, self.provider)
    local v = negotiate.classify(outcome, self.transport_kind)
    if v.kind == "modern" then
      if mode.version and v.version ~= mode.version then
        return errors.fail("protocol", string.format("the MCP server '%s' speaks %s, not "
          .. "the protocol revision the client is pinned to (%s)", self.name, v.version,
          mode.version))
      end
      return adopt_modern(self, conn, v.version, v.discover)
    elseif v.kind == "corrective" and not corrected
        and (mode.version == nil or mode.version == v.version) then
      corrected, version = true, v.version
    elseif v.kind == "legacy" and not mode.version then
      if v.respawn or not conn.alive then return "respawn" end
      return initialize(self, conn, M.PROTOCOL_VERSION)
    elseif v.kind == "error" then
      local err = v.err
      return nil, err, err.kind
    else
      return errors.fail("protocol", string.format("the MCP server '%s' does not speak "
        .. "protocol revision %s, which the client is pinned to (%s)", self.name, version,
        v.why or "it asked for another revision"))
    end
  end
end

-- One attempt: a new connection, in its era. Sets self.conn.
local function attempt(self)
  local conn, err, kind = open_connection(self, self.transport_kind)
  if not conn then return nil, err, kind end
  self.conn = conn
  self.cache:clear()
  self.tool_headers = nil
  local ok, ierr, ikind = handshake(self, conn)
  if ok == "respawn" then
    -- the server exited on the probe (or cannot go on after it): the legacy handshake
    -- on a new process
    close_connection(conn, "the server exited on server/discover")
    conn, err, kind = open_connection(self, self.transport_kind)
    if not conn then
      self.conn = nil
      return nil, err, kind
    end
    self.conn = conn
    ok, ierr, ikind = initialize(self, conn, M.PROTOCOL_VERSION)
  end
  if not ok then
    self.conn = nil
    close_connection(conn, "the handshake failed")
    return nil, ierr, ikind
  end
  return true
end

-- A connection is up: in the modern era, the listen its notifications need.
local function opened(self)
  self.listening:reset()
  if self.era ~= "modern" then return end
  local ok, err = self.listening:open()
  if not ok then report(self, err) end
end

local function backoff(self, n)
  local o = self.opts
  local d = math.min(o.max_retry_delay, o.retry_delay * 2 ^ (n - 1))
  return d / 2 + math.random() * d / 2 -- jitter: between half and all of it
end

-- Reconnects with backoff; one reconnect at a time (a task of its own).
local function reconnect(self, cause)
  set_state(self, "reconnecting")
  self.ready = async.event()
  self.reconnects = self.reconnects + 1
  self.reconnecting = async.spawn(function()
    local err = cause
    for n = 1, self.opts.max_retries do
      async.sleep(backoff(self, n))
      if self.closed then return end
      local ok, aerr = attempt(self)
      if self.closed then
        if self.conn then close_connection(self.conn) end
        return
      end
      if ok then
        self.reconnecting = nil
        set_state(self, "connected")
        self.ready:set()
        opened(self)
        return
      end
      err = aerr
      report(self, errors.new("connection", string.format("reconnecting to the MCP server "
        .. "'%s' (attempt %d of %d) failed: %s", self.name, n, self.opts.max_retries,
        errors.message(aerr)), { cause = aerr }))
    end
    self.error = errors.new("connection", string.format("the MCP server '%s' is gone and %d "
      .. "reconnect attempt%s failed: %s", self.name, self.opts.max_retries,
      self.opts.max_retries == 1 and "" or "s", errors.message(err)),
      { cause = err, exit_code = cause.exit_code, signal = cause.signal,
        stderr_tail = cause.stderr_tail })
    self.reconnecting = nil
    set_state(self, "disconnected")
    self.ready:set()
  end)
end

on_lost = function(self, conn, err)
  if not conn.alive then return end
  conn.alive = false
  -- the client's state first: a call failed below may look at it at once
  if self.conn == conn and not self.closed then
    self.conn = nil
    if self.state == "connected" and self.opts.max_retries > 0 then
      reconnect(self, err)
    elseif self.state == "connected" then
      self.error = err
      set_state(self, "disconnected")
    end
  end
  conn.peer:fail(err) -- every call in flight: its outcome is unknown, it is not replayed
  conn.peer:close()
  conn.transport:close()
end

---------------------------------------------------------------------------------------------
-- Connecting
---------------------------------------------------------------------------------------------

local send_one -- (self): the function sending one request of the modern era (below)

local function connect(opts)
  local o, kind = options.check(opts, "connect")
  local self = setmetatable({
    opts = o, name = o.name, transport_kind = kind, state = "disconnected",
    progress = {}, reconnects = 0, closed = false, error = false,
    ready = async.event(), conn = nil, next_token = 0, probes = 0,
    mode = options.mode(o), era = nil, protocol_version = nil, log_level = o.log_level,
    offered = capabilities_of(o),
    client_info = o.client_info or { name = "claudelua", version = core.version },
    cache = cache_mod.new(o.cache), tool_headers = nil, subscriptions = {},
    extensions = o.tasks and { [era.TASKS] = jobject() } or nil,
    -- read by every call_tool: present (a field that is absent costs a miss each time)
    provider = false, output_schemas = false, _class = Client,
    -- the modern envelope, made once (claude.mcp.client.modern: forgotten by modern.changed
    -- at each change of protocol_version or log_level)
    envelope_now = false, envelope_tail = false,
  }, Client)
  self.handlers = handlers_for(self)
  self.send_one = send_one(self)
  self.listening = listen.new(self, function(e) report(self, e) end)
  if o.auth then
    self.provider = require("claude.oauth.provider").new(o.auth, o.url, { name = o.name,
      report = function(e) report(self, e) end,
      protocol_version = function()
        return self.protocol_version or self.mode.version or M.PROTOCOL_VERSION
      end })
  end
  set_state(self, "connecting")
  local ok, err, ekind = attempt(self)
  if not ok and kind == "http" and o.transport == nil and ekind ~= "auth" and err.status
    and err.status >= 400 and err.status < 500 and err.status ~= 401 then
    -- an older server: the HTTP+SSE transport of 2024-11-05
    self.transport_kind = "sse"
    local serr
    ok, serr = attempt(self)
    if not ok then
      -- neither: the first answer says more (a wrong URL, a server that is not MCP)
      self.transport_kind = "http"
      err.message = err.message .. " (the HTTP+SSE transport of 2024-11-05 failed too: "
        .. errors.message(serr) .. ")"
    end
  end
  if not ok then
    set_state(self, "disconnected")
    self.error = err
    return nil, err, ekind
  end
  set_state(self, "connected")
  self.ready:set()
  opened(self)
  return self
end

--- Connects to an MCP server in the era it speaks.
-- @tparam table opts stdio: `command`, `args`, `env`, `cwd`, `stderr`; HTTP:
--   `url`, `headers`, `transport` (`"streamable_http"` or `"sse"`; default:
--   Streamable HTTP, falling back to HTTP+SSE for a server that refuses
--   it); both: `name`, `timeout` (seconds per call, default 60),
--   `connect_timeout` (30), `max_retries` (3), `retry_delay` (0.5),
--   `max_retry_delay` (30), `max_message_size` (bytes), `auth` (OAuth for
--   an HTTP server, see claude.oauth), `protocol` (`"auto"`, `"legacy"` or a
--   revision), `protocol_version`, `probe_timeout`, `client_info`, `log_level`,
--   `cache`, `tasks`, `max_input_rounds`, `max_pages` (1000), `max_list_bytes` (32 MiB),
--   `max_schema_bytes` (4 MiB), `on_notification`, `on_sampling`,
--   `on_elicitation`, `roots`, `on_roots`, `on_state`, `on_error`. See
--   docs/mcp-client.md.
-- @return the client | nil, err, kind
-- @function connect
M.connect = public(connect)

---------------------------------------------------------------------------------------------
-- Calls
---------------------------------------------------------------------------------------------

-- The connection's peer once the client is connected (waiting while it
-- reconnects), or nil, err, kind.
local function peer_of(self, timeout)
  if self.closed then return errors.fail("closed", "the MCP client '" .. self.name
    .. "' is closed") end
  if self.state ~= "connected" then
    if self.state == "disconnected" then
      local err = self.error or errors.new("connection", "the MCP client '" .. self.name
        .. "' is not connected")
      return nil, err, err.kind
    end
    local ok, err = self.ready:wait(timeout)
    if not ok then return nil, err, err.kind end
    return peer_of(self, timeout)
  end
  return self.conn.peer
end

local function timeout_of(self, opts, fname)
  local t = opts and opts.timeout
  if t == nil then return self.opts.timeout end
  if t ~= false and (type(t) ~= "number" or t < 0) then
    misuse("bad field 'timeout' to '%s' (non-negative number or false expected, got %s)",
      fname, tostring(t))
  end
  return t
end

-- A request on the current connection: the result | nil, err, kind. In the modern era
-- with the envelope, the answer followed through its rounds (claude.mcp.client.modern);
-- a task's handle comes back as `r, "task"`. `ropts`: `extensions`, `name` (modern).
local function request(self, method, params, timeout, ropts)
  local peer, err, kind = peer_of(self, timeout or nil)
  if not peer then return nil, err, kind end
  if self.era ~= "modern" then return peer_request(self, peer, method, params, timeout) end
  return modern.request(self, self.send_one, method, params, ropts, timeout)
end

-- One request of the modern era (each round of one; the connection may change between).
-- The first round of a tools/call that carries the client's envelope as it stands is written
-- by a transport that can (stdio: write_call) around its name and arguments, the envelope's
-- JSON made once (modern.call_tail).
send_one = function(self)
  return function(method, params, timeout, plain)
    local peer, err, kind = peer_of(self, timeout or nil)
    if not peer then return nil, err, kind end
    -- plain: a tools/call's first round, params {name, arguments, _meta} (claude.mcp.client.
    -- modern)
    local write = plain and not self.provider and self.conn.transport.write_call
    if write then
      local tail = modern.call_tail(self, params._meta)
      if tail then
        return peer:request_written(method, write, timeout, params.name, params.arguments, tail)
      end
    end
    return peer_request(self, peer, method, params, timeout)
  end
end

local function check_self(self, fname)
  if getmetatable(self) ~= Client then
    misuse("bad self to '%s' (claude.mcp.Client expected, got %s; use a colon)", fname,
      errors.typename(self))
  end
end

local function check_opts(opts, n, fname)
  if opts ~= nil and type(opts) ~= "table" then
    misuse("bad argument #%d to '%s' (table expected, got %s)", n, fname, errors.typename(opts))
  end
end

local LIST_OPTIONS = { timeout = true, cache = true, max_pages = true, max_bytes = true }

-- A cacheable request (modern era: claude.mcp.client.cache): the kept result while it is
-- valid, else the server's, kept for as long as it says.
local function cached(self, method, key, params, timeout, use_cache)
  if self.era == "modern" and use_cache ~= false then
    local hit = self.cache:get(method, key)
    if hit then return hit end
  end
  local r, err, kind = request(self, method, params, timeout)
  if r == nil then return nil, err, kind end
  if self.era == "modern" then self.cache:put(method, key, r) end
  return r
end

-- Tools of the modern era whose x-mcp-header declarations are invalid are dropped (a
-- header that cannot be built right would make every call of them fail); the others'
-- declarations are kept for the Mcp-Param-* headers of their calls.
local function scan_tools(self, tools)
  local kept, decls = json.array(), {}
  for _, t in ipairs(tools) do
    local d, why = nil, "not a tool description"
    if type(t) == "table" and type(t.name) == "string" then
      d, why = param_headers.scan(t.inputSchema)
    end
    if d then
      kept[#kept + 1] = t
      decls[t.name] = d
    else
      report(self, errors.new("protocol", string.format("the MCP server '%s' lists tool "
        .. "'%s' with %s; it is left out", self.name, type(t) == "table"
        and tostring(t.name) or "?", why)))
    end
  end
  self.tool_headers = decls
  return kept
end

-- A list method: every page, followed by its cursor, within the bounds (claude.mcp.client.
-- pages; the timeout is the whole walk's).
local function list_all(self, method, field, opts, fname)
  check_self(self, fname)
  check_opts(opts, 1, fname)
  if opts then
    errors.check_fields(opts, LIST_OPTIONS, fname)
    for _, k in ipairs { "max_pages", "max_bytes" } do
      local v = opts[k]
      if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
        errors.bad_field(k, fname, "positive integer expected, got %s", tostring(v))
      end
    end
  end
  local timeout = timeout_of(self, opts, fname)
  local use_cache = opts and opts.cache
  local out, err, kind = pages.collect(self, function(cursor, left)
    return cached(self, method, cursor, cursor and { cursor = cursor } or nil, left, use_cache)
  end, method, field, timeout, opts)
  if not out then return nil, err, kind end
  if method == "tools/list" and self.era == "modern" then out = scan_tools(self, out) end
  return out
end

--- The server's tools, every page of them.
-- @tparam[opt] table opts `{ timeout = s }`
-- @return a list of tool descriptions | nil, err, kind
-- @function list_tools
Client.list_tools = public(function(self, opts)
  local tools, err, kind = list_all(self, "tools/list", "tools", opts, "list_tools")
  if tools then self.output_schemas = output.schemas(tools) end
  return tools, err, kind
end)

--- The server's resources, every page of them.
-- @function list_resources
Client.list_resources = public(function(self, opts)
  return list_all(self, "resources/list", "resources", opts, "list_resources")
end)

--- The server's resource templates, every page of them.
-- @function list_resource_templates
Client.list_resource_templates = public(function(self, opts)
  return list_all(self, "resources/templates/list", "resourceTemplates", opts,
    "list_resource_templates")
end)

--- The server's prompts, every page of them.
-- @function list_prompts
Client.list_prompts = public(function(self, opts)
  return list_all(self, "prompts/list", "prompts", opts, "list_prompts")
end)

local CALL_OPTIONS = { timeout = true, on_progress = true, meta = true, task = true,
  on_status = true, traceparent = true, tracestate = true }

-- The `_meta` a call asks for: `meta`, and the W3C trace context (`traceparent`,
-- `tracestate`) when given. A new table, or nil.
local function meta_of(opts, fname)
  if not opts then return nil end
  local m
  if opts.meta ~= nil then
    errors.check_field(opts.meta, "meta", fname, "table")
    m = {}
    for k, v in pairs(opts.meta) do m[k] = v end
  end
  for _, k in ipairs { "traceparent", "tracestate" } do
    local v = opts[k]
    if v ~= nil then
      errors.check_field(v, k, fname, "string")
      m = m or {}
      m[k] = v
    end
  end
  return m
end

-- A tools/call answered with a result that is not an object.
local function not_object(self)
  return errors.fail("protocol", "the MCP server '" .. self.name .. "' answered tools/call "
    .. "with a result that is not an object")
end

-- The request of a task handle: `request` with this client.
local function task_request(self)
  return function(method, params, timeout, ropts)
    return request(self, method, params, timeout, ropts)
  end
end

-- A call of a tool: every way of calling one, the usual one's first round aside (below).
-- `first`: the answer of the first round when Client.call_tool wrote that round itself
-- (`{ result, err, kind, modern }`: request_written's values, and whether the round carried
-- the modern envelope); the call goes on from it.
local function call_tool(self, name, args, opts, first)
  check_self(self, "call_tool")
  if type(name) ~= "string" then
    misuse("bad argument #1 to 'call_tool' (string expected, got %s)", errors.typename(name))
  end
  if args ~= nil and type(args) ~= "table" then
    misuse("bad argument #2 to 'call_tool' (table expected, got %s)", errors.typename(args))
  end
  check_opts(opts, 3, "call_tool")
  if opts then errors.check_fields(opts, CALL_OPTIONS, "call_tool") end
  local timeout = timeout_of(self, opts, "call_tool")
  local deadline = timeout and now() + timeout -- (checking the output counts too)
  local params = { name = name, arguments = args or jobject() }
  local on_progress = opts and opts.on_progress
  if on_progress ~= nil and type(on_progress) ~= "function" then
    errors.bad_field("on_progress", "call_tool", "function expected, got %s",
      errors.typename(on_progress))
  end
  local want_task = opts and opts.task
  if want_task ~= nil and type(want_task) ~= "boolean" and type(want_task) ~= "table" then
    errors.bad_field("task", "call_tool", "true or { ttl = seconds } expected, got %s",
      errors.typename(want_task))
  end
  local on_status = opts and opts.on_status
  if on_status ~= nil and type(on_status) ~= "function" then
    errors.bad_field("on_status", "call_tool", "function expected, got %s",
      errors.typename(on_status))
  end
  local meta = meta_of(opts, "call_tool")
  local token
  if on_progress then
    token = self.next_token + 1
    self.next_token = token
    meta = meta or {}
    meta.progressToken = token
    self.progress[token] = on_progress
  end
  params._meta = meta
  local ropts = { name = name, owned = true }
  if want_task and self.era == "modern" and not self.opts.tasks then
    ropts.extensions = { [era.TASKS] = jobject() }
  elseif want_task and self.era == "legacy" then
    -- 2025-11-25: the task is asked for in the call (the server may answer at once)
    local ttl = type(want_task) == "table" and tonumber(want_task.ttl)
    params.task = ttl and { ttl = math.floor(ttl * 1000) } or jobject()
  end
  local r
  if not first then
    r = pack(pcall(request, self, "tools/call", params, timeout, ropts))
  elseif first.modern then -- its rounds, from the first one's answer on
    ropts.first = first
    r = pack(pcall(modern.request, self, self.send_one, "tools/call", params, ropts, timeout))
    ropts.first = nil
  else -- (UNCHECKED: a result the reader did not check; it is, below)
    local err = first.err
    r = { true, first.result, err ~= UNCHECKED and err or nil, first.kind }
  end
  if r[1] and r[2] == nil and self.era == "modern" and type(r[3]) == "table"
    and r[3].code == era.ERRORS.header_mismatch
    and not (self.tool_headers and self.tool_headers[name]) then
    -- an x-mcp-header tool the client has not listed yet: its Mcp-Param-* headers were
    -- missing; listed now, the call goes once more
    local listed = list_all(self, "tools/list", "tools", { cache = false }, "call_tool")
    if listed and self.tool_headers and self.tool_headers[name] then
      r = pack(pcall(request, self, "tools/call", params, timeout, ropts))
    end
  end
  if token then self.progress[token] = nil end
  if not r[1] then error(r[2], 0) end
  local result, how = r[2], r[3]
  if result == nil then return nil, r[3], r[4] end
  if type(result) ~= "table" then return not_object(self) end
  local info = how == "task" and result
    or (self.era == "legacy" and result.task ~= nil and result.content == nil and result.task)
  if info then
    local t, terr, tkind = tasks.new(self, task_request(self), info, { name = name,
      timeout = timeout, on_status = on_status, report = function(e) report(self, e) end })
    if not t then return nil, terr, tkind end
    if want_task then return t end
    -- a task the server chose to make: the call waits for its end
    return check_output(self, name, deadline, t:wait { timeout = timeout or nil })
  end
  if want_task then return tasks.done(self, result, { name = name }) end
  return check_output(self, name, deadline, result)
end

-- Output validation: claude.mcp.client.output (bounded: a hostile server's schema is
-- compiled and checked within the time the call has left).
M.output_schemas = output.schemas

--- A call's results, or a `validation` failure when its structured result breaks the tool's
-- output schema (`timeout` when checking it would outlast `deadline`, a `core.now()` or nil).
M.check_output = output.check

local public_call_tool = public(call_tool)

--- Calls a tool. A result with `isError` is a result (the tool failed, the
-- call did not). When `list_tools` has listed the tool with an `outputSchema`, a result
-- whose `structuredContent` is missing or does not match it is `nil, err, "validation"`.
-- @tparam string name
-- @tparam[opt] table args
-- @tparam[opt] table opts `{ timeout = s, on_progress = fn(progress, total,
--   message), meta = { ... } }`
-- @return the CallToolResult | nil, err, kind
-- @function call_tool
--
-- The usual call (no options, connected, no OAuth, a transport that writes a call around its
-- name and arguments, no output schema to check, in the modern era the envelope's JSON made:
-- modern.call_tail) has its first round written here; its usual answer (checked by the
-- reader: request_written's `usual`) is the call's. Anything else is call_tool's, which goes
-- on from that round's answer.
function Client.call_tool(self, name, args, opts)
  -- (_class: a client's own field, for getmetatable's call with its __metatable look-up)
  -- (usual_call: the three types told in one C call, not three of type())
  if opts == nil and usual_call(self, name, args) and self._class == Client
    and self.state == "connected" and not self.closed and not self.provider then
    local conn = self.conn
    local write_call = conn.transport.write_call
    local schemas = self.output_schemas
    if write_call and not (schemas and schemas[name]) then
      -- legacy: "object", a result the reader saw is an object comes alone; modern: true,
      -- the usual complete answer comes alone, its resultType left out (the envelope's
      -- JSON: false once the envelope changes, modern.changed)
      local tail, usual = nil, "object"
      if self.era == "modern" then
        tail, usual = self.envelope_tail, true
        if not tail then return public_call_tool(self, name, args) end
      end
      local result, err, kind = request_written(conn.peer, "tools/call", write_call,
        self.opts.timeout, name, args or jobject(), tail, usual)
      -- (a legacy result with `task` may be a task; a modern one's tasks have a resultType)
      if err == nil and (tail or result.task == nil) then return result end
      return public_call_tool(self, name, args, nil, { result = result, err = err,
        kind = kind, modern = tail ~= nil })
    end
  end
  return public_call_tool(self, name, args, opts)
end

local function string_arg(v, n, fname)
  if type(v) ~= "string" then
    misuse("bad argument #%d to '%s' (string expected, got %s)", n, fname, errors.typename(v))
  end
end

local READ_OPTIONS = { timeout = true, cache = true, meta = true, traceparent = true,
  tracestate = true }

--- Reads a resource (in the modern era from the client's cache while the server's
-- caching hint says the last read is valid; `{ cache = false }` reads anew).
-- @return the ReadResourceResult (`contents`) | nil, err, kind
-- @function read_resource
Client.read_resource = public(function(self, uri, opts)
  check_self(self, "read_resource")
  string_arg(uri, 1, "read_resource")
  check_opts(opts, 2, "read_resource")
  if opts then errors.check_fields(opts, READ_OPTIONS, "read_resource") end
  local meta = meta_of(opts, "read_resource")
  local timeout = timeout_of(self, opts, "read_resource")
  if meta then return request(self, "resources/read", { uri = uri, _meta = meta }, timeout) end
  return cached(self, "resources/read", uri, { uri = uri }, timeout, opts and opts.cache)
end)

-- The modern era's subscriptions: the set changes, and the listen with it.
local function resubscribe(self, uri, on)
  local before = self.subscriptions[uri]
  self.subscriptions[uri] = on or nil
  local ok, err, kind = self.listening:open()
  if not ok then
    self.subscriptions[uri] = before
    return nil, err, kind
  end
  return true
end

local function simple(method, fname, field)
  return public(function(self, value, opts)
    check_self(self, fname)
    string_arg(value, 1, fname)
    check_opts(opts, 2, fname)
    local timeout = timeout_of(self, opts, fname)
    peer_of(self, timeout or nil) -- the era is known once connected
    if self.era == "modern" then
      if method == "logging/setLevel" then
        if not options.LOG_LEVELS[value] then
          misuse("bad argument #1 to '%s' (a log level expected, got '%s')", fname, value)
        end
        self.log_level = value -- sent with every request from now on
        modern.changed(self)
        return true
      end
      return resubscribe(self, value, method == "resources/subscribe")
    end
    local r, err, kind = request(self, method, { [field] = value }, timeout)
    if r == nil then return nil, err, kind end
    if method == "logging/setLevel" then
      self.log_level = value
      modern.changed(self)
    end
    return true
  end)
end

--- Subscribes to a resource's updates (`notifications/resources/updated`; in the modern era
-- through the client's `subscriptions/listen`).
-- @function subscribe
Client.subscribe = simple("resources/subscribe", "subscribe", "uri")
--- Ends a subscription.
-- @function unsubscribe
Client.unsubscribe = simple("resources/unsubscribe", "unsubscribe", "uri")
--- Sets the server's log level (`notifications/message` below it stop; in the modern era
-- every later request asks for it in its envelope).
-- @function set_log_level
Client.set_log_level = simple("logging/setLevel", "set_log_level", "level")

local PROMPT_OPTIONS = { timeout = true, meta = true, traceparent = true, tracestate = true }

--- Gets a prompt.
-- @tparam string name
-- @tparam[opt] table args string values
-- @return the GetPromptResult | nil, err, kind
-- @function get_prompt
Client.get_prompt = public(function(self, name, args, opts)
  check_self(self, "get_prompt")
  string_arg(name, 1, "get_prompt")
  check_opts(args, 2, "get_prompt")
  check_opts(opts, 3, "get_prompt")
  if opts then errors.check_fields(opts, PROMPT_OPTIONS, "get_prompt") end
  return request(self, "prompts/get", { name = name, arguments = args,
    _meta = meta_of(opts, "get_prompt") }, timeout_of(self, opts, "get_prompt"),
    { name = name })
end)

--- Asks for completions of a prompt's or a resource template's argument.
-- @tparam table ref `{ type = "ref/prompt", name = ... }` or
--   `{ type = "ref/resource", uri = ... }`
-- @tparam table argument `{ name = ..., value = ... }`
-- @return the completion (`values`, `total`, `hasMore`) | nil, err, kind
-- @function complete
Client.complete = public(function(self, ref, argument, opts)
  check_self(self, "complete")
  if type(ref) ~= "table" then
    misuse("bad argument #1 to 'complete' (table expected, got %s)", errors.typename(ref))
  end
  if type(argument) ~= "table" then
    misuse("bad argument #2 to 'complete' (table expected, got %s)", errors.typename(argument))
  end
  check_opts(opts, 3, "complete")
  local r, err, kind = request(self, "completion/complete", { ref = ref, argument = argument },
    timeout_of(self, opts, "complete"))
  if r == nil then return nil, err, kind end
  return type(r) == "table" and r.completion or r
end)

--- Pings the server (in the modern era, which has no `ping`, `server/discover` asks it
-- whether it is there).
-- @return true | nil, err, kind
-- @function ping
Client.ping = public(function(self, opts)
  check_self(self, "ping")
  check_opts(opts, 1, "ping")
  local timeout = timeout_of(self, opts, "ping")
  peer_of(self, timeout or nil)
  local r, err, kind = request(self, self.era == "modern" and "server/discover" or "ping", nil,
    timeout)
  if r == nil then return nil, err, kind end
  return true
end)

--- Sends a notification to the server.
-- @return true | nil, err, kind
function Client:notify(method, params)
  local peer, err, kind = peer_of(self, self.opts.timeout)
  if not peer then return nil, err, kind end
  return peer:notify(method, params)
end

--- Tells the server the roots changed (`notifications/roots/list_changed`; in the modern
-- era servers ask for the roots with each request that needs them, so nothing is sent).
function Client:roots_changed()
  local peer, err, kind = peer_of(self, self.opts.timeout)
  if not peer then return nil, err, kind end
  if self.era == "modern" then return true end
  return peer:notify("notifications/roots/list_changed")
end

--- Closes the connection: calls in flight end with `closed`, a stdio server
-- is stopped (stdin closed, then SIGTERM, SIGKILL), an HTTP session is
-- deleted. Idempotent; also `<close>`.
-- @return true
function Client:close()
  if self.closed then return true end
  self.closed = true
  local conn = self.conn
  self.conn = nil
  set_state(self, "disconnected")
  self.ready:set()
  -- a reconnect under way stops at once (it is not left sleeping)
  if self.reconnecting then self.reconnecting:cancel("the MCP client was closed") end
  self.listening:close()
  if conn then close_connection(conn, "the MCP client '" .. self.name .. "' was closed") end
  return true
end
Client.__close = Client.close

--- A `claude.server` whose tools forward to this client (see
-- claude.mcp.bridge).
-- @function as_server
Client.as_server = public(function(self, opts)
  check_self(self, "as_server")
  return require("claude.mcp.bridge").server(self, opts)
end)

--- Is `v` a client made by `connect`?
function M.is_client(v)
  return getmetatable(v) == Client
end

M.Client = Client
return M
