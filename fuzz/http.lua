-- fuzz/http.lua -- the Lua half of the http target (fuzz/http.c): raw bytes from a TCP client
-- into h2o's parser, the C server (src/http/server.c, response.c), the MCP Streamable
-- HTTP transport (claude.mcp.server.http and what it uses: origin, auth, events, connection,
-- the router) and claude.http.server. Both listen once on 127.0.0.1; each input is one to
-- four connections to one of them.
--
-- The first byte of an input says how its connection behaves: bit 7 picks the server (0: the
-- MCP transport, 1: a claude.http.server application), bit 6 half-closes the connection once
-- everything is written (shutdown(SHUT_WR), which the server treats as the client leaving),
-- bit 5 ends it with an RST instead of a FIN, and bits 0-4 cut the rest into two writes at
-- n/32 of its length (0: one write), so that h2o meets a request in two reads. The rest is
-- what the client sends; "~~NEXT~~" in it starts another connection (up to four), opened
-- once the one before has sent everything, while its requests may still be in flight (a
-- DELETE or a second GET stream of the same session), and "~~LEAVE~~" one opened once the
-- client has closed the one before (a resumption with Last-Event-ID). Inside a connection's
-- bytes, "~~TICK~~" moves the clock the transport and the verifier see two hours on and runs
-- the transport's sweep (sessions idle past session_timeout expire, GET streams whose token
-- expired end, and the token "brief", good for ten minutes from the start of the input, is
-- refused from then on), and "~~STALL~~" makes the client stop reading that connection (with
-- a small receive buffer, so that the server's writes back up: the tool "flood" writes a
-- megabyte of events); the client still sends the rest, and closes it at the end.
--
-- The loop is driven until the server closes the connections, or until nothing happens for a
-- few turns while no task waits (an event stream never ends on its own); then the client
-- closes them. Findings: a reply that is not a sequence of well-framed HTTP/1.x responses, a
-- JSON body that does not decode, a request handed to Lua whose answer never began (its
-- client still there), an error raised in a task or a callback (claude.on_error), a 500 that
-- is not the verifier's, and, once the connections are gone (and again once the input's
-- sessions are closed), a task or request still in flight or a handle still open after DRAIN
-- seconds.
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local tool = require "claude.mcp.tool"
local mcp_http = require "claude.mcp.server.http"
local http_server = require "claude.http.server"
local sock = require "fuzz.socket"

local fmt = string.format

-- FUZZ_HTTP_TRACE=1 prints each reply (to see what a seed gets).
local trace = os.getenv("FUZZ_HTTP_TRACE") and io.stderr

-- Tool failures and their tracebacks are written there; the findings are the checks below.
io.stderr = { write = function(self) return self end, flush = function() end }

-- The clock the transport and the verifier see: real time plus `skew`, which each input
-- starts at 0 and "~~TICK~~" moves on (the harness keeps the real one).
local real_now, real_time = core.now, os.time
local skew = 0
local TICK_SECONDS = 2 * 3600 -- past session_timeout (1800) and the token "brief"
core.now = function() return real_now() + skew end
os.time = function(t)
  if t ~= nil then return real_time(t) end
  return real_time() + skew
end

-- Errors nobody waited for, in tasks and callbacks: each is a finding, but for the ones the
-- application below raises on purpose.
local EXPECTED = "fuzz: expected"
local reported = {}
async.on_error(function(err)
  local text = tostring(err)
  if not text:find(EXPECTED, 1, true) then reported[#reported + 1] = text end
end)

-- Session ids are 128 random bits, which no input could name: here the n-th session opened
-- by an input is 00000000000000000000000000000001 .. n (the counter restarts with each
-- input), so that a seed can go on with GET, DELETE and tools/call in one connection.
local nsessions = 0
local random_bytes = core.random_bytes
core.random_bytes = function(n)
  if n ~= 16 then return random_bytes(n) end
  nsessions = nsessions + 1
  return string.rep("\0", 14) .. string.pack(">I2", nsessions)
end

-- The requests each server handed to Lua, by the client's port: each must get at least the
-- head of an answer while its client stays.
local handled = {}
local http_listen = core.http_listen
core.http_listen = function(opts)
  local on_request = opts.on_request
  opts.on_request = function(req, res)
    handled[req.remote_port] = (handled[req.remote_port] or 0) + 1
    return on_request(req, res)
  end
  return http_listen(opts)
end

---------------------------------------------------------------------------------------------
-- The servers
---------------------------------------------------------------------------------------------

-- fuzz/router.lua's tools, and some that wait or stream: a silent wait (the POST waits for
-- JSON), progress and a log line (a POST becomes an event stream), more progress than a
-- stream keeps, ctx.close_stream (SSE polling), a request to the client (sampling: it waits
-- for an answer the client may POST, or for request_timeout).
local function items()
  return {
    tool.tool("add", "Add two numbers", { a = "number", b = "number" },
      function(args) return args.a + args.b end),
    tool.tool("echo", function(args) return { type = "text", text = json.encode(args) } end),
    tool.tool { name = "weather", input_schema = { city = "string" },
      output_schema = { temp = "number" }, execute = function() return { temp = 21.5 } end },
    tool.tool("fail", function() error("division by zero") end),
    tool.tool("slow", function(_, ctx)
      ctx.progress(1, 2, "half way")
      ctx.log("info", "working")
      async.sleep(0.005)
      return "done"
    end),
    tool.tool("nap", function() -- says nothing while it waits: its POST waits for JSON
      async.sleep(0.005)
      return "rested"
    end),
    tool.tool("chatty", function(args, ctx) -- more events than a stream keeps (history)
      local n = math.tointeger(args.n) or 20
      for i = 1, math.min(n, 40) do ctx.progress(i, n) end
      return "said " .. n
    end),
    tool.tool("poll", function(_, ctx)
      ctx.progress(1, 2, "before the stream ends")
      ctx.close_stream()
      async.sleep(0.001)
      return "polled"
    end),
    tool.tool("flood", function(args, ctx) -- a megabyte of events: back pressure
      local n = math.tointeger(args.n) or 64
      for _ = 1, math.max(0, math.min(n, 64)) do ctx.log("info", string.rep("x", 16384)) end
      return "flooded"
    end),
    tool.tool("ask", function(_, ctx)
      local result, err = ctx.sample { messages = { { role = "user",
        content = { type = "text", text = "yes?" } } }, maxTokens = 5 }
      return result and json.encode(result) or tostring(err)
    end),
    tool.resource { uri = "mem://motd", name = "motd", text = "Hello" },
    tool.resource_template { uri_template = "users://{id}/profile", name = "profile",
      read = function(_, params) return "user " .. params.id end },
    tool.prompt { name = "review", arguments = { "code", "focus?" },
      get = function(args) return "Review: " .. args.code end },
  }
end

-- Bearer tokens the verifier knows (Authorization: Bearer NAME), one per path of the check.
local YEAR = 365 * 24 * 3600
local TOKENS = {
  alice = { sub = "alice", scope = "tools", exp = os.time() + YEAR },
  bob = { sub = "bob", scope = "tools extra", iss = "https://as.example" },
  client = { client_id = "app", scope = { "tools" } },
  nobody = { scp = "tools" }, -- no subject, no client: a session bound to nobody
  noscope = { sub = "alice", scope = "other" },
  expired = { sub = "alice", scope = "tools", exp = 1 },
  early = { sub = "alice", scope = "tools", nbf = os.time() + YEAR },
  elsewhere = { sub = "alice", scope = "tools", aud = "https://elsewhere.example/mcp" },
  ours = { sub = "alice", scope = "tools" }, -- aud: set once the port is known
  brief = { sub = "alice", scope = "tools" }, -- exp: ten minutes from each input's start
}

local function verify(token)
  if token == "slow" then
    async.sleep(0.001)
    token = "alice"
  end
  if token == "raise" then error("a bug of the verifier") end
  if token == "down" then return nil, "the authorization server is down", "unavailable" end
  if token == "number" then return 42 end
  local claims = TOKENS[token]
  if not claims then return nil, "unknown token " .. token end
  local copy = {}
  for k, v in pairs(claims) do copy[k] = v end
  return copy
end

local open = tool.server("open", items(), { version = "1.0.0" })
local secure = tool.server("secure", items(), { version = "1.0.0", auth = { verify = verify,
  authorization_servers = { "https://as.example" }, required_scopes = { "tools" } } })

-- /mcp and /mcp/open: no auth; /mcp/secure: bearer tokens, its metadata at
-- /.well-known/oauth-protected-resource/mcp/secure. The transport's sweep (the function its
-- timer runs) is kept, for "~~TICK~~" to run it at once.
local sweep
local transport
do
  local timer = core.timer
  core.timer = function(...)
    local t = timer(...)
    return setmetatable({}, { __index = function(_, k)
      if k == "start" then
        return function(_, secs, fn, ...)
          sweep = fn
          return t:start(secs, fn, ...)
        end
      end
      local m = t[k]
      return function(_, ...) return m(t, ...) end
    end })
  end
  transport = assert(mcp_http.listen({ { "open", open }, { "secure", secure } }, {
    host = "127.0.0.1", port = 0, max_body = 8192, history = 16, request_timeout = 0.05,
    log = function() end }))
  core.timer = timer
end
TOKENS.ours.aud = { transport:url() } -- a resource above /mcp/secure: accepted

-- A claude.http.server application: each path a way of answering.
local TEXT = { ["content-type"] = "text/plain" }
local app_paths = {
  ["/echo"] = function(req, res)
    local lines = { req.method .. " " .. req.target .. " " .. req.version }
    for i = 1, #req.raw_headers, 2 do
      lines[#lines + 1] = #req.raw_headers[i] .. ": " .. #req.raw_headers[i + 1]
    end
    lines[#lines + 1] = "body " .. #req.body
    res:respond(200, TEXT, table.concat(lines, "\n"))
  end,
  ["/stream"] = function(_, res) -- more than high_water: on_drain
    res:start(200, TEXT)
    for _ = 1, 4 do
      if res:write(string.rep("x", 200)) == nil then return end
      async.sleep(0)
    end
    res:finish("end\n")
  end,
  ["/hold"] = function(_, res) -- open until the client leaves
    res:start(200, { ["content-type"] = "text/event-stream" })
    res:write("data: held\n\n")
  end,
  ["/start"] = function(_, res) -- the head alone, nothing after it: sent at once
    res:start(200, { ["content-type"] = "text/event-stream" })
  end,
  ["/wait"] = function(_, res)
    async.sleep(0.001)
    res:respond(200, TEXT, "waited\n") -- nil, err when the client left meanwhile
  end,
  ["/raise"] = function() error(EXPECTED .. ": a handler that raises") end,
  ["/raise-streaming"] = function(_, res)
    res:start(200, TEXT)
    res:write("partial")
    error(EXPECTED .. ": a handler that raises while it streams")
  end,
  ["/abort"] = function(_, res)
    res:start(200, TEXT)
    res:write("partial")
    res:abort()
  end,
  ["/close"] = function(_, res)
    res:respond(200, { connection = "close" }, "bye\n")
  end,
}
local app = assert(http_server.listen { host = "127.0.0.1", port = 0, max_body = 8192,
  high_water = 256, on_request = function(req, res)
    local f = app_paths[req.path]
    if f then return f(req, res) end
    res:respond(404, TEXT, "no such path\n")
  end })

---------------------------------------------------------------------------------------------
-- The replies
---------------------------------------------------------------------------------------------

local function quote(s)
  return fmt("%q", s:sub(1, 60))
end

-- The body of a chunked response from `pos`: the body and the position after it, or nil
-- when the reply ends first (a stream cut off, or an aborted one: its chunk is broken).
local function chunked(s, pos)
  local parts = {}
  while true do
    local size, after = s:match("^(%x+)[^\r\n]*\r\n()", pos)
    if not size then return nil end
    local n = tonumber(size, 16)
    if n == 0 then
      local stop = s:find("\r\n\r\n", after - 2, true)
      if not stop then return nil end
      return table.concat(parts), stop + 4
    end
    if after + n + 1 > #s then return nil end
    assert(s:sub(after + n, after + n + 1) == "\r\n", "a chunk not ended by CRLF at byte "
      .. (after + n))
    parts[#parts + 1] = s:sub(after, after + n - 1)
    pos = after + n + 2
  end
end

-- What the body of each complete response must be: JSON decodes; each `data:` of an event
-- stream is JSON (or empty: a priming event).
local function check_body(headers, body, status)
  local ctype = (headers["content-type"] or ""):lower()
  if ctype:find("^application/json") and body ~= "" then
    local v, err = json.decode(body)
    assert(v ~= nil, fmt("a %d with a JSON body that does not decode: %s", status, tostring(err)))
  elseif ctype:find("^text/event%-stream") then
    for data in body:gmatch("data: ([^\n]*)") do
      if data ~= "" and data ~= "held" then
        assert(json.decode(data) ~= nil, "an event whose data is not JSON: " .. quote(data))
      end
    end
  end
end

-- The reply must be HTTP/1.x responses one after the other, the last one possibly cut off
-- (the client left it, or the server ended it early). A response to HEAD has a length but
-- no body: another status line where the body would start is taken as that. Returns the
-- number of final (not 1xx) responses begun.
local function check_reply(s, mcp)
  local pos, heads = 1, 0
  while pos <= #s do
    local status, after = s:match("^HTTP/1%.[01] (%d%d%d) [^\r\n]*\r\n()", pos)
    if not status then
      error(fmt("not a status line at byte %d of the reply: %s", pos, quote(s:sub(pos))))
    end
    status = tonumber(status)
    if status >= 200 then heads = heads + 1 end
    local headers = {}
    pos = after
    while true do
      if s:sub(pos, pos + 1) == "\r\n" then
        pos = pos + 2
        break
      end
      local name, value, next_pos = s:match("^([%w!#$%%&'*+%-.^_`|~]+): ?([^\r\n]*)\r\n()", pos)
      if not name then
        if not s:find("\r\n", pos, true) then return heads end -- cut off in the head
        error(fmt("a bad header line at byte %d of the reply: %s", pos, quote(s:sub(pos))))
      end
      name = name:lower()
      assert(headers[name] == nil or name == "set-cookie" or name == "vary",
        "a header sent twice: " .. name)
      headers[name] = value
      pos = next_pos
    end
    if mcp then
      assert(status ~= 500 or s:find("could not be verified", pos, true),
        "the MCP transport answered 500")
    end
    local body
    local head_reply = s:find("^HTTP/1%.[01] %d%d%d ", pos)
    if status < 200 or status == 204 or status == 304 or head_reply then
      body = ""
    elseif headers["transfer-encoding"] then
      assert(headers["transfer-encoding"]:lower() == "chunked", "a transfer-encoding: "
        .. headers["transfer-encoding"])
      assert(not headers["content-length"], "both content-length and transfer-encoding")
      body, pos = chunked(s, pos)
      if not body then return heads end
    elseif headers["content-length"] then
      local n = tonumber(headers["content-length"])
      assert(math.type(n) == "integer", "content-length: " .. headers["content-length"])
      if pos + n - 1 > #s then return heads end
      body = s:sub(pos, pos + n - 1)
      pos = pos + n
    else
      body = s:sub(pos) -- until the connection closes
      pos = #s + 1
    end
    if status >= 200 then check_body(headers, body, status) end
  end
  return heads
end

---------------------------------------------------------------------------------------------
-- The connections of an input
---------------------------------------------------------------------------------------------

local IDLE_TURNS = 4 -- turns with nothing read, nothing to send and no task waiting: done
local MAX_TURNS = 400
local DRAIN = 2 -- seconds the server may take to be idle again once the client is gone

local function handles()
  return core.stats().handles
end

-- Turns the loop until `done()`, at most DRAIN seconds; returns done().
local function drain(done)
  local deadline = real_now() + DRAIN
  while not done() and real_now() < deadline do core.step(0.001) end
  return done()
end

local base_tasks, base_handles
local function idle()
  return async.pending_count() == base_tasks and transport:pending() == 0
    and handles() == base_handles
end

local function in_flight()
  return fmt("%d tasks (idle: %d), %d requests of the transport, %d handles (idle: %d)",
    async.pending_count(), base_tasks, transport:pending(), handles(), base_handles)
end

-- Sends the pieces of connection `c` one per turn: true once all are sent, or the server
-- closed. A piece that is not a string is what "~~TICK~~" or "~~STALL~~" does there, once
-- the server has answered what came before it (nothing arrived for two turns).
local function sender(c, half_close)
  local fd, pieces = c.fd, c.pieces
  local i, offset = 1, 0
  return function()
    if i <= #pieces and type(pieces[i]) == "table" and c.idle < 2 then return false end
    while i <= #pieces and type(pieces[i]) == "table" do
      if pieces[i].tick then
        skew = skew + TICK_SECONDS
        if sweep then sweep() end
      else
        c.stalled = true
      end
      i = i + 1
      if i > #pieces and half_close then sock.shutdown(fd) end
    end
    if i > #pieces then return true end
    local n = sock.send(fd, offset == 0 and pieces[i] or pieces[i]:sub(offset + 1))
    if n == nil then
      i = #pieces + 1 -- the server is gone
      return true
    end
    offset = offset + n
    if offset >= #pieces[i] then
      i, offset = i + 1, 0
      if i > #pieces and half_close then sock.shutdown(fd) end
    end
    return i > #pieces
  end
end

-- The connections of an input, each opened two turns after the one before has sent
-- everything (the server has read it, and seen a half-close; its requests may still be in
-- flight), or, for `leave`, two turns after the client closed that one once it had sent
-- everything and then got nothing for two turns; each read every turn. Returns the replies,
-- one per connection.
local function exchange(port, conns, half_close, reset)
  local sending, quiet, wait = 1, 0, 0
  for _ = 1, MAX_TURNS do
    local c = conns[sending]
    if c and wait > 0 then
      wait = wait - 1
    elseif c and c.sent then -- it leaves before the next one comes, once it gets nothing
      if c.idle >= 2 or c.ended then
        if c.fd then sock.close(c.fd, reset) end
        c.fd, c.ended = false, true
        sending, wait = sending + 1, 2
      end
    elseif c then
      if not c.fd then
        c.fd, c.port = sock.connect(port, c.stalls and 4096 or nil)
        c.send = sender(c, half_close)
      end
      if c.send() then
        if c.leave then c.sent, c.idle = true, 0 else sending, wait = sending + 1, 2 end
      end
    end
    local busy = async.pending_count() > base_tasks
    core.step(busy and 0.001 or 0)
    local got_any, open = false, false
    for i = 1, sending do
      local x = conns[i]
      if x and x.fd and not x.ended and x.stalled then
        open, x.idle = true, x.idle + 1 -- it reads no more: the server's writes back up
      elseif x and x.fd and not x.ended then
        local got = sock.recv(x.fd)
        if got == nil then
          x.ended = true -- the server closed the connection
        else
          open = true
          x.reply[#x.reply + 1] = got
          got_any = got_any or got ~= ""
          x.idle = got == "" and x.idle + 1 or 0
        end
      end
    end
    if not open and sending > #conns then break end
    if got_any or busy or sending <= #conns then quiet = 0 else quiet = quiet + 1 end
    if quiet >= IDLE_TURNS then break end
  end
  local replies = {}
  for i, x in ipairs(conns) do
    if x.fd then sock.close(x.fd, reset) end
    replies[i] = table.concat(x.reply)
  end
  return replies
end

-- Connections after the first: their bytes follow one of these in the input; after LEAVE,
-- once the connection before it was closed by the client.
local NEXT, LEAVE = "~~NEXT~~", "~~LEAVE~~"
local MAX_CONNS = 4
local ACTIONS = { ["~~TICK~~"] = { tick = true }, ["~~STALL~~"] = { stall = true } }

-- A connection's bytes -> its pieces: the text between the actions, the first cut in two at
-- `cut` n/32 of its length (0: whole), and the actions between them.
local function pieces_of(part, cut)
  local pieces, from, stalls = {}, 1, false
  while true do
    local at, stop, action = nil, nil, nil
    for marker, a in pairs(ACTIONS) do
      local i, j = part:find(marker, from, true)
      if i and (not at or i < at) then at, stop, action = i, j, a end
    end
    local text = part:sub(from, at and at - 1 or -1)
    if #pieces == 0 and cut > 0 then
      local n = cut * #text // 32
      if n > 0 then
        pieces[1], text = text:sub(1, n), text:sub(n + 1)
      end
    end
    if text ~= "" then pieces[#pieces + 1] = text end
    if not at then break end
    pieces[#pieces + 1] = action
    stalls = stalls or action.stall ~= nil
    from = stop + 1
  end
  if #pieces == 0 then pieces[1] = "" end
  return pieces, stalls
end

return function(data)
  if #data == 0 then return end
  if not base_tasks then
    for _ = 1, 8 do core.step(0) end -- a few turns: the listeners settle
    base_tasks, base_handles = async.pending_count(), handles()
  end
  local ctl, input = data:byte(1), data:sub(2)
  local mcp = ctl & 0x80 == 0
  local conns, from = {}, 1
  repeat
    local at, stop, leave
    if #conns < MAX_CONNS - 1 then
      local n, l = input:find(NEXT, from, true), input:find(LEAVE, from, true)
      at = n and (not l or n < l) and n or l
      leave = at ~= nil and at == l
      stop = at and at + (leave and #LEAVE or #NEXT)
    end
    local pieces, stalls = pieces_of(input:sub(from, at and at - 1 or -1), ctl & 0x1f)
    conns[#conns + 1] = { reply = {}, leave = leave, idle = 0, pieces = pieces,
      stalls = stalls }
    from = stop
  until not at
  nsessions = 0
  skew = 0
  TOKENS.brief.exp = real_time() + 600
  reported, handled = {}, {}
  local replies = exchange(mcp and transport:port() or app:port(), conns, ctl & 0x40 ~= 0,
    ctl & 0x20 ~= 0)
  for i, reply in ipairs(replies) do
    if trace then trace:write("---- reply ", i, "\n", reply, "\n---- end\n") end
    -- an error in a task or a callback comes with the reply it spoiled: say it first
    local ok, heads = pcall(check_reply, reply, mcp)
    assert(#reported == 0, "an error nobody waited for: " .. tostring(reported[1]))
    assert(ok, fmt("connection %d: %s", i, heads))
    -- every request handed to Lua is answered, at least its head, unless its client left
    local c = conns[i]
    local n = c.port and handled[c.port] or 0
    assert(c.leave or c.stalled or heads >= n, fmt("connection %d: %d requests handled, %d "
      .. "answers begun", i, n, heads))
  end
  assert(drain(idle), "in flight once the client is gone: " .. in_flight())
  -- the next input starts with no session: closing them must leave nothing behind
  local list = {}
  for _, s in pairs(transport.sessions) do list[#list + 1] = s end
  for _, s in ipairs(list) do s.conn:close("the next input") end
  assert(next(transport.sessions) == nil, "a session survived its close")
  assert(drain(idle), "in flight once the sessions are closed: " .. in_flight())
  assert(#reported == 0, "an error nobody waited for: " .. tostring(reported[1]))
end
