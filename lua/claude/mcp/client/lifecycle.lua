--- The MCP client's lifecycle: a connection opened in the era its server speaks (the
-- legacy handshake, or the modern era's server/discover: claude.mcp.client.negotiate), a
-- connection lost (the calls in flight fail: their outcome is unknown, none is replayed)
-- and the reconnects, with backoff, one at a time.
-- @module claude.mcp.client.lifecycle
local core = require "claude.core"
local PROTOCOL_VERSIONS, PROTOCOL_VERSION = core.MCP_PROTOCOL_VERSIONS, core.MCP_PROTOCOL_VERSION
local async = require "claude.async"
local errors = require "claude.errors"
local era = require "claude.mcp.era"
local class = require "claude.mcp.client.class"
local set_state, report = class.set_state, class.report
local negotiate = require "claude.mcp.client.negotiate"
local modern = require "claude.mcp.client.modern"
local connection = require "claude.mcp.client.connection"
local peer_request = require("claude.mcp.client.request").peer_request
local trace = require "claude.trace"

local SUPPORTED = {}
for _, v in ipairs(PROTOCOL_VERSIONS) do SUPPORTED[v] = true end

local M = {}

local on_lost -- (self, conn, err): below

-- The legacy handshake on a new connection: `initialize`, `notifications/initialized`.
local function initialize(self, conn, offered)
  set_state(self, "initializing")
  local o = self.opts
  local params = { protocolVersion = offered, capabilities = self.offered,
    clientInfo = self.client_info }
  -- traced: a CLIENT span, its context in the request's _meta (the server's initialize span
  -- is its child)
  local span = trace.enabled and require("claude.trace.mcp").client_span(self, "initialize",
    params)
  local r, err, kind = peer_request(self, conn.peer, "initialize", params, o.connect_timeout)
  if span then require("claude.trace.mcp").client_done(span, r, err, kind) end
  if r == nil then return nil, err, kind end
  local version = type(r) == "table" and r.protocolVersion
  if not SUPPORTED[version] then
    return errors.fail("protocol", string.format("the MCP server '%s' answered initialize "
      .. "with protocol version %s; this client supports %s", self.name,
      type(version) == "string" and ("'" .. version .. "'") or "none",
      table.concat(PROTOCOL_VERSIONS, ", ")), { server_version = version })
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
    return initialize(self, conn, mode.version or PROTOCOL_VERSION)
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
      return initialize(self, conn, PROTOCOL_VERSION)
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

--- One attempt: a new connection, in its era. Sets self.conn.
function M.attempt(self)
  local conn, err, kind = connection.open(self, self.transport_kind, on_lost)
  if not conn then return nil, err, kind end
  self.conn = conn
  self.cache:clear()
  self.tool_headers = nil
  local ok, ierr, ikind = handshake(self, conn)
  if ok == "respawn" then
    -- the server exited on the probe (or cannot go on after it): the legacy handshake
    -- on a new process
    connection.close(conn, "the server exited on server/discover")
    conn, err, kind = connection.open(self, self.transport_kind, on_lost)
    if not conn then
      self.conn = nil
      return nil, err, kind
    end
    self.conn = conn
    ok, ierr, ikind = initialize(self, conn, PROTOCOL_VERSION)
  end
  if not ok then
    self.conn = nil
    connection.close(conn, "the handshake failed")
    return nil, ierr, ikind
  end
  return true
end

--- A connection is up: in the modern era, the listen its notifications need.
function M.opened(self)
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
      local ok, aerr = M.attempt(self)
      if self.closed then
        if self.conn then connection.close(self.conn) end
        return
      end
      if ok then
        self.reconnecting = nil
        set_state(self, "connected")
        self.ready:set()
        M.opened(self)
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

-- The connection is gone by itself: the calls in flight fail, the client reconnects.
on_lost = function(self, conn, err)
  if not conn.alive then return end
  conn.alive = false
  -- the client's state first: a call failed below may look at it at once
  if self.conn == conn and not self.closed then
    self.conn = nil
    modern.changed(self) -- (the usual call's way wrote on this connection)
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

return M
