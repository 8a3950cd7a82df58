--- The Streamable HTTP transport of an MCP server: protocol revisions 2025-03-26 to 2025-11-25
-- (sessions, here) and 2026-07-28 (no session: claude.mcp.server.http_modern), per request.
--
-- This module is the transport: its options and bounds, the methods (a POST's checks and
-- admission, the GET stream, DELETE) and the routing of authenticated requests. Apart: the
-- sessions and their LRU (http_sessions.lua), a POST's exchange and its answers
-- (http_exchange.lua), the event streams (events.lua), the Host/Origin checks (origin.lua),
-- the bearer checks (auth.lua), the HTTP server (claude.http.server) and the MCP connection
-- (connection.lua). (Over 600 lines: a POST's checks, the bounds and the methods share the
-- transport's state and its answers of refusal.)
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
local modern = require "claude.mcp.server.modern"
local limits = require "claude.mcp.server.limits"
local trim = require "claude.mcp.server.trim"
local http_modern = require "claude.mcp.server.http_modern"
local state = require "claude.mcp.server.state"
local shared = require "claude.mcp.server.shared"
local era = require "claude.mcp.era"
local sse = require "claude.mcp.server.events"
local origin = require "claude.mcp.server.origin"
local tool = require "claude.mcp.tool"
local auth = require "claude.mcp.server.auth"
local http_server = require "claude.http.server"
local exchange = require "claude.mcp.server.http_exchange"
local sessions = require "claude.mcp.server.http_sessions"

local M = {}

local encode, decode = json.encode, json.decode
local fail, log, admit, watch_post = exchange.fail, sessions.log, exchange.admit, exchange.watch
local session_of, use, find_session = sessions.of, sessions.use, sessions.find
local envelope_read, MCP_CALL = core.envelope_read, core.MCP_CALL
local LATEST_MODERN = era.LATEST_MODERN
local call = require "claude.mcp.call"
-- the slots of a call record: claude.mcp.call's, as constants (one instruction a read;
-- spec/unit/call_record_spec.lua holds them to the module's)
local ID <const>, META <const>, VERSION <const>, AUTH <const> = 1, 4, 7, 11
local type, fmt, pairs, math_type = type, string.format, pairs, math.type

--- The protocol versions a client may name in `MCP-Protocol-Version`.
M.PROTOCOL_VERSIONS = sessions.PROTOCOL_VERSIONS

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
  state_ttl = true, stateless = true, max_connections = true, sweep_every = true,
  tasks = true, task_lease = true }
for k in pairs(M.DEFAULTS) do KNOWN[k] = true end

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
-- The headers of a POST
---------------------------------------------------------------------------------------------

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
-- The methods
---------------------------------------------------------------------------------------------







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


-- The endpoint's server of the modern era, made on its first modern request.
local function modern_of(self, ep)
  local m = ep.modern
  if not m then
    m = modern.new(ep.server, { state = self.state, node = self.opts.node, limits = self.opts,
      transport = "tcp",
      shared = self.shared(ep.name) })
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

-- Would `n` more requests go past `max_calls` (in flight in the whole server)?
local function server_full(self, n) return self.calls + n > self.opts.max_calls end

-- Would `n` requests of one POST go past `max_post_calls` or, with those of `session` in
-- flight, past `max_session_calls`?
local function over_bounds(self, session, n)
  local o = self.opts
  return n > o.max_post_calls or session.calls + n > o.max_session_calls
end

-- A `tools/call` alone in its POST, its envelope read in C into the transport's call record
-- (core.envelope_read, claude.mcp.call): the legacy era's usual call in a session goes to the
-- connection as the record (Conn:call) when post_message would serve it at once, as
-- post_message's own checks say (server_full, session_of, over_bounds, no request of its id
-- in flight); any other call is the message it was, served as if decoded.
local function post_call(self, ep, req, res, who, path, rec)
  local version, info, id = rec[VERSION], who and who.info, rec[ID]
  local session = not self.stateless and version == nil and type(rec[META]) ~= "table"
    and not server_full(self, 1) and session_of(self, req, who, path)
  if session and session.posts[id] == nil and not over_bounds(self, session, 1) then
    use(self, session)
    local ex = exchange.new(session, res, false, 1)
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
  if nids > 0 and server_full(self, nids) then
    return fail(res, 503, -32000, fmt("Service Unavailable: %d requests are in flight "
      .. "(max_calls %d); retry later", self.calls, o.max_calls), { ["retry-after"] = "1" })
  end
  local session
  if self.stateless then
    if not sessions.check_version(res, headers) then return end
    session = sessions.new(self, ep, path, true, who, req.remote_address)
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
      local victim = sessions.idle(self)
      if not victim then
        return fail(res, 503, -32000, fmt("Service Unavailable: %d sessions are open and "
          .. "busy (max_sessions); retry later", self.nsessions), { ["retry-after"] = "1" })
      end
      victim.conn:close("session evicted (max_sessions)")
      self.evicted = self.evicted + 1 -- said by the sweep, once for all
    end
    session = sessions.new(self, ep, path, false, who, req.remote_address)
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
  local ex = exchange.new(session, res, batch, nids)
  -- past max_post_calls (of this POST) or max_session_calls (of the session in flight), a
  -- request is answered at once with an error, not served nor queued
  local calls = session.calls
  if over_bounds(self, session, nids) then
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
          local answers = ex.answers or {}
          answers[#answers + 1] = encode(answer)
          ex.answers = answers
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
      return exchange.respond_json(ex)
    end
  end
  for i = 1, nids do admit(ex, ids[i]) end
  local keep = init and not session.stateless
  if keep then sessions.keep(self, session) end
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
    stream, prime = session.standalone, exchange.primes(session)
    after = stream.delivered
  end
  if stream.res then
    return fail(res, 409, -32000, "Conflict: the stream is already open")
  end
  if not stream:attach(res, exchange.sse_headers(session), prime, after) then return end
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
--   behind a load balancer: task ids start with it, for routing; letters, digits, `-`, `_`;
--   with `tasks` a Redis URL: random when not given), `tasks` (where the tasks of the modern
--   era and the events of its listens are shared: `"memory"`, the default, this process
--   alone; `"redis://[[user:]password@]host[:port][/db]"`, every replica using that Redis:
--   docs/scaling.md),
--   `task_lease` (seconds, 15: a task whose replica stops renewing its lease this long
--   fails),
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
  if o.task_lease ~= nil and (type(o.task_lease) ~= "number" or o.task_lease ~= o.task_lease
      or o.task_lease <= 0) then
    errors.bad_field("task_lease", "listen", "a positive number of seconds expected, got %s",
      tostring(o.task_lease))
  end
  if o.tasks ~= nil and o.tasks ~= "memory" and not o.node then
    o.node = core.base64url_encode(assert(core.random_bytes(6))):gsub("[^%w]", "x")
  end
  local shared_of, serr = shared.open(o.tasks, { node = o.node, lease = o.task_lease,
    log = o.log })
  if not shared_of then errors.bad_field("tasks", "listen", "%s", serr) end
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
  if not srv then
    if shared_of.close then shared_of.close() end
    return nil, err, kind
  end
  self.http = srv
  self.shared = shared_of
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
    if not self.stateless then sessions.sweep(self) end
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
  if self.shared.close then self.shared.close() end
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
