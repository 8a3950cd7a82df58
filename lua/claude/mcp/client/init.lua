--- An MCP client: one connection to one MCP server, over stdio (a child
-- process) or HTTP (Streamable HTTP, or the HTTP+SSE transport of
-- 2024-11-05), with a lifecycle that reconnects when the server goes away.
--
--     local c = assert(claude.mcp.connect{ command = "npx", args = { "-y", "some-server" } })
--     for _, t in ipairs(assert(c:list_tools())) do print(t.name) end
--     local r = assert(c:call_tool("add", { a = 1, b = 2 }))
--
-- Every method waits (inside a task other tasks run meanwhile; outside one
-- it runs the loop) and has a timeout. Failures are `nil, err, kind`:
-- `timeout`, `connection` (the server went away, or could not be reached:
-- a call whose outcome is unknown is never replayed), `protocol` (the server
-- broke the protocol), `remote` (the server answered with a JSON-RPC error:
-- `err.code`, `err.data`), `auth` (the server wants authorization and it
-- could not be had: see claude.oauth), `overflow`, `closed`. A tool's
-- `isError` result is a result, not a failure. See docs/mcp-client.md.
--
-- (Over 600 lines: the lifecycle (connect, reconnect, close) and the methods share the
-- client's state machine and one request path; the transports, the options, the inbound
-- requests and authorization are files of their own in claude.mcp.client.*.)
-- @module claude.mcp.client
local core = require "claude.core"
local async = require "claude.async"
local rpc = require "claude.rpc"
local json = require "claude.json"
local errors = require "claude.errors"
local options = require "claude.mcp.client.options"
local inbound = require "claude.mcp.client.inbound"

local M = {}

local misuse, public = errors.misuse, errors.public
local pack = table.pack
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
  if method == "notifications/tools/list_changed" then self.tools_cache = nil end
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

-- Opens a transport and its peer; returns the connection | nil, err, kind.
local function open_connection(self, kind)
  local conn = { alive = true }
  local events = {
    message = function(msg)
      local peer = conn.peer
      if not peer then return end
      if type(msg) == "table" and msg.method == nil and msg.id ~= nil
        and not (math.type(msg.id) == "integer" and msg.id >= 1 and msg.id <= peer.counter)
        and peer.pending:get(msg.id) == nil then
        return report(self, errors.new("protocol", "the MCP server '" .. self.name
          .. "' answered request id " .. tostring(msg.id) .. ", which was never sent"))
      end
      local ok, why = peer:receive(msg)
      if not ok then
        report(self, errors.new("protocol", "the MCP server '" .. self.name
          .. "' sent an invalid message: " .. tostring(why)))
      end
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
        peer:notify("notifications/cancelled", { requestId = id, reason = err.message })
        cb(nil, err)
      end
    end,
    closed = function(err) on_lost(self, conn, err) end,
    -- a request the transport could not deliver (HTTP: its POST failed)
    failed = function(id, err)
      local peer = conn.peer
      local cb = peer and peer.pending:take(id)
      if cb then
        cb(nil, err)
      end
    end,
  }
  local mod = require(transports[kind])
  local t, err, ekind = mod.open(self.opts, events, self.provider)
  if not t then return nil, err, ekind end
  conn.transport = t
  conn.peer = rpc.new {
    codec = rpc.jsonrpc,
    name = "MCP server '" .. self.name .. "'",
    send = function(msg) return t:send(msg) end,
    handlers = handlers_for(self),
    on_notification = function(method, params) on_notification(self, method, params) end,
    context = { client = self },
    timeout = self.opts.timeout,
  }
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

-- The handshake on a new connection.
local function initialize(self, conn)
  set_state(self, "initializing")
  local o = self.opts
  local offered = o.protocol_version or M.PROTOCOL_VERSION
  local r, err, kind = peer_request(self, conn.peer, "initialize", {
    protocolVersion = offered, capabilities = capabilities_of(o),
    clientInfo = o.client_info or { name = "claudelua", version = core.version },
  }, o.connect_timeout)
  if not r then return nil, err, kind end
  local version = type(r) == "table" and r.protocolVersion
  if not SUPPORTED[version] then
    return errors.fail("protocol", string.format("the MCP server '%s' answered initialize "
      .. "with protocol version %s; this client supports %s", self.name,
      type(version) == "string" and ("'" .. version .. "'") or "none",
      table.concat(M.PROTOCOL_VERSIONS, ", ")), { server_version = version })
  end
  if conn.transport.set_protocol_version then conn.transport:set_protocol_version(version) end
  self.protocol_version = version
  self.server_info = type(r.serverInfo) == "table" and r.serverInfo or {}
  self.capabilities = type(r.capabilities) == "table" and r.capabilities or {}
  self.instructions = type(r.instructions) == "string" and r.instructions or nil
  local ok, nerr, nkind = conn.peer:notify("notifications/initialized")
  if not ok then return nil, nerr, nkind end
  if conn.transport.initialized then conn.transport:initialized() end
  return true
end

-- One attempt: a new connection, initialized. Sets self.conn.
local function attempt(self)
  local conn, err, kind = open_connection(self, self.transport_kind)
  if not conn then return nil, err, kind end
  self.conn = conn
  local ok, ierr, ikind = initialize(self, conn)
  if not ok then
    self.conn = nil
    close_connection(conn, "the handshake failed")
    return nil, ierr, ikind
  end
  return true
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

local function connect(opts)
  local o, kind = options.check(opts, "connect")
  local self = setmetatable({
    opts = o, name = o.name, transport_kind = kind, state = "disconnected",
    progress = {}, reconnects = 0, closed = false, error = false,
    ready = async.event(), conn = nil, next_token = 0,
  }, Client)
  if o.auth then
    self.provider = require("claude.oauth.provider").new(o.auth, o.url, { name = o.name,
      report = function(e) report(self, e) end,
      protocol_version = function()
        return self.protocol_version or o.protocol_version or M.PROTOCOL_VERSION
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
  return self
end

--- Connects to an MCP server and runs the handshake.
-- @tparam table opts stdio: `command`, `args`, `env`, `cwd`, `stderr`; HTTP:
--   `url`, `headers`, `transport` (`"streamable_http"` or `"sse"`; default:
--   Streamable HTTP, falling back to HTTP+SSE for a server that refuses
--   it); both: `name`, `timeout` (seconds per call, default 60),
--   `connect_timeout` (30), `max_retries` (3), `retry_delay` (0.5),
--   `max_retry_delay` (30), `max_message_size` (bytes), `auth` (OAuth for
--   an HTTP server, see claude.oauth), `protocol_version`,
--   `client_info`, `on_notification`, `on_sampling`, `on_elicitation`,
--   `roots`, `on_roots`, `on_state`, `on_error`. See docs/mcp-client.md.
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

-- A request on the current connection: the result | nil, err, kind.
local function request(self, method, params, timeout)
  local peer, err, kind = peer_of(self, timeout or nil)
  if not peer then return nil, err, kind end
  return peer_request(self, peer, method, params, timeout)
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

-- A list method: every page, followed by its cursor.
local function list_all(self, method, field, opts, fname)
  check_self(self, fname)
  check_opts(opts, 1, fname)
  local timeout = timeout_of(self, opts, fname)
  local out, cursor = json.array(), nil
  repeat
    local r, err, kind = request(self, method, cursor and { cursor = cursor } or nil, timeout)
    if not r then return nil, err, kind end
    if type(r) ~= "table" or type(r[field]) ~= "table" then
      return errors.fail("protocol", string.format("the MCP server '%s' answered %s without "
        .. "'%s'", self.name, method, field))
    end
    for _, item in ipairs(r[field]) do out[#out + 1] = item end
    cursor = r.nextCursor
    if cursor == json.null then cursor = nil end
  until cursor == nil
  return out
end

--- The server's tools, every page of them.
-- @tparam[opt] table opts `{ timeout = s }`
-- @return a list of tool descriptions | nil, err, kind
-- @function list_tools
Client.list_tools = public(function(self, opts)
  local tools, err, kind = list_all(self, "tools/list", "tools", opts, "list_tools")
  if tools then self.output_schemas = M.output_schemas(tools) end
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

local CALL_OPTIONS = { timeout = true, on_progress = true, meta = true }

local function call_tool(self, name, args, opts)
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
  local params = { name = name, arguments = args or jobject() }
  local on_progress = opts and opts.on_progress
  if on_progress ~= nil and type(on_progress) ~= "function" then
    errors.bad_field("on_progress", "call_tool", "function expected, got %s",
      errors.typename(on_progress))
  end
  local meta = opts and opts.meta
  if on_progress then
    local token = self.next_token + 1
    self.next_token = token
    local m = {}
    for k, v in pairs(meta or {}) do m[k] = v end
    m.progressToken = token
    params._meta = m
    self.progress[token] = on_progress
    local r = table.pack(pcall(request, self, "tools/call", params, timeout))
    self.progress[token] = nil
    if not r[1] then error(r[2], 0) end
    return M.check_output(self, name, table.unpack(r, 2, r.n))
  end
  if meta then params._meta = meta end
  return M.check_output(self, name, request(self, "tools/call", params, timeout))
end

-- Output validation. The `outputSchema`s the last `list_tools` saw (the tool descriptions
-- themselves go to the caller untouched), each compiled when a result first needs it: a
-- result of such a tool whose `structuredContent` is missing or does not match is a
-- `validation` failure, as the server side refuses to send it (claude.mcp.content). A schema
-- that cannot be compiled fails the call too: unchecked is not valid.
local schema_mod -- claude.schema, loaded on the first check

--- The output schemas of a tools/list answer, by tool name (the tables as listed).
function M.output_schemas(tools)
  local out = {}
  for _, t in ipairs(tools) do
    if type(t) == "table" and type(t.name) == "string" and type(t.outputSchema) == "table" then
      out[t.name] = { schema = t.outputSchema }
    end
  end
  return out
end

--- A call's results, or a `validation` failure when its structured result breaks the tool's
-- output schema.
function M.check_output(self, name, r, ...)
  local known = type(r) == "table" and self.output_schemas and self.output_schemas[name]
  if not known or r.isError == true then return r, ... end
  if not known.validate then
    schema_mod = schema_mod or require "claude.schema"
    local v, err = schema_mod.compile(known.schema)
    known.validate = v or function()
      return nil, errors.new("validation", "its outputSchema cannot be checked: " .. err.message)
    end
  end
  local sc = r.structuredContent
  local ok, err
  if sc == nil or sc == json.null then
    err = errors.new("validation", "the result has no structuredContent")
  else
    ok, err = known.validate(sc)
  end
  if ok then return r end
  return errors.fail("validation", string.format("the MCP server '%s' returned a result for "
    .. "tool '%s' that does not match its outputSchema: %s", self.name, name, err.message))
end

--- Calls a tool. A result with `isError` is a result (the tool failed, the
-- call did not). When `list_tools` has listed the tool with an `outputSchema`, a result
-- whose `structuredContent` is missing or does not match it is `nil, err, "validation"`.
-- @tparam string name
-- @tparam[opt] table args
-- @tparam[opt] table opts `{ timeout = s, on_progress = fn(progress, total,
--   message), meta = { ... } }`
-- @return the CallToolResult | nil, err, kind
-- @function call_tool
Client.call_tool = public(call_tool)

local function string_arg(v, n, fname)
  if type(v) ~= "string" then
    misuse("bad argument #%d to '%s' (string expected, got %s)", n, fname, errors.typename(v))
  end
end

--- Reads a resource.
-- @return the ReadResourceResult (`contents`) | nil, err, kind
-- @function read_resource
Client.read_resource = public(function(self, uri, opts)
  check_self(self, "read_resource")
  string_arg(uri, 1, "read_resource")
  check_opts(opts, 2, "read_resource")
  return request(self, "resources/read", { uri = uri }, timeout_of(self, opts, "read_resource"))
end)

local function simple(method, fname, field)
  return public(function(self, value, opts)
    check_self(self, fname)
    string_arg(value, 1, fname)
    check_opts(opts, 2, fname)
    local r, err, kind = request(self, method, { [field] = value }, timeout_of(self, opts, fname))
    if r == nil then return nil, err, kind end
    return true
  end)
end

--- Subscribes to a resource's updates (`notifications/resources/updated`).
-- @function subscribe
Client.subscribe = simple("resources/subscribe", "subscribe", "uri")
--- Ends a subscription.
-- @function unsubscribe
Client.unsubscribe = simple("resources/unsubscribe", "unsubscribe", "uri")
--- Sets the server's log level (`notifications/message` below it stop).
-- @function set_log_level
Client.set_log_level = simple("logging/setLevel", "set_log_level", "level")

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
  return request(self, "prompts/get", { name = name, arguments = args },
    timeout_of(self, opts, "get_prompt"))
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
  if not r then return nil, err, kind end
  return type(r) == "table" and r.completion or r
end)

--- Pings the server.
-- @return true | nil, err, kind
-- @function ping
Client.ping = public(function(self, opts)
  check_self(self, "ping")
  check_opts(opts, 1, "ping")
  local r, err, kind = request(self, "ping", nil, timeout_of(self, opts, "ping"))
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

--- Tells the server the roots changed (`notifications/roots/list_changed`).
function Client:roots_changed()
  return self:notify("notifications/roots/list_changed")
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
