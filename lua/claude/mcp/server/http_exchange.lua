--- The exchange of one POST of the Streamable HTTP transport's sessions
-- (claude.mcp.server.http): the requests of the POST, in their order, and the answers that end
-- it. A POST is answered with JSON when its requests are answered before anything else is
-- said (a batch: a JSON array of its answers), and becomes an event stream
-- (claude.mcp.server.events) as soon as something else is (progress, a log, a request to the
-- client). Every message reaches an exchange as its JSON text: a call's answer made in one C
-- call (claude.mcp.wire's `answer_text`), any other message encoded once; nothing is decoded
-- again to go into a batch or an event.
--
-- An exchange is `{ session =, res =, batch =, pending = {[id] = true}, left =, answers =
-- nil | {text...}, stream = nil | events stream, done = }`; a session is claude.mcp.server.
-- http_sessions'.
-- @module claude.mcp.server.http_exchange
local core = require "claude.core"
local json = require "claude.json"
local wire = require "claude.mcp.wire"
local sse = require "claude.mcp.server.events"
local encode, concat, now = json.encode, table.concat, core.now
local answer_text, error_text, unencodable = wire.answer_text, wire.error_text, wire.unencodable

local M = {}

-- Complete streams a session keeps for clients that left them before their end.
local MAX_KEPT = 64

--- Answer an HTTP request with a JSON-RPC error (id null): a request refused before any
-- connection saw it.
-- @param res
-- @tparam integer status
-- @tparam integer code
-- @tparam string message
-- @tparam[opt] table headers
function M.fail(res, status, code, message, headers)
  headers = headers or {}
  headers["content-type"] = "application/json"
  res:respond(status, headers, error_text(nil, code, message))
end

local function sse_headers(session)
  return { ["content-type"] = "text/event-stream", ["cache-control"] = "no-cache",
    ["mcp-session-id"] = session.id }
end

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
  session.last = now()
  if session.stateless then session.conn:close("request answered") end
end

-- Answers a POST with JSON: its answers (their JSON texts), and `last` when given (the
-- answer that ends it, not yet among them).
local function respond_json(ex, last)
  local answers, body = ex.answers, last
  if ex.batch then
    answers = answers or {}
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
  local answers = ex.answers
  if answers then
    for i = 1, #answers do stream:send_text(answers[i]) end
    ex.answers = nil
  end
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
      local answers = ex.answers or {}
      answers[#answers + 1] = data
      ex.answers = answers
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

local Exchange = {}
Exchange.__index = Exchange

--- A POST's exchange: `left` requests of `session` (or a batch's) whose answers go to `res`.
-- @return the exchange
function M.new(session, res, batch, left)
  return setmetatable({ session = session, res = res, batch = batch, pending = {},
    left = left }, Exchange)
end

M.primes, M.sse_headers, M.respond_json, M.start_sse = primes, sse_headers, respond_json, start_sse
M.route, M.send_result, M.close_stream, M.admit, M.watch = route, send_result, close_stream,
  admit, watch_post

return M
