--- The sessions of the Streamable HTTP transport (claude.mcp.server.http), protocol revisions
-- 2025-03-26 to 2025-11-25: each one client's `claude.mcp.server.connection`, opened by an
-- `initialize` POST and named by `Mcp-Session-Id` after it, with its POSTs in flight
-- (claude.mcp.server.http_exchange), its GET stream and the streams it keeps for
-- `Last-Event-ID` (claude.mcp.server.events), the bytes they keep (`history_bytes`), and its
-- place among the transport's sessions: in the order of their last request (an LRU list:
-- a full table evicts the least recently used idle one, without a scan). The sweep closes
-- the idle ones.
-- @module claude.mcp.server.http_sessions
local core = require "claude.core"
local connection = require "claude.mcp.server.connection"
local sse = require "claude.mcp.server.events"
local exchange = require "claude.mcp.server.http_exchange"

local M = {}

local fmt, now = string.format, core.now
local fail, route, send_result, close_stream = exchange.fail, exchange.route,
  exchange.send_result, exchange.close_stream

--- The protocol versions a client may name in `MCP-Protocol-Version`.
M.PROTOCOL_VERSIONS = { ["2024-11-05"] = true, ["2025-03-26"] = true, ["2025-06-18"] = true,
  ["2025-11-25"] = true }

--- Say `msg` to the transport `self`'s log (its `log` option), else to stderr.
local function log(self, msg)
  local f = self.opts.log
  if f then return f(msg) end
  io.stderr:write("claude.mcp.server.http: ", msg, "\n")
end

-- 128 bits from libcrypto's CSPRNG: a session id is the only secret of an open server.
local function new_session_id()
  local bytes = assert(core.random_bytes(16))
  return (bytes:gsub(".", function(c) return fmt("%02x", c:byte()) end))
end

-- The sessions in the order of their last request (a doubly-linked list: self.lru_head is
-- the least recently used), so that a full table finds its victim without a scan.
local function lru_unlink(self, s)
  local p, n = s.lru_prev, s.lru_next
  if p then p.lru_next = n else self.lru_head = n end
  if n then n.lru_prev = p else self.lru_tail = p end
  s.lru_prev, s.lru_next = nil, nil
end

local function lru_push(self, s)
  local tail = self.lru_tail
  s.lru_prev, s.lru_next = tail, nil
  if tail then tail.lru_next = s else self.lru_head = s end
  self.lru_tail = s
end

local function close_session(self, session, reason)
  if self.sessions[session.id] == session then
    self.sessions[session.id] = nil
    self.nsessions = self.nsessions - 1
    lru_unlink(self, session)
  end
  self.calls = self.calls - session.calls
  session.calls = 0
  for _, ex in pairs(session.posts) do
    if not ex.done then
      ex.done = true
      if ex.stream then
        ex.stream:detach(true)
      elseif ex.res:state() == "new" then
        fail(ex.res, 404, -32001, "Session terminated: " .. reason)
      end
    end
  end
  session.posts = {}
  for _, st in pairs(session.streams) do st:detach(true) end
  session.standalone:detach(true)
  session.streams, session.kept = {}, {}
  session.keep.bytes = 0
end

-- The session's streams keep more than `history_bytes`: notifications (the GET stream) give
-- way first to the answers of calls; then the oldest complete streams go, then the oldest
-- events of the stream written to, then those of the others.
local function over_history(session, keep, stream)
  local kept, streams = session.kept, session.streams
  if stream == session.standalone then stream:trim(keep.bytes - keep.max) end
  while keep.bytes > keep.max and #kept > 0 do
    local n = table.remove(kept, 1)
    local old = streams[n]
    streams[n] = nil
    if old then old:forget() end
  end
  if keep.bytes > keep.max then stream:trim(keep.bytes - keep.max) end
  if keep.bytes > keep.max then
    local st = session.standalone
    if st and st ~= stream then st:trim(keep.bytes - keep.max) end
    for _, other in pairs(streams) do
      if keep.bytes <= keep.max then break end
      other:trim(keep.bytes - keep.max)
    end
  end
end

--- Open a session of transport `self` on endpoint `ep` at `path` (`who`: the verified token's
-- `{info, principal}`, or nil), its connection's messages going to its POSTs and GET stream;
-- a stateless one serves one POST and has no id. Kept only by `keep`. `address`: the client's
-- (of its initialize), `ctx.client_address`.
local function new_session(self, ep, path, stateless, who, address)
  local session = { transport = self, ep = ep, path = path, posts = {}, streams = {}, kept = {},
    nstreams = 0, calls = 0, last = now(), stateless = stateless,
    principal = who and who.principal }
  session.keep = { bytes = 0, max = self.opts.history_bytes,
    over = function(keep, stream) return over_history(session, keep, stream) end }
  if not stateless then
    session.id = new_session_id()
    session.standalone = sse.new(0, self.opts.history, self.opts.retry, session.keep)
    session.standalone.delivered = 0
  end
  -- made once per session: checked and lower-cased once, not on every answer
  session.json_headers = core.http_headers { ["content-type"] = "application/json",
    ["mcp-session-id"] = session.id }
  session.conn = connection.new {
    server = ep.server, stateless = stateless, session = session.id, client_address = address,
    request_timeout = self.opts.request_timeout, transport = "tcp",
    limits = self.opts, send = function(msg, related) return route(session, msg, related) end,
    send_result = function(id, result, related, ends, text)
      return send_result(session, id, result, related, ends, text)
    end,
    close_stream = function(related) return close_stream(session, related) end,
    on_close = function(reason)
      if not stateless then close_session(self, session, reason) end
    end,
  }
  return session
end

-- Why the request's `MCP-Protocol-Version` is refused: nil when absent or one we speak.
local function version_refusal(headers)
  local v = headers["mcp-protocol-version"]
  if v and not M.PROTOCOL_VERSIONS[v] then
    return fmt("Bad Request: unsupported MCP-Protocol-Version '%s'", v)
  end
end

--- Whether the request's `MCP-Protocol-Version` (if any) is one we speak; else answered 400.
local function check_version(res, headers)
  local refusal = version_refusal(headers)
  if refusal then
    fail(res, 400, -32000, refusal)
    return false
  end
  return true
end

--- The session a request names (Mcp-Session-Id) in a protocol version we speak, or nil,
-- status, code, message. A session opened with a token belongs to its subject: another
-- subject's token gets the answer of an unknown session (404), which says nothing of whether
-- the id exists. A session belongs to the path it was opened at: the first server is served
-- at /mcp and /mcp/NAME, and a session of one is unknown at the other.
local function session_of(self, req, who, path)
  local headers = req.headers
  local sid = headers["mcp-session-id"]
  if not sid then return nil, 400, -32000, "Bad Request: Mcp-Session-Id header is required" end
  local session = self.sessions[sid]
  if not session or session.path ~= path
      or session.principal ~= (who and who.principal) then
    return nil, 404, -32001, "Session not found"
  end
  local refusal = version_refusal(headers)
  if refusal then return nil, 400, -32000, refusal end
  return session
end

-- A session in use now: the last to go when the sessions are full.
local function use(self, session)
  session.last = now()
  if session ~= self.lru_tail then
    lru_unlink(self, session)
    lru_push(self, session)
  end
end

--- The session a request names, in use now; or nil after answering 400 or 404.
local function find_session(self, req, res, who, path)
  local session, status, code, message = session_of(self, req, who, path)
  if not session then
    fail(res, status, code, message)
    return nil
  end
  use(self, session)
  return session
end

-- The least recently used session that holds nothing (no request in flight, no GET stream
-- open; a POST stream open has its requests in flight), or nil. A busy one on the way goes
-- to the end: it is in use.
local function idle_session(self)
  for _ = 1, self.nsessions do
    local s = self.lru_head
    if not s then return nil end
    if next(s.posts) == nil and s.standalone.res == nil then return s end
    lru_unlink(self, s)
    lru_push(self, s)
  end
  return nil
end

-- A GET stream opened with a token that has expired since: ended (the client resumes it
-- with a fresh token).
local function expire_stream(st, clock)
  local exp = st.expires_at
  if exp and st.res and exp <= clock then st:detach(true) end
end

--- Closes sessions idle for longer than session_timeout: nothing in flight, no stream open;
-- ends the streams whose token expired.
local function sweep(self)
  local t, limit, clock = now(), self.opts.session_timeout, os.time()
  local idle = {}
  for _, s in pairs(self.sessions) do
    expire_stream(s.standalone, clock)
    for _, st in pairs(s.streams) do expire_stream(st, clock) end
    local busy = s.standalone.res ~= nil or next(s.posts) ~= nil
    if not busy then
      for _, st in pairs(s.streams) do if st.res then busy = true end end
    end
    if limit and not busy and t - s.last > limit then idle[#idle + 1] = s end
  end
  for _, s in ipairs(idle) do
    s.conn:close("session expired")
    if self.opts.log then self.opts.log(fmt("session %s expired", s.id)) end
  end
  if self.evicted > 0 then
    log(self, fmt("%d idle sessions evicted to open new ones (max_sessions %d)", self.evicted,
      self.opts.max_sessions))
    self.evicted = 0
  end
end

--- A session opened now is kept: among the transport's, the most recently used.
function M.keep(self, session)
  self.sessions[session.id] = session
  self.nsessions = self.nsessions + 1
  lru_push(self, session)
end

M.new, M.of, M.find, M.use, M.idle, M.sweep, M.check_version, M.log = new_session, session_of,
  find_session, use, idle_session, sweep, check_version, log

return M
