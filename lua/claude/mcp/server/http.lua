--- The Streamable HTTP transport of an MCP server: protocol revisions 2025-03-26 to 2025-11-25
-- (sessions, here) and 2026-07-28 (no session: claude.mcp.server.http_modern), per request.
--
-- (Over 600 lines: sessions, the exchanges of a POST, the GET stream, expiry, the bounds
-- and the routing of authenticated requests all act on one session table; the event streams
-- (events.lua), the Host/Origin checks (origin.lua), the bearer checks (auth.lua), the
-- HTTP server (claude.http.server) and the MCP connection (connection.lua) are apart.)
--
--     local t = assert(http.listen({ {"calc", calc}, {"files", files} },
--       { host = "127.0.0.1", port = 8080 }))
--     -- POST/GET/DELETE http://127.0.0.1:8080/mcp (calc, the first) and /mcp/calc, /mcp/files
--     t:close()
--
-- Each session (an `initialize` POST without `Mcp-Session-Id`) is one
-- `claude.mcp.server.connection`; its messages are routed by the id of the request they belong to:
-- a POST's answers, progress, logs and requests to the client go back on that POST, the rest
-- on the session's GET stream. A POST is answered with JSON when its requests are answered
-- before anything else is said, and becomes an event stream (`text/event-stream`) as soon as
-- something else is (progress, a log, a request to the client): the common call costs no
-- stream. Streams keep their events for `Last-Event-ID`.
--
-- Every resource a client can make it hold is bounded (docs/mcp-server.md, "Bounds"): bytes
-- queued per connection and a write timeout (claude.http.server), requests in flight per POST,
-- per session and in the server (both eras), a batch's size, the history of a session's
-- streams in bytes, sessions (the least recently used idle one evicted); checked with
-- counters, nothing per call but a few comparisons.
--
-- A server with an `auth` option (or a transport given one) serves only requests with a
-- bearer token its verifier accepts (`claude.mcp.server.auth`): the check runs in a task of
-- the request, a session belongs to the subject that opened it, and the protected resource
-- metadata is served at `/.well-known/oauth-protected-resource/mcp`. See docs/mcp-server.md
-- and docs/oauth.md.
-- @module claude.mcp.server.http
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local errors = require "claude.errors"
local connection = require "claude.mcp.server.connection"
local modern = require "claude.mcp.server.modern"
local limits = require "claude.mcp.server.limits"
local trim = require "claude.mcp.server.trim"
local http_modern = require "claude.mcp.server.http_modern"
local state = require "claude.mcp.server.state"
local era = require "claude.mcp.era"
local sse = require "claude.mcp.server.events"
local origin = require "claude.mcp.server.origin"
local tool = require "claude.mcp.tool"
local auth = require "claude.mcp.server.auth"
local http_server = require "claude.http.server"
local wire = require "claude.mcp.wire"

local M = {}

local encode, decode, concat = json.encode, json.decode, table.concat
local answer_text, error_text, unencodable = wire.answer_text, wire.error_text, wire.unencodable
local envelope_read, MCP_CALL = core.envelope_read, core.MCP_CALL
local LATEST_MODERN = era.LATEST_MODERN
local call = require "claude.mcp.call"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local ID <const>, META <const>, VERSION <const>, AUTH <const> = 1, 4, 7, 11
local type, fmt, pairs, math_type = type, string.format, pairs, math.type

--- The protocol versions a client may name in `MCP-Protocol-Version`.
M.PROTOCOL_VERSIONS = { ["2024-11-05"] = true, ["2025-03-26"] = true, ["2025-06-18"] = true,
  ["2025-11-25"] = true }

--- Defaults of the options. The bounds (docs/mcp-server.md, "Bounds") are sized so that a
-- server on the public internet holds at most a few hundred MiB whatever its clients do.
M.DEFAULTS = { host = "127.0.0.1", port = 0, path = "/mcp", max_body = 16 * 1024 * 1024,
  session_timeout = 1800, history = 1000, retry = 1000, resume_grace = 30,
  max_sessions = 1024, max_calls = 1024, max_session_calls = 64, max_post_calls = 32,
  max_batch = 64, history_bytes = 256 * 1024, high_water = 64 * 1024,
  max_queued = 1024 * 1024, write_timeout = 60, trim = true }

-- The options that are bounds: positive numbers (math.huge: none), checked by listen.
local BOUNDS = { "max_sessions", "max_calls", "max_session_calls", "max_post_calls",
  "max_batch", "history_bytes", "high_water", "max_queued", "write_timeout",
  "max_connections" }
-- (and what a client asks the server to remember: tasks, subscriptions; both eras)
for k, v in pairs(limits.DEFAULTS) do M.DEFAULTS[k], BOUNDS[#BOUNDS + 1] = v, k end

-- Every option listen knows: a name it does not know is a misuse (a typo would otherwise
-- leave a bound at its default without a word).
local KNOWN = { allowed_hosts = true, allowed_origins = true, dns_rebinding_protection = true,
  auth = true, log = true, node = true, request_timeout = true, state_key = true,
  state_ttl = true, stateless = true, max_connections = true, sweep_every = true }
for k in pairs(M.DEFAULTS) do KNOWN[k] = true end

-- Complete streams a session keeps for clients that left them before their end.
local MAX_KEPT = 64

local ALLOW_STATEFUL, ALLOW_STATELESS = "GET, POST, DELETE", "POST"

local check_exposure, uses_auth -- (o, servers)

local Transport = { __name = "claude.mcp.HttpTransport" }
Transport.__index = Transport
Transport.__tostring = function(t)
  local n = 0
  for _ in pairs(t.sessions) do n = n + 1 end
  return fmt("claude.mcp.HttpTransport (%s, %d sessions)", t.closed and "closed" or t:url(), n)
end

---------------------------------------------------------------------------------------------
-- Answers that are not the connection's
---------------------------------------------------------------------------------------------

local function fail(res, status, code, message, headers)
  headers = headers or {}
  headers["content-type"] = "application/json"
  res:respond(status, headers, error_text(nil, code, message))
end

local function log(self, msg)
  local f = self.opts.log
  if f then return f(msg) end
  io.stderr:write("claude.mcp.server.http: ", msg, "\n")
end

-- Whether an Accept header names `want` (or a wildcard of it); parameters are dropped, and
-- empty members of the list ("a, , b", a trailing comma) skipped, as RFC 9110 5.6.1 asks.
local function accepts(value, want)
  if not value then return false end
  for item in value:gmatch("[^,]+") do
    local t = item:match("^%s*([^;%s]+)")
    t = t and t:lower()
    if t == want or t == "*/*" or t == want:match("^[^/]+") .. "/*" then return true end
  end
  return false
end

local function media_type(value)
  return value and (value:match("^%s*([^;%s]+)") or ""):lower()
end

-- A client sends the same Accept and Content-Type on every POST: the verdict on each value
-- seen is kept (at most MEMO values of up to MEMO_LEN bytes, then all forgotten), so the
-- common POST runs no pattern. The verdicts are f's, to the letter; nil (no header) is false.
local MEMO, MEMO_LEN = 64, 256

local function memoized(f)
  local cache, n = {}, 0
  return function(value)
    if value == nil then return false end
    local v = cache[value]
    if v == nil then
      v = f(value)
      if #value <= MEMO_LEN then
        if n >= MEMO then cache, n = {}, 0 end
        cache[value], n = v, n + 1
      end
    end
    return v
  end
end

-- Whether a POST's Accept names both JSON and event streams.
local accepts_post = memoized(function(value)
  return accepts(value, "application/json") and accepts(value, "text/event-stream")
end)

-- Whether a Content-Type is application/json (parameters aside).
local is_json = memoized(function(value) return media_type(value) == "application/json" end)

---------------------------------------------------------------------------------------------
-- Sessions
---------------------------------------------------------------------------------------------

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

local function sse_headers(session)
  return { ["content-type"] = "text/event-stream", ["cache-control"] = "no-cache",
    ["mcp-session-id"] = session.id }
end

-- A POST's requests, in their order: the JSON answers or the event stream they go to.
local Exchange = {}
Exchange.__index = Exchange

local function primes(session)
  local v = session.conn and session.conn.protocol_version
  return v ~= nil and v >= "2025-11-25"
end

local function release(ex)
  ex.done = true
  local session = ex.session
  local posts, t = session.posts, session.transport
  for id in pairs(ex.pending) do
    if posts[id] == ex then -- no longer in flight
      posts[id] = nil
      session.calls = session.calls - 1
      t.calls = t.calls - 1
    end
  end
  session.last = core.now()
  if session.stateless then session.conn:close("request answered") end
end

-- Answers a POST with JSON: its answers (their JSON texts), and `last` when given (the
-- answer that ends it, not yet among them).
local function respond_json(ex, last)
  local answers, body = ex.answers, last
  if ex.batch then
    answers[#answers + 1] = last
    body = "[" .. concat(answers, ",") .. "]"
  elseif body == nil then
    body = answers[1]
  end
  ex.res:respond(200, ex.session.json_headers, body)
  release(ex)
end

-- Turns a POST into an event stream (something other than its answers is to be sent).
local function start_sse(ex)
  local session, t = ex.session, ex.session.transport
  local n = session.nstreams + 1
  session.nstreams = n
  local stream = sse.new(n, t.opts.history, t.opts.retry, session.keep)
  ex.stream = stream
  if not session.stateless then session.streams[n] = stream end
  stream.primed = primes(session)
  if ex.res:state() == "new" then stream:attach(ex.res, sse_headers(session), stream.primed) end
  for i = 1, #ex.answers do stream:send_text(ex.answers[i]) end
  ex.answers = {}
end

local function end_stream(ex)
  local stream = ex.stream
  stream.done = true
  local session = ex.session
  if stream.res then
    stream:detach(true)
    session.streams[stream.number] = nil
  elseif not session.stateless then
    -- kept for a client that resumes; the oldest complete ones go first
    local kept = session.kept
    kept[#kept + 1] = stream.number
    if #kept > MAX_KEPT then
      local n = table.remove(kept, 1)
      local old = session.streams[n]
      session.streams[n] = nil
      if old then old:forget() end
    end
  end
  release(ex)
end

-- One message of POST `ex`'s requests, as its JSON text `data` (`id`: the id of an answer,
-- nil for any other message): the answer of a request of the POST ends its part of it; any
-- other message turns the POST into an event stream.
local function exchange_send(ex, data, id)
  local pending = ex.pending
  if id ~= nil and pending[id] then
    pending[id] = nil
    local session = ex.session
    session.posts[id] = nil -- no longer in flight
    session.calls = session.calls - 1
    local t = session.transport
    t.calls = t.calls - 1
    local left = ex.left - 1
    ex.left = left
    local stream = ex.stream
    if stream then
      stream:send_text(data)
      if left == 0 then end_stream(ex) end
    elseif left == 0 then
      respond_json(ex, data)
    else
      ex.answers[#ex.answers + 1] = data
    end
    return true
  end
  if not ex.stream then start_sse(ex) end
  local stream = ex.stream
  stream:send_text(data)
  -- progress, logs, requests to the client: the call's task waits while its client is
  -- behind (its answer never does)
  if stream.full and stream.res then sse.backpressure(stream, stream.res) end
  return true
end

-- A message of the session's connection, as its JSON text (`id`: an answer's): to the POST
-- it belongs to (`related`, the request's id; an answer's own by default), else to the GET
-- stream.
local function deliver(session, data, id, related)
  if related == nil then related = id end
  local ex = related ~= nil and session.posts[related]
  if ex then return exchange_send(ex, data, id) end
  if session.stateless then return true end -- nowhere to go: no GET stream without a session
  local st = session.standalone
  st:send_text(data)
  if st.res then st.delivered = st.seq end
  return true
end

-- The connection's `send`: a message (a table).
local function route(session, msg, related)
  return deliver(session, encode(msg), msg.method == nil and msg.id or nil, related)
end

-- The connection's `send_result` (a call's answer, no message table made): its JSON text,
-- made in one C call (claude.mcp.wire), goes the way of any message (deliver).
local function send_result(session, id, result, related, ends, text)
  local data, err = answer_text(id, result, text, ends)
  if data == nil then data = encode(unencodable(id, err)) end
  return deliver(session, data, id, related)
end

local function cancel_pending(ex, reason)
  local conn = ex.session.conn
  for id in pairs(ex.pending) do
    conn:receive { jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = id, reason = reason } }
  end
end

-- The client went away from a POST before its answers: a client that holds an event id may
-- come back (Last-Event-ID) and its calls go on; otherwise they are cancelled, since nobody can
-- ever get their answers.
local function post_closed(ex)
  if ex.done then return end
  local stream = ex.stream
  if stream then
    stream:detach()
    if stream.primed or stream.seq > 0 then return end
  end
  cancel_pending(ex, "the HTTP client disconnected")
end

-- ctx.close_stream() of a call: ends its POST's event stream now, the call going on; the
-- client comes back with Last-Event-ID for the rest (SSE polling). Only a client that was
-- given an event id can come back, so a stream that cannot be primed stays.
local function close_stream(session, related)
  local ex = related ~= nil and session.posts[related]
  if not ex or ex.done or session.stateless then return false end
  if not ex.stream then
    if not primes(session) then return false end
    start_sse(ex)
  end
  local stream = ex.stream
  if not (stream.primed or stream.seq > 0) then return false end
  stream:detach(true)
  return true
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

local function new_session(self, ep, path, stateless, who)
  local session = { transport = self, ep = ep, path = path, posts = {}, streams = {}, kept = {},
    nstreams = 0, calls = 0, last = core.now(), stateless = stateless,
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
    server = ep.server, stateless = stateless, request_timeout = self.opts.request_timeout,
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

---------------------------------------------------------------------------------------------
-- The methods
---------------------------------------------------------------------------------------------

local function check_version(res, headers)
  local v = headers["mcp-protocol-version"]
  if v and not M.PROTOCOL_VERSIONS[v] then
    fail(res, 400, -32000, fmt("Bad Request: unsupported MCP-Protocol-Version '%s'", v))
    return false
  end
  return true
end

-- The session a request names (Mcp-Session-Id), or nil after answering 400 or 404. A
-- session opened with a token belongs to its subject: another subject's token gets the
-- answer of an unknown session (404), which says nothing of whether the id exists. A session
-- belongs to the path it was opened at: the first server is served at /mcp and /mcp/NAME,
-- and a session of one is unknown at the other.
-- The session a request names, and why not (nil, status, code, message): it must name one
-- this transport keeps, of the same path and principal, with a protocol version we speak.
local function session_of(self, req, who, path)
  local sid = req.headers["mcp-session-id"]
  if not sid then return nil, 400, -32000, "Bad Request: Mcp-Session-Id header is required" end
  local session = self.sessions[sid]
  if not session or session.path ~= path
      or session.principal ~= (who and who.principal) then
    return nil, 404, -32001, "Session not found"
  end
  return session
end

-- A session in use: the last to go when the sessions are full (`session.last` set, and it
-- is not the tail already).
local function touch(self, session)
  lru_unlink(self, session)
  lru_push(self, session)
end

local function find_session(self, req, res, who, path)
  local session, status, code, message = session_of(self, req, who, path)
  if not session then
    fail(res, status, code, message)
    return nil
  end
  if not check_version(res, req.headers) then return nil end
  session.last = core.now()
  if session ~= self.lru_tail then touch(self, session) end
  return session
end

-- A request of POST `ex` let in: its answer ends the POST (or its part of it), and it counts
-- in flight in its session and the transport.
local function admit(ex, id)
  local session = ex.session
  ex.pending[id] = true
  session.posts[id] = ex
  session.calls = session.calls + 1
  local t = session.transport
  t.calls = t.calls + 1
end

-- After a POST's requests went to the connection, one still waiting (not `ex.done`) is
-- watched: the client that leaves it cancels them (post_closed).
local function watch_post(ex)
  ex.res.on_close = function() post_closed(ex) end
end

local function valid_message(m)
  if type(m) ~= "table" or m.jsonrpc ~= "2.0" then return false end
  if m.method ~= nil then return type(m.method) == "string" end
  return m.id ~= nil and (m.result ~= nil or m.error ~= nil)
end

-- A request refused past a bound: its answer, with the id.
local function refused(id, message, bound, max)
  return { jsonrpc = "2.0", id = id, error = { code = -32000, message = message,
    data = { bound = bound, max = max } } }
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

-- The endpoint's server of the modern era, made on its first modern request.
local function modern_of(self, ep)
  local m = ep.modern
  if not m then
    m = modern.new(ep.server, { state = self.state, node = self.opts.node, limits = self.opts })
    ep.modern = m
  end
  return m
end

-- A GET or DELETE of the modern era (no session, the header names a modern revision): that
-- era has no stream outside a request and no session to delete.
local function modern_refusal(self, req, res)
  local h = req.headers
  if h["mcp-session-id"] == nil and era.is_modern(h["mcp-protocol-version"]) then
    fail(res, 405, -32000, fmt("Method Not Allowed: protocol %s has no %s (a client listens "
      .. "with subscriptions/listen)", h["mcp-protocol-version"], req.method),
      { allow = self.stateless and ALLOW_STATELESS or ALLOW_STATEFUL })
    return true
  end
  return false
end

local post_message -- (self, ep, req, res, who, path, body)

-- A `tools/call` alone in its POST, its envelope read in C into the transport's call record
-- (core.envelope_read, claude.mcp.call): the legacy era's usual call in a session goes to the
-- connection as the record (Conn:call) when post_message would serve it at once (the session
-- (session_of), the protocol version, no request of its id in flight, room under every
-- bound: post_message's checks, which it makes for any other); any other call is the
-- message it was, served as if decoded.
local function post_call(self, ep, req, res, who, path, rec)
  local version, info, id = rec[VERSION], who and who.info, rec[ID]
  local session = not self.stateless and version == nil and type(rec[META]) ~= "table"
    and session_of(self, req, who, path)
  local pv, o = req.headers["mcp-protocol-version"], self.opts
  if session and (pv == nil or M.PROTOCOL_VERSIONS[pv]) and self.calls + 1 <= o.max_calls
      and session.posts[id] == nil and session.calls + 1 <= o.max_session_calls
      and 1 <= o.max_post_calls then
    session.last = core.now()
    if session ~= self.lru_tail then touch(self, session) end
    local ex = setmetatable({ session = session, res = res, batch = false, answers = {},
      pending = {}, left = 1 }, Exchange)
    admit(ex, id)
    rec[AUTH] = info
    session.conn:call(rec)
    -- the usual call is answered by now (no I/O ran since the request came)
    if not ex.done then watch_post(ex) end
    return
  end
  if version == LATEST_MODERN
      and http_modern.post_call(modern_of(self, ep), req, res, rec, info, self) then
    return
  end
  return post_message(self, ep, req, res, who, path, call.message(rec))
end

local function post(self, ep, req, res, who, path)
  local headers = req.headers
  if not accepts_post(headers.accept) then
    return fail(res, 406, -32000,
      "Not Acceptable: Accept must include application/json and text/event-stream")
  end
  if not is_json(headers["content-type"]) then
    return fail(res, 415, -32000, "Unsupported Media Type: Content-Type must be application/json")
  end
  -- the usual call: its envelope read in C into the call record, no message table made
  -- (envelope_read gives nothing for a body of another shape; then it is decoded whole)
  local rec = self.record
  if envelope_read("request", req.body, rec) == MCP_CALL then
    return post_call(self, ep, req, res, who, path, rec)
  end
  local body, err = decode(req.body)
  if body == nil then
    return fail(res, 400, -32700, "Parse error: " .. tostring(err))
  end
  return post_message(self, ep, req, res, who, path, body)
end

-- A POST's message (or batch), decoded.
post_message = function(self, ep, req, res, who, path, body)
  local headers = req.headers
  local batch = type(body) == "table" and json.is_array(body)
  local list = batch and body or { body }
  local n = #list
  if n == 0 then return fail(res, 400, -32600, "Invalid Request: an empty batch") end
  local o = self.opts
  if batch and n > o.max_batch then
    return fail(res, 400, -32600, fmt("Invalid Request: a batch of %d messages (at most %d: "
      .. "max_batch)", n, o.max_batch))
  end
  local ids, seen, init = {}, {}, false
  for i = 1, n do
    local m = list[i]
    if not valid_message(m) then
      return fail(res, 400, -32600, "Invalid Request: not a JSON-RPC 2.0 message")
    end
    local id = m.id
    if m.method and id ~= nil then
      -- a string or an integer (JSON-RPC 2.0 §4: "Numbers SHOULD NOT contain fractional
      -- parts"; MCP: "string or integer"): 1.5, 1e1000 (inf) and 2^63 (no Lua integer)
      -- could not name their answer, which the router gives id null
      if type(id) ~= "string" and math_type(id) ~= "integer" then
        return fail(res, 400, -32600, "Invalid Request: a request id must be a string or an "
          .. "integer")
      end
      -- answers find their POST by the id of their request: two requests with one id
      -- would leave the POST waiting for an answer that went elsewhere
      if seen[id] then
        return fail(res, 400, -32600, "Invalid Request: two requests of the batch have one id")
      end
      seen[id] = true
      ids[#ids + 1] = id
      if m.method == "initialize" then init = true end
    end
  end
  local nids = #ids
  -- the modern era: one message per POST, no session (claude.mcp.server.http_modern)
  if not batch and modern.is_modern(body, headers["mcp-protocol-version"]) then
    return http_modern.post(modern_of(self, ep), req, res, body, who and who.info, self)
  end
  if batch then
    for i = 1, #list do
      if modern.is_modern(list[i]) then
        return fail(res, 400, -32600, "Invalid Request: a batch cannot carry requests of "
          .. "protocol " .. era.MODERN .. " and later")
      end
    end
  end
  -- requests in flight in the whole server: past max_calls nothing of the POST is served
  if nids > 0 and self.calls + nids > o.max_calls then
    return fail(res, 503, -32000, fmt("Service Unavailable: %d requests are in flight "
      .. "(max_calls %d); retry later", self.calls, o.max_calls), { ["retry-after"] = "1" })
  end
  local session
  if self.stateless then
    if not check_version(res, headers) then return end
    session = new_session(self, ep, path, true, who)
  elseif init then
    if #list > 1 then
      return fail(res, 400, -32600, "Invalid Request: initialize must be sent alone")
    end
    if headers["mcp-session-id"] then
      return fail(res, 400, -32600, "Invalid Request: initialize must not carry Mcp-Session-Id "
        .. "(the session is already initialized)")
    end
    if self.nsessions >= o.max_sessions then
      -- full: the least recently used idle session goes (its client gets 404 and opens
      -- another, as the specification says); when every one is busy, this one is refused
      local victim = idle_session(self)
      if not victim then
        return fail(res, 503, -32000, fmt("Service Unavailable: %d sessions are open and "
          .. "busy (max_sessions); retry later", self.nsessions), { ["retry-after"] = "1" })
      end
      victim.conn:close("session evicted (max_sessions)")
      self.evicted = self.evicted + 1 -- said by the sweep, once for all
    end
    session = new_session(self, ep, path, false, who)
  else
    session = find_session(self, req, res, who, path)
    if not session then return end
    for i = 1, #ids do
      if session.posts[ids[i]] then
        return fail(res, 400, -32600, "Invalid Request: a request of this session with the "
          .. "same id is not answered yet")
      end
    end
  end
  local conn, info = session.conn, who and who.info
  if nids == 0 then -- notifications and answers only
    res:respond(202, { ["mcp-session-id"] = session.id })
    conn:receive(batch and list or list[1], info)
    if session.stateless then conn:close("request answered") end
    return
  end
  local ex = setmetatable({ session = session, res = res, batch = batch, answers = {},
    pending = {}, left = nids }, Exchange)
  -- past max_post_calls (of this POST) or max_session_calls (of the session in flight), a
  -- request is answered at once with an error, not served nor queued
  local calls = session.calls
  if nids > o.max_post_calls or calls + nids > o.max_session_calls then
    local room = o.max_session_calls - calls
    if room > o.max_post_calls then room = o.max_post_calls end
    local served, over, k = {}, {}, 0
    for i = 1, #list do
      local m = list[i]
      if m.method and m.id ~= nil then
        k = k + 1
        if k > room then
          over[m.id] = true
          local answer
          if k > o.max_post_calls then
            answer = refused(m.id, fmt("Too many requests in one POST: at most %d are served "
              .. "(max_post_calls)", o.max_post_calls), "max_post_calls", o.max_post_calls)
          else
            answer = refused(m.id, fmt("Too many requests in flight: this session has %d "
              .. "(max_session_calls %d); retry once one is answered", calls + room,
              o.max_session_calls), "max_session_calls", o.max_session_calls)
          end
          ex.answers[#ex.answers + 1] = encode(answer)
        else
          served[#served + 1] = m
        end
      else
        served[#served + 1] = m
      end
    end
    local kept_ids = {}
    for i = 1, #ids do
      if not over[ids[i]] then kept_ids[#kept_ids + 1] = ids[i] end
    end
    ids, list, ex.left, nids = kept_ids, served, #kept_ids, #kept_ids
    if nids == 0 then
      if #list > 0 then conn:receive(batch and list or list[1], info) end
      return respond_json(ex)
    end
  end
  for i = 1, nids do admit(ex, ids[i]) end
  local keep = init and not session.stateless
  if keep then
    self.sessions[session.id] = session
    self.nsessions = self.nsessions + 1
    lru_push(self, session)
  end
  conn:receive(batch and list or list[1], info)
  if keep and not conn.initialized then -- initialize failed: no session
    conn:close("initialize failed")
  end
  if not ex.done then watch_post(ex) end
end

local function get(self, _, req, res, who, path)
  if modern_refusal(self, req, res) then return end
  if self.stateless then
    return fail(res, 405, -32000, "Method Not Allowed: a stateless server has no GET stream",
      { allow = ALLOW_STATELESS })
  end
  if not accepts(req.headers.accept, "text/event-stream") then
    return fail(res, 406, -32000, "Not Acceptable: Accept must include text/event-stream")
  end
  local session = find_session(self, req, res, who, path)
  if not session then return end
  local last = req.headers["last-event-id"]
  local stream, after, prime
  if last then
    local n, seq = sse.parse_id(last)
    stream = n == 0 and session.standalone or n and session.streams[n]
    if not stream then
      return fail(res, 404, -32000, fmt("Not Found: no stream to resume for Last-Event-ID '%s'",
        last))
    end
    after = seq
  else
    stream, prime = session.standalone, primes(session)
    after = stream.delivered
  end
  if stream.res then
    return fail(res, 409, -32000, "Conflict: the stream is already open")
  end
  if not stream:attach(res, sse_headers(session), prime, after) then return end
  -- a stream opened with a token ends when the token does (sweep); the client comes back
  -- with Last-Event-ID and a fresh token
  stream.expires_at = who and who.info.expires_at
  if stream.number == 0 then stream.delivered = stream.seq end
  if stream.done then -- every answer was sent: the replay completes the stream
    stream:detach(true)
    session.streams[stream.number] = nil
    return
  end
  res.on_close = function() if stream.res == res then stream:detach() end end
end

local function delete(self, _, req, res, who, path)
  if modern_refusal(self, req, res) then return end
  if self.stateless then
    return fail(res, 405, -32000, "Method Not Allowed: a stateless server has no sessions",
      { allow = ALLOW_STATELESS })
  end
  local session = find_session(self, req, res, who, path)
  if not session then return end
  session.conn:close("session deleted by the client")
  res:respond(200, { ["mcp-session-id"] = session.id })
end

---------------------------------------------------------------------------------------------
-- Authorization (claude.mcp.server.auth)
---------------------------------------------------------------------------------------------

-- The `auth` of an endpoint: its server's option, else the transport's; false or nil: none.
local function auth_spec(self, ep)
  local spec = ep.server.auth
  if spec == nil then spec = self.opts.auth end
  return spec or nil
end

-- The resource identifier of the endpoint at `path`: `auth.resource` (the public URL of
-- the transport's base path) or the URL served, with the endpoint's part of the path.
local function resource_of(self, spec, path)
  local base = spec.resource or self:url()
  return (base:gsub("/$", "")) .. path:sub(#self.opts.path + 1)
end

-- What the endpoint at `path` checks (made once per `auth` table and path), or nil.
local function auth_of(self, ep, path)
  local spec = auth_spec(self, ep)
  if not spec then return nil end
  local a = self.auth[path]
  if a and a.spec == spec then return a end
  a = auth.endpoint(spec, resource_of(self, spec, path))
  self.auth[path] = a
  return a
end

-- GET /.well-known/oauth-protected-resource[PATH]: the metadata of the endpoint at PATH
-- (the transport's base path when none), or of the endpoint whose resource has that path
-- (a `resource` behind a proxy that serves it elsewhere).
local function metadata(self, path, req, res)
  local rest = path:sub(#auth.WELL_KNOWN + 1)
  if rest == "" then rest = self.opts.path end
  local ep = self.endpoints[rest]
  local a = ep and auth_of(self, ep, rest)
  if not a then
    for p, e in pairs(self.endpoints) do
      local x = auth_of(self, e, p)
      if x and x.metadata_url:match("^[^:/]+://[^/]+(.*)$") == path then a = x end
    end
  end
  if not a then
    return fail(res, 404, -32000, fmt("Not Found: no protected resource at %s", rest))
  end
  return auth.serve_metadata(a, res, req.method)
end

local function dispatch(self, ep, req, res, who, path)
  local m = req.method
  if m == "POST" then return post(self, ep, req, res, who, path) end
  if m == "GET" then return get(self, ep, req, res, who, path) end
  if m == "DELETE" then return delete(self, ep, req, res, who, path) end
  fail(res, 405, -32000, fmt("Method Not Allowed: %s", m),
    { allow = self.stateless and ALLOW_STATELESS or ALLOW_STATEFUL })
end

-- A request to an endpoint with auth, in a task of its own (the verifier may wait).
local function authenticated(self, ep, a, req, res, path)
  local info, principal, www, message = auth.authenticate(a, req,
    function(msg) log(self, msg) end)
  if res:state() ~= "new" then return end -- the client left while its token was checked
  if not info then
    return fail(res, principal, -32000, message, www and { ["www-authenticate"] = www })
  end
  return dispatch(self, ep, req, res, { info = info, principal = principal }, path)
end

-- A bug of ours is a JSON-RPC 500, not a hang (claude.http.server's one error path).
local function internal_error(res)
  fail(res, 500, -32603, "Internal error")
end

local function handle(self, req, res)
  local path = req.path
  if #path > 1 and path:byte(-1) == 47 then path = path:sub(1, -2) end -- "/"
  -- (a path under "/." only is compared: the metadata's, "/.well-known/...")
  if path:byte(2) == 46 and path:sub(1, #auth.WELL_KNOWN) == auth.WELL_KNOWN then
    return metadata(self, path, req, res)
  end
  local ep = self.endpoints[path]
  if not ep then
    return fail(res, 404, -32000, fmt("Not Found: no MCP server at %s (try %s)", path,
      self.opts.path))
  end
  local why = origin.forbidden(self.guard, req.headers)
  if why then return fail(res, 403, -32000, why) end
  local a = auth_of(self, ep, path)
  if a then
    async.spawn(http_server.handle,
      function() return authenticated(self, ep, a, req, res, path) end, req, res, internal_error)
    return
  end
  return dispatch(self, ep, req, res, nil, path)
end

-- A GET stream opened with a token that has expired since: ended (the client resumes it
-- with a fresh token).
local function expire_stream(st, clock)
  local exp = st.expires_at
  if exp and st.res and exp <= clock then st:detach(true) end
end

-- Refuses (misuse) to serve a server without auth on an address other hosts can reach,
-- unless the transport's `auth = false` says that is meant: Redis's "protected mode".
check_exposure = function(o, servers)
  local exposed, wildcard = not origin.is_loopback(o.host),
    core.address_class(o.host) == "unspecified"
  for _, e in ipairs(servers) do
    local spec = e[2].auth
    if spec == nil then spec = o.auth end
    if spec == nil and exposed then
      errors.misuse("bad field 'auth' to 'listen' (server '%s' has no auth and %s is not a "
        .. "loopback address: anyone who reaches it could call its tools; give it an auth "
        .. "option, or auth = false (claudelua mcp --no-auth) to serve it without on purpose)",
        e[1], o.host)
    end
    if spec and spec.resource == nil and wildcard then
      errors.misuse("bad field 'auth.resource' to 'listen' (server '%s': needed when "
        .. "listening on %s: the public URL of the server, e.g. https://mcp.example.com/mcp)",
        e[1], o.host)
    end
  end
end

uses_auth = function(o, servers)
  if o.auth then return true end
  for _, e in ipairs(servers) do
    if e[2].auth then return true end
  end
  return false
end

-- Closes sessions idle for longer than session_timeout: nothing in flight, no stream open;
-- ends the streams whose token expired.
local function sweep(self)
  local now, limit, clock = core.now(), self.opts.session_timeout, os.time()
  local idle = {}
  for _, s in pairs(self.sessions) do
    expire_stream(s.standalone, clock)
    for _, st in pairs(s.streams) do expire_stream(st, clock) end
    local busy = s.standalone.res ~= nil or next(s.posts) ~= nil
    if not busy then
      for _, st in pairs(s.streams) do if st.res then busy = true end end
    end
    if limit and not busy and now - s.last > limit then idle[#idle + 1] = s end
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

---------------------------------------------------------------------------------------------
-- The transport
---------------------------------------------------------------------------------------------

--- Serve servers over Streamable HTTP.
-- @tparam table servers `{ {name, server}, ... }`: the first is served at `path`, each at
--   `path/name`
-- @tparam[opt] table opts `host` ("127.0.0.1"), `port` (0: any free port), `path` ("/mcp"),
--   `stateless` (false), `max_body` (bytes, 16 MiB: larger bodies get 413),
--   `session_timeout` (seconds a session may stay idle, 1800; false: forever),
--   `allowed_hosts`, `allowed_origins` (lists; Host and Origin checks against DNS rebinding,
--   on by default when `host` is loopback), `dns_rebinding_protection` (force it on or off),
--   `history` (events kept per stream for Last-Event-ID, 1000), `retry` (milliseconds, the
--   SSE `retry` of priming events, 1000), `request_timeout` (requests to the client),
--   `log` (a function given a line when a session expires or a token cannot be checked;
--   default: stderr), `auth` (the servers' OAuth bearer checks, for those without an `auth`
--   option of their own: see claude.mcp.server.auth; `false`: none, on purpose),
--   `state_key` (the key that signs the `requestState` of multi round-trip requests, shared
--   by the processes behind one load balancer; default: a random key of this process),
--   `state_ttl` (seconds a `requestState` stays valid, 600), `node` (this process's name
--   behind a load balancer: task ids start with it, for routing; letters, digits, `-`, `_`),
--   and the bounds (positive numbers; math.huge: none; docs/mcp-server.md, "Bounds"):
--   `max_sessions` (1024), `max_calls` (1024, in flight in the server, both eras),
--   `max_session_calls` (64), `max_post_calls` (32), `max_batch` (64), `history_bytes`
--   (262144 per session), `high_water` (65536), `max_queued` (1048576 per connection),
--   `write_timeout` (60), `max_connections` (1024), and `trim` (true: memory back to the
--   system after a load)
-- @return the transport (`:url()`, `:port()`, `:close()`, `:stats()`), or nil, err, "connection"
-- @raise a misuse for bad options, and for a `host` that is not loopback with a server
--   that has no `auth` while the transport's `auth` is not given (`auth = false` says so)
-- @function listen
M.listen = errors.public(function(servers, opts)
  opts = opts or {}
  errors.check(opts, 2, "listen", "table")
  errors.check_fields(opts, KNOWN, "listen")
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  if type(servers) ~= "table" or #servers == 0 then
    errors.misuse("bad argument #1 to 'listen' ({ {name, server}, ... } expected)")
  end
  auth.check(o.auth, "listen")
  for _, e in ipairs(servers) do
    if type(e) ~= "table" or type(e[1]) ~= "string" or not tool.is_server(e[2]) then
      errors.misuse("bad argument #1 to 'listen' ({ {name, server}, ... } expected)")
    end
  end
  for _, k in ipairs(BOUNDS) do
    local v = o[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v <= 0) then
      errors.bad_field(k, "listen", "a positive number expected (math.huge: no bound), got %s",
        type(v) == "number" and tostring(v) or errors.typename(v))
    end
  end
  check_exposure(o, servers)
  local self = setmetatable({ opts = o, sessions = {}, endpoints = {}, stateless = o.stateless
    and true or false, closed = false, auth = {}, nsessions = 0, calls = 0,
    evicted = 0, record = call.new(), -- (the call record a POST's tools/call fills)
    state = state.new { key = o.state_key, ttl = o.state_ttl } }, Transport)
  local base = o.path
  for i, e in ipairs(servers) do
    local ep = { name = e[1], server = e[2] }
    if i == 1 then self.endpoints[base] = ep end
    self.endpoints[base .. "/" .. e[1]] = ep
  end
  self.guard = origin.new(o)
  -- answered in the loop's callback: the common request starts no task
  local function bytes(v) return v ~= math.huge and math.floor(v) or 0 end
  -- lean: the fields read here only (method, path, query, headers, body, remote_address)
  local srv, err, kind = http_server.listen { host = o.host, port = o.port, lean = true,
    max_body = o.max_body, tasks = false, internal_error = internal_error,
    high_water = bytes(o.high_water), max_queued = bytes(o.max_queued),
    write_timeout = o.write_timeout ~= math.huge and o.write_timeout or 0,
    max_connections = o.max_connections and bytes(o.max_connections) or nil,
    on_request = function(req, res) return handle(self, req, res) end }
  if not srv then return nil, err, kind end
  self.http = srv
  -- the memory a load that went left behind (claude.mcp.server.trim)
  if o.trim then
    local looks = trim.new()
    self.trim_timer = core.timer()
    self.trim_timer:start(trim.EVERY, function()
      trim.look(looks, srv:stats().requests, self.calls)
    end, trim.EVERY)
  end
  -- idle sessions, streams whose token expired (within 10 s when auth is on)
  self.timer = core.timer()
  local every = self.stateless and 30 or math.min(o.session_timeout and o.session_timeout / 4
    or 30, 30, uses_auth(o, servers) and 10 or 30)
  if o.sweep_every then every = o.sweep_every end -- (specs)
  local function tick()
    if not self.stateless then sweep(self) end
    self.timer:start(every, tick)
  end
  self.timer:start(every, tick)
  return self
end)

--- The port the transport listens on.
function Transport:port()
  return self.http:port()
end

--- The URL of the first server, or of the server `name`.
-- @tparam[opt] string name
function Transport:url(name)
  local host = self.opts.host
  if host:find(":") then host = "[" .. host .. "]" end
  return fmt("http://%s:%d%s%s", host, self.http:port(), self.opts.path,
    name and "/" .. name or "")
end

--- Requests being served, in every session.
function Transport:pending()
  local n = 0
  for _, s in pairs(self.sessions) do n = n + s.conn:pending() end
  local seen = {} -- the first server is at two paths
  for _, ep in pairs(self.endpoints) do
    if ep.modern and not seen[ep] then
      seen[ep] = true
      n = n + ep.modern:pending()
    end
  end
  return n
end

--- What the bounds see: `sessions`, `calls` (requests in flight, both eras), `history_bytes`
-- (what the sessions' streams keep for Last-Event-ID), `history_bytes_max` (the most one
-- session keeps), and the HTTP server's (`connections`, `queued`, `queued_max`,
-- `queued_peak`, `dropped_slow`, `dropped_timeout`, `refused`: docs/http-server.md). A walk
-- of the sessions: for monitoring and tests.
-- @treturn table
function Transport:stats()
  local st = self.http:stats()
  local total, most = 0, 0
  for _, s in pairs(self.sessions) do
    local b = s.keep.bytes
    total = total + b
    if b > most then most = b end
  end
  st.sessions, st.calls, st.history_bytes, st.history_bytes_max = self.nsessions, self.calls,
    total, most
  return st
end

--- Stop: no new connection; every session is closed (calls in flight cancelled, streams
-- ended). Idempotent.
function Transport:close(reason)
  if self.closed then return end
  self.closed = true
  if self.timer then self.timer:close() end
  if self.trim_timer then self.trim_timer:close() end
  local list = {}
  for _, s in pairs(self.sessions) do list[#list + 1] = s end
  for _, s in ipairs(list) do s.conn:close(reason or "server closed") end
  for _, ep in pairs(self.endpoints) do
    if ep.modern then ep.modern:close(reason or "server closed") end
  end
  self.http:close()
end
Transport.__close = Transport.close

--- Serve new servers (the tools file was reloaded): each endpoint takes the server of the
-- same name, and every session of it goes on with the new one (its client is told the lists
-- changed); calls in flight finish on the old one. Servers that are gone keep serving.
-- @tparam table servers `{ {name, server}, ... }`
function Transport:set_servers(servers)
  check_exposure(self.opts, servers)
  local by_name = {}
  for _, e in ipairs(servers) do by_name[e[1]] = e[2] end
  for _, ep in pairs(self.endpoints) do
    local new = by_name[ep.name]
    if new and new ~= ep.server then
      ep.server = new
      if ep.modern then ep.modern:set_server(new) end
    end
  end
  for _, s in pairs(self.sessions) do
    if s.ep.server ~= s.conn:server() then s.conn:set_server(s.ep.server) end
  end
end

--- What the endpoint at `path` (`/mcp`, `/mcp/calc`) checks, or nil:
-- `{ resource =, metadata_url = }`.
-- @tparam string path
function Transport:auth_of(path)
  local ep = self.endpoints[path]
  local a = ep and auth_of(self, ep, path)
  return a and { resource = a.resource, metadata_url = a.metadata_url }
end

return M
