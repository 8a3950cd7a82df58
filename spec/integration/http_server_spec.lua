-- The HTTP server (core.http_listen and claude.http.server) against real
-- clients: Debian's curl and Node's http module, spawned as processes.
local claude = require "claude"
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local process = require "claude.process"
local http = require "claude.http.server"
local harness = require "support.harness"

local NODE = harness.root .. "/node_modules/.bin/node"
local SSE = { ["content-type"] = "text/event-stream" }

local function url(srv, path)
  return "http://127.0.0.1:" .. srv:port() .. (path or "/")
end

-- Runs curl; returns its exit code and stdout (lines joined with "\n").
local function curl(args)
  local p <close> = assert(process.spawn { "curl", args = args, stderr = "collect" })
  local lines = {}
  for line in p:lines(20) do lines[#lines + 1] = line end
  return p:wait(20), table.concat(lines, "\n")
end

local function live_servers()
  return core.stats().objects.http_server or 0
end

-- Waits until fewer than `n` servers are alive (closing ones count).
local function wait_servers_below(n)
  for _ = 1, 500 do
    if live_servers() < n then return end
    claude.sleep(0.005)
  end
  error("the server did not finish closing")
end

-- The status code curl gets for a GET of `u`.
local function status_of(u)
  local code, out = curl { "-s", "-o", "/dev/null", "-w", "%{http_code}", u }
  assert.equal(0, code)
  return out
end

-- Closes the server and waits until its handles are gone.
local function close(srv)
  local n = live_servers()
  srv:close()
  wait_servers_below(n)
end

-- Collects the errors that reach claude.on_error while fn runs.
local function errors_during(fn)
  local seen = {}
  claude.on_error(function(err) seen[#seen + 1] = tostring(err) end)
  local ok, err = pcall(fn)
  claude.sleep(0.01) -- task errors are reported at the next turn of the loop
  claude.on_error(nil)
  assert(ok, err)
  return seen
end

describe("the HTTP server", function()
  before_each(harness.before)
  after_each(harness.after)

  it("hands a request to on_request as a table and sends the response", function()
    local seen
    local srv = assert(core.http_listen { on_request = function(req, res)
      seen = req
      assert(res:respond(201, { ["content-type"] = "text/plain", ["x-many"] = { "1", "2" } },
        "hello " .. req.method))
    end })
    local code, out = curl { "-si", "-H", "X-Rep: a", "-H", "X-Rep: b", "-H", "Cookie: a=1",
      "-H", "Cookie: b=2", "--path-as-is", url(srv, "/a/../b%2Fc/d?x=1&y=%20") }
    assert.equal(0, code)
    assert.matches("^HTTP/1.1 201 Created\n", out) -- (the line reader drops CRs)
    assert.matches("\ncontent%-type: text/plain\n", out)
    assert.matches("\nx%-many: 1\nx%-many: 2\n", out)
    assert.matches("\nContent%-Length: 9\n", out)
    assert.matches("\nhello GET$", out)
    assert.equal("GET", seen.method)
    assert.equal("/b/c/d", seen.path) -- h2o's normalized path: decoded, dots resolved
    assert.equal("x=1&y=%20", seen.query)
    assert.equal("/a/../b%2Fc/d?x=1&y=%20", seen.target)
    assert.equal("HTTP/1.1", seen.version)
    assert.equal("", seen.body)
    assert.equal("a, b", seen.headers["x-rep"])
    assert.equal("a=1; b=2", seen.headers.cookie)
    assert.equal("127.0.0.1:" .. srv:port(), seen.headers.host)
    assert.matches("^curl/", seen.headers["user-agent"])
    local reps = {}
    for i = 1, #seen.raw_headers, 2 do
      if seen.raw_headers[i] == "x-rep" then reps[#reps + 1] = seen.raw_headers[i + 1] end
    end
    assert.same({ "a", "b" }, reps)
    assert.equal("127.0.0.1", seen.remote_address)
    assert.is_true(seen.remote_port > 0)
    close(srv)
  end)

  it("hands a lean request (lean = true): without target, version, raw_headers",
    function()
      local seen
      local srv = assert(core.http_listen { lean = true, on_request = function(req, res)
        seen = req
        res:respond(200, nil, "ok")
      end })
      local code = curl { "-s", "-H", "X-Rep: a", "-H", "X-Rep: b", "-H", "Cookie: a=1",
        "-H", "Cookie: b=2", "-d", "hi", "--path-as-is", url(srv, "/a/../b%2Fc/d?x=1") }
      assert.equal(0, code)
      local keys = {}
      for k in pairs(seen) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.same({ "body", "headers", "method", "path", "query", "remote_address",
        "remote_port" }, keys)
      assert.same({ "POST", "/b/c/d", "x=1", "hi", "127.0.0.1" },
        { seen.method, seen.path, seen.query, seen.body, seen.remote_address })
      assert.equal("a, b", seen.headers["x-rep"])
      assert.equal("a=1; b=2", seen.headers.cookie)
      assert.equal("127.0.0.1:" .. srv:port(), seen.headers.host)
      close(srv)
      assert.has_error(function() core.http_listen { lean = 1, on_request = print } end,
        "bad field 'lean' (boolean expected, got number)")
    end)

  it("takes POST, PUT and DELETE bodies, whole", function()
    local bodies = {}
    local srv = assert(core.http_listen { on_request = function(req, res)
      bodies[#bodies + 1] = req.method .. " " .. req.body
      res:respond(200, nil, tostring(#req.body))
    end })
    local big = harness.tempfile(string.rep("0123456789", 100000)) -- 1 MB
    assert.same({ 0, "5" }, { curl { "-s", "-d", "hello", url(srv) } })
    assert.same({ 0, "3" }, { curl { "-s", "-X", "PUT", "-d", "put", url(srv) } })
    assert.same({ 0, "0" }, { curl { "-s", "-X", "DELETE", url(srv, "/x") } })
    assert.same({ 0, "1000000" }, { curl { "-s", "--data-binary", "@" .. big, url(srv) } })
    assert.same({ 0, "7" }, { curl { "-s", "-H", "Transfer-Encoding: chunked", "-d", "chunked",
      url(srv) } })
    os.remove(big)
    assert.same({ "POST hello", "PUT put", "DELETE " }, { bodies[1], bodies[2], bodies[3] })
    assert.equal("POST chunked", bodies[5])
    close(srv)
  end)

  it("answers 413 to a body over max_body without calling on_request", function()
    local calls = 0
    local srv = assert(core.http_listen { max_body = 1000, on_request = function(_, res)
      calls = calls + 1
      res:respond(200, nil, "ok")
    end })
    local exact = harness.tempfile(string.rep("x", 1000))
    local over = harness.tempfile(string.rep("x", 1001))
    local function status(file)
      return select(2, curl { "-s", "-o", "/dev/null", "-w", "%{http_code}",
        "--data-binary", "@" .. file, url(srv) })
    end
    assert.equal("200", status(exact))
    assert.equal("413", status(over))
    assert.equal(1, calls)
    assert.equal("200", status(exact)) -- and the server goes on
    os.remove(exact)
    os.remove(over)
    close(srv)
  end)

  it("keeps a connection alive across requests", function()
    local srv = assert(core.http_listen { on_request = function(req, res)
      res:respond(200, nil, req.remote_port .. "\n")
    end })
    local code, out = curl { "-s", url(srv, "/1"), url(srv, "/2"), url(srv, "/3") }
    assert.equal(0, code)
    local a, b, c = out:match("^(%d+)\n(%d+)\n(%d+)$")
    assert.truthy(a)
    assert.is_true(a == b and b == c)
    close(srv)
  end)

  it("streams a body that the client reads as it is written", function()
    local stream
    local srv = assert(core.http_listen { on_request = function(_, res)
      stream = res
      assert(res:start(200, SSE))
      assert(res:write("data: 1\n\n"))
    end })
    local p <close> = assert(process.spawn { "curl", args = { "-sN", url(srv, "/sse") } })
    assert.equal("data: 1", p:read_line(10)) -- (the line reader skips empty lines)
    -- the second event is written only once the client has read the first
    assert.equal("streaming", stream:state())
    assert.is_true(stream:write("data: 2\n\n"))
    assert.equal("data: 2", p:read_line(10))
    assert.is_true(stream:finish("data: end\n\n"))
    assert.equal("data: end", p:read_line(10))
    assert.is_nil(p:read_line(10))
    assert.equal(0, p:wait(10)) -- a clean end of the chunked body
    assert.equal("finished", stream:state())
    local ok, err, code = stream:write("late")
    assert.is_nil(ok)
    assert.equal("finished", code)
    assert.matches("already finished", err)
    close(srv)
  end)

  it("sends the head of a stream at start, before any of its body", function()
    -- found by fuzz_http: h2o's chunked encoder held the head back until the first write,
    -- so a client of an event stream with nothing to say yet never saw its answer begin
    local stream
    local srv = assert(core.http_listen { on_request = function(_, res)
      stream = res
      assert(res:start(200, SSE))
    end })
    local script = [[
      require('http').get({ host: '127.0.0.1', port: process.argv[1], path: '/sse' }, res => {
        console.log('head ' + res.statusCode + ' ' + res.headers['transfer-encoding']);
        res.on('data', d => console.log('body ' + JSON.stringify(String(d))));
        res.on('end', () => console.log('end'));
      }).on('error', e => console.log('error ' + e.message));
    ]]
    local p <close> = assert(process.spawn { NODE, args = { "-e", script, tostring(srv:port()) } })
    assert.equal("head 200 chunked", p:read_line(10))
    assert.is_true(stream:write("data: 1\n\n"))
    assert.equal('body "data: 1\\n\\n"', p:read_line(10))
    assert.is_true(stream:finish())
    assert.equal("end", p:read_line(10)) -- the chunked body ended cleanly
    assert.equal(0, p:wait(10))
    close(srv)
  end)

  it("answers later, from a task, after a wait", function()
    local srv = assert(http.listen { on_request = function(req, res)
      claude.sleep(0.05)
      res:respond(200, { ["content-type"] = "text/plain" }, "slept " .. req.path)
    end })
    assert.same({ 0, "slept /zz" }, { curl { "-s", url(srv, "/zz") } })
    -- a response kept by the handler and answered by another task
    local held = async.event()
    local kept
    local srv2 = assert(core.http_listen { on_request = function(_, res)
      kept = res
      held:set()
    end })
    local answerer = claude.spawn(function()
      assert(held:wait(10))
      claude.sleep(0.02)
      assert(kept:respond(200, nil, "from another task"))
    end)
    assert.same({ 0, "from another task" }, { curl { "-s", url(srv2) } })
    assert(answerer:join(10))
    close(srv)
    close(srv2)
  end)

  it("calls on_close when the client goes away mid-stream", function()
    local gone = async.event()
    local stream, why
    local srv = assert(core.http_listen { on_request = function(_, res)
      stream = res
      res.on_close = function(r, reason)
        assert.equal(stream, r)
        why = reason
        gone:set()
      end
      res:start(200, SSE)
      res:write("data: 1\n\n")
    end })
    local p <close> = assert(process.spawn { "curl", args = { "-sN", url(srv) } })
    assert.equal("data: 1", p:read_line(10))
    p:kill()
    p:wait(10)
    assert.is_true(gone:wait(10)) -- noticed with nothing being written
    assert.equal("client disconnected", why)
    assert.equal("closed", stream:state())
    local ok, err, code = stream:write("data: 2\n\n")
    assert.is_nil(ok)
    assert.equal("closed", code)
    assert.matches("client disconnected", err)
    close(srv)
  end)

  it("calls on_close when the client goes away before the answer", function()
    local gone = async.event()
    local kept
    local srv = assert(core.http_listen { on_request = function(_, res)
      kept = res
      res.on_close = function() gone:set() end
    end })
    local code = curl { "-s", "-m", "0.3", url(srv) } -- gives up waiting
    assert.equal(28, code)
    assert.is_true(gone:wait(10))
    assert.same({ nil, "closed" }, { select(1, kept:respond(200)), select(3, kept:respond(200)) })
    close(srv)
  end)

  it("answers 500 when on_request raises, and goes on", function()
    local fail = true
    local srv = assert(core.http_listen { on_request = function(_, res)
      if fail then error("boom") end
      res:respond(200, nil, "fine")
    end })
    local reported = errors_during(function()
      assert.equal("500", status_of(url(srv)))
    end)
    assert.equal(1, #reported)
    assert.matches("boom", reported[1])
    fail = false
    assert.same({ 0, "fine" }, { curl { "-s", url(srv) } })
    close(srv)
  end)

  it("answers 500 when a task handler raises after a wait, and aborts a raising stream", function()
    local srv = assert(http.listen { on_request = function(req, res)
      claude.sleep(0.01)
      if req.path == "/stream" then
        res:start(200, SSE)
        res:write("data: 1\n\n")
        claude.sleep(0.01)
      end
      error("late boom " .. req.path)
    end })
    local reported = errors_during(function()
      assert.equal("500", status_of(url(srv)))
      local code, out = curl { "-sN", url(srv, "/stream") }
      assert.equal(56, code) -- curl: a broken chunk, the body did not end
      assert.matches("^data: 1", out)
    end)
    assert.equal(2, #reported)
    assert.matches("late boom /", reported[1])
    assert.matches("late boom /stream", reported[2])
    close(srv)
  end)

  it("serves many requests at once on many connections", function()
    local ports, pending, most = {}, 0, 0
    local srv = assert(http.listen { on_request = function(req, res)
      ports[req.remote_port] = true
      pending = pending + 1
      most = math.max(most, pending)
      claude.sleep(0.001)
      pending = pending - 1
      res:respond(200, nil, req.path:sub(2))
    end })
    local script = [[
      const http = require('http');
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const n = 300; let ok = 0, done = 0;
      for (let i = 0; i < n; i++) {
        http.get({ host: '127.0.0.1', port: process.argv[1], path: '/' + i, agent }, res => {
          let body = '';
          res.on('data', d => body += d);
          res.on('end', () => {
            if (res.statusCode === 200 && body === String(i)) ok++;
            if (++done === n) { console.log(ok); agent.destroy(); }
          });
        }).on('error', e => { console.log('error ' + e.message); process.exit(1); });
      }
    ]]
    local p <close> = assert(process.spawn { NODE, args = { "-e", script, tostring(srv:port()) } })
    assert.equal("300", p:read_line(30))
    assert.equal(0, p:wait(30))
    local nports = 0
    for _ in pairs(ports) do nports = nports + 1 end
    assert.is_true(nports > 1 and nports <= 16)
    assert.is_true(most > 1)
    close(srv)
  end)

  it("ends open responses when it closes", function()
    local closes = {}
    local waiting = async.event()
    local srv = assert(core.http_listen { on_request = function(req, res)
      res.on_close = function(_, reason) closes[#closes + 1] = req.path .. " " .. reason end
      if req.path == "/stream" then
        res:start(200, SSE)
        res:write("data: 1\n\n")
      else
        waiting:set()
      end
    end })
    local s <close> = assert(process.spawn { "curl", args = { "-sN", url(srv, "/stream") } })
    local w <close> = assert(process.spawn { "curl", args = { "-s", "-o", "/dev/null",
      "-w", "%{http_code}", url(srv, "/wait") } })
    assert.equal("data: 1", s:read_line(10))
    assert(waiting:wait(10))
    local n = live_servers()
    srv:close()
    assert.equal("claude.HttpServer (closed)", tostring(srv))
    assert.is_nil(s:read_line(10))
    assert.equal(0, s:wait(10)) -- the stream ended cleanly
    assert.equal("503", w:read_line(10))
    table.sort(closes)
    assert.same({ "/stream server closed", "/wait server closed" }, closes)
    assert.has_error(function() srv:port() end, "attempt to use a closed server")
    wait_servers_below(n)
  end)

  it("reports a port in use and bad options", function()
    local srv = assert(core.http_listen { on_request = function() end })
    local again, err, code = core.http_listen { port = srv:port(), on_request = function() end }
    assert.is_nil(again)
    assert.equal("EADDRINUSE", code)
    assert.matches("EADDRINUSE", err)
    local a2, e2, c2 = http.listen { port = srv:port(), on_request = function() end }
    assert.is_nil(a2)
    assert.is_true(errors.is(e2, "connection"))
    assert.equal("connection", c2) -- nil, err, kind; the system's code is err.code
    assert.equal("EADDRINUSE", e2.code)
    assert.has_error(function() core.http_listen {} end,
      "bad field 'on_request' (function expected, got nil)")
    assert.has_error(function() core.http_listen { on_request = print, host = "nowhere" } end,
      "bad field 'host' (an IPv4 or IPv6 address expected, got 'nowhere')")
    assert.has_error(function() core.http_listen { on_request = print, port = 70000 } end,
      "bad field 'port' (0-65535 expected)")
    assert.has_error(function() core.http_listen { on_request = print, max_body = "x" } end,
      "bad field 'max_body' (integer expected, got string)")
    assert.has_error(function() http.listen { on_request = 1 } end,
      "bad field 'on_request' to 'listen' (function expected, got number)")
    assert.has_error(function() http.listen { on_request = print, port = 70000 } end,
      "bad field 'port' to 'listen' (0-65535 expected)")
    assert.has_error(function() http.listen { on_request = print, max_queue = 10 } end,
      "unknown field 'max_queue' to 'listen' (did you mean 'max_queued'?)")
    assert.matches("^claude.HttpServer %(http://127.0.0.1:%d+, 0 connections%)$", tostring(srv))
    assert.same({ "127.0.0.1", srv:port() }, { srv:address() })
    close(srv)
  end)

  it("sends headers made once with core.http_headers, as it sends a table", function()
    local made = core.http_headers { ["Content-Type"] = "text/plain", ["X-Many"] = { "1", "2" },
      ["x-id"] = 7 }
    local closing = core.http_headers { connection = "close" }
    local stream = core.http_headers { ["content-type"] = "text/event-stream" }
    assert.equal("claude.HttpHeaders (4)", tostring(made))
    local srv = assert(core.http_listen { on_request = function(req, res)
      if req.path == "/close" then return res:respond(200, closing, "bye") end
      if req.path == "/stream" then
        res:start(200, stream)
        return res:finish("data: x\n\n")
      end
      res:respond(200, made, "hello")
    end })
    local code, out = curl { "-si", url(srv), url(srv) } -- two on one connection
    assert.equal(0, code)
    for line, times in pairs { ["content-type: text/plain"] = 2, ["x-many: 1\nx-many: 2"] = 2,
      ["x-id: 7"] = 2, hello = 2 } do
      assert.equal(times, select(2, out:gsub("\n" .. line:gsub("%-", "%%-"), "")), line)
    end
    code, out = curl { "-si", url(srv, "/close") }
    assert.equal(0, code)
    assert.matches("\n[Cc]onnection: close\n", out)
    code, out = curl { "-si", url(srv, "/stream") }
    assert.equal(0, code)
    assert.matches("\ncontent%-type: text/event%-stream\n", out)
    assert.matches("data: x", out)
    close(srv)
    -- checked when made, with respond's words
    assert.has_error(function() core.http_headers { ["bad name"] = "v" } end,
      "bad header name 'bad name'")
    assert.has_error(function() core.http_headers { ["x-bad"] = "a\r\nb" } end,
      "bad header 'x-bad' (CR, LF or NUL in its value)")
    assert.has_error(function() core.http_headers { ["Content-Length"] = "3" } end,
      "bad header 'Content-Length' (the server sets it)")
    assert.has_error(function() core.http_headers("x") end)
  end)

  it("rejects bad response headers and misuse with clear errors", function()
    local results = {}
    local srv = assert(core.http_listen { on_request = function(req, res)
      local function try(fn) local ok, e = pcall(fn); results[#results + 1] = ok or e end
      try(function() res:respond(200, { ["x-bad"] = "a\r\nx-injected: 1" }) end)
      try(function() res:respond(200, { ["bad name"] = "v" }) end)
      try(function() res:respond(200, { ["content-length"] = "3" }) end)
      try(function() res:respond(99) end)
      try(function() res:write("x") end)
      try(function() res.respond = 1 end)
      res.user_field = req.path
      assert.equal(req.path, res.user_field)
      assert(res:respond(200, { ["x-ok"] = 1 }, "ok"))
      results[#results + 1] = select(3, res:respond(200))
      try(function() res:finish() end)
    end })
    assert.same({ 0, "ok" }, { curl { "-s", url(srv) } })
    assert.matches("bad header 'x%-bad' %(CR, LF or NUL in its value%)", results[1])
    assert.matches("bad header name 'bad name'", results[2])
    assert.matches("bad header 'content%-length' %(the server sets it%)", results[3])
    assert.matches("status must be 200%-599", results[4])
    assert.matches("write before start", results[5])
    assert.matches("cannot replace the method 'respond'", results[6])
    assert.equal("finished", results[7])
    assert.is_true(results[8]) -- finish on a finished response: nil, err (no raise)
    close(srv)
  end)

  it("answers HEAD without a body and HTTP/1.0 with a close-delimited stream", function()
    local srv = assert(core.http_listen { on_request = function(req, res)
      if req.path == "/stream" then
        res:start(200, { ["content-type"] = "text/plain" })
        res:write("a")
        res:finish("b")
      else
        res:respond(200, { ["content-type"] = "text/plain" }, "body")
      end
    end })
    local code, out = curl { "-sI", url(srv) }
    assert.equal(0, code)
    assert.matches("Content%-Length: 4", out)
    assert.same({ 0, "ab" }, { curl { "-s", "-0", url(srv, "/stream") } })
    -- HEAD of a stream, twice on one connection: no body, the connection lives
    code, out = curl { "-sI", url(srv, "/stream"), url(srv, "/stream") }
    assert.equal(0, code)
    assert.equal(2, select(2, out:gsub("HTTP/1.1 200 OK", "")))
    assert.is_nil(out:find("ab", 1, true))
    close(srv)
  end)

  it("loads libh2o only when a server starts", function()
    local script = [[
      local function mapped()
        for l in io.lines("/proc/self/maps") do
          if l:find("libh2o", 1, true) then return true end
        end
        return false
      end
      local core = require "claude.core"
      io.write(tostring(mapped()), " ")
      local srv = assert(core.http_listen { on_request = print })
      io.write(tostring(mapped()))
      srv:close()
    ]]
    local code, out = harness.sh(harness.lua_preload .. "LUA_CPATH=" .. harness.quote(harness.build
      .. "/?.so;;") .. " lua5.4 -e " .. harness.quote(script))
    assert.equal(0, code)
    assert.equal("false true", out)
  end)

  it("says when writes queue up and calls on_drain when they went out", function()
    local drained = async.event()
    local first
    local srv = assert(core.http_listen { high_water = 0, on_request = function(_, res)
      res:start(200, { ["content-type"] = "text/plain" })
      res.on_drain = function(r)
        assert.equal(0, r:queued())
        r:finish("end\n")
        drained:set()
      end
      first = res:write(string.rep("x", 100) .. "\n") -- in flight: over a high_water of 0
    end })
    local code, out = curl { "-s", url(srv) }
    assert.equal(0, code)
    assert.is_false(first)
    assert.is_true(drained:wait(10))
    assert.equal(string.rep("x", 100) .. "\nend", out)
    close(srv)
  end)

  it("cuts a client that does not read once close_grace has passed", function()
    local started, closed = async.event(), async.event()
    local srv = assert(core.http_listen { close_grace = 0.1, on_request = function(_, res)
      res.on_close = function() closed:set() end
      res:start(200, { ["content-type"] = "text/plain" })
      local chunk = string.rep("x", 1024 * 1024)
      for _ = 1, 64 do res:write(chunk) end -- more than the socket buffers hold
      started:set()
    end })
    -- curl writes into a pipe nobody reads: it stops reading the socket
    local p <close> = assert(process.spawn { "sh", args = { "-c",
      "exec curl -sN " .. url(srv) .. " | sleep 30" } })
    assert.is_true(started:wait(10))
    local n = live_servers()
    srv:close()
    assert.is_true(closed:wait(10))
    wait_servers_below(n) -- the stuck connection was cut
    p:close(0)
  end)
end)

-- Raw bytes on one TCP connection (Node's net module): what the server answers, and whether
-- it closed the connection. `expect` answers end the wait (a kept-alive connection stays open).
local WIRE = [[
  const fs = require('fs'), net = require('net');
  const [port, file, expect] = process.argv.slice(1);
  let out = '', done = false;
  const finish = (how) => {
    if (done) return;
    done = true;
    process.stdout.write(JSON.stringify({ out, how }) + '\n');
    process.exit(0);
  };
  const s = net.connect(+port, '127.0.0.1', () => s.write(fs.readFileSync(file)));
  s.on('data', d => {
    out += d.toString('latin1');
    if ((out.match(/ok \//g) || []).length >= +expect) finish('answered');
  });
  s.on('end', () => finish('closed'));
  s.on('error', e => finish(e.code));
]]

local json = require "claude.json"

-- Sends `bytes`; returns the statuses answered, how the connection ended ("closed",
-- "answered" once `expect` requests were answered, or an error code such as ECONNRESET),
-- and what the server wrote.
local function wire(srv, bytes, expect)
  local file = harness.tempfile(bytes)
  local p <close> = assert(process.spawn { NODE, args = { "-e", WIRE, tostring(srv:port()), file,
    tostring(expect or 1000) } })
  local r = json.decode(assert(p:read_line(20)))
  p:wait(20)
  os.remove(file)
  local statuses = {}
  for s in r.out:gmatch("HTTP/1%.1 (%d%d%d)") do statuses[#statuses + 1] = tonumber(s) end
  return statuses, r.how, r.out
end

describe("the HTTP server reads requests as RFC 9112 frames them", function()
  local seen, srv
  before_each(function()
    harness.before()
    seen = {}
    srv = assert(core.http_listen { max_body = 1000, on_request = function(req, res)
      seen[#seen + 1] = req.method .. " " .. req.path .. " " .. req.body
      res:respond(200, { ["content-type"] = "text/plain" }, "ok " .. req.path .. "\n")
    end })
  end)
  after_each(function()
    close(srv)
    harness.after()
  end)

  local HIDDEN = "GET /hidden HTTP/1.1\r\nHost: x\r\n\r\n"
  local function post(fields, body)
    return "POST /a HTTP/1.1\r\nHost: x\r\n" .. fields .. "\r\n" .. (body or "")
  end

  it("refuses what could smuggle a second request: 400, then the connection closes", function()
    for name, bytes in pairs {
      ["Content-Length and Transfer-Encoding"] = post("Content-Length: 5\r\n"
        .. "Transfer-Encoding: chunked\r\n", "0\r\n\r\n" .. HIDDEN),
      ["Transfer-Encoding and Content-Length"] = post("Transfer-Encoding: chunked\r\n"
        .. "Content-Length: 5\r\n", "0\r\n\r\n" .. HIDDEN),
      ["two Content-Lengths"] = post("Content-Length: 0\r\nContent-Length: 34\r\n", HIDDEN),
      ["a Content-Length list"] = post("Content-Length: 0, 34\r\n", HIDDEN),
      ["a signed Content-Length"] = post("Content-Length: +0\r\n", HIDDEN),
      ["two Transfer-Encodings"] = post("Transfer-Encoding: chunked\r\n"
        .. "Transfer-Encoding: chunked\r\n", "0\r\n\r\n" .. HIDDEN),
      ["a coding other than chunked"] = post("Transfer-Encoding: gzip, chunked\r\n",
        "0\r\n\r\n" .. HIDDEN),
      ["Transfer-Encoding in HTTP/1.0"] = "POST /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive"
        .. "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" .. HIDDEN,
      ["a folded line"] = post("X: a\r\n Transfer-Encoding: chunked\r\nContent-Length: 0\r\n",
        HIDDEN),
      ["a blank before the colon"] = post("Transfer-Encoding : chunked\r\nContent-Length: 0\r\n",
        HIDDEN),
      ["a bare LF"] = "POST /a HTTP/1.1\nHost: x\nContent-Length: 0\n\n" .. HIDDEN,
      ["a chunk size with junk after it"] = post("Transfer-Encoding: chunked\r\n",
        "0 x\r\n\r\n" .. HIDDEN),
      ["a chunk not ended by CRLF"] = post("Transfer-Encoding: chunked\r\n",
        "1\r\nab\r\n0\r\n\r\n" .. HIDDEN),
      ["trailer fields"] = post("Transfer-Encoding: chunked\r\n",
        "0\r\nX: y\r\n\r\n" .. HIDDEN),
      ["two Hosts"] = "GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" .. HIDDEN,
      ["no Host in HTTP/1.1"] = "GET /a HTTP/1.1\r\n\r\n" .. HIDDEN,
      ["a Host that is not one"] = "GET /a HTTP/1.1\r\nHost: a b\r\n\r\n" .. HIDDEN,
      ["a Host with text after its brackets"] = "GET /a HTTP/1.1\r\nHost: [::1]evil.com\r\n\r\n"
        .. HIDDEN,
      ["a control character in a value"] = post("X: a\1b\r\nContent-Length: 0\r\n", HIDDEN),
    } do
      local statuses, how = wire(srv, bytes)
      assert.same({ 400 }, statuses, name)
      assert.equal("closed", how, name)
    end
    assert.same({}, seen)
  end)

  it("answers the requests before a bad one, then refuses it and closes", function()
    local statuses, how = wire(srv, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
      .. post("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n") .. HIDDEN)
    assert.same({ 200, 400 }, statuses)
    assert.equal("closed", how)
    assert.same({ "GET /1 " }, seen)
  end)

  it("keeps well-framed requests on one connection, pipelined", function()
    local statuses, how = wire(srv, "\r\nGET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
      .. post("Content-Length: 3\r\n", "abc")
      .. post("Transfer-Encoding: Chunked\r\n", "3;ext=1\r\nxyz\r\nA\r\n0123456789\r\n0\r\n\r\n")
      .. "GET /4 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 4)
    assert.same({ 200, 200, 200, 200 }, statuses)
    assert.equal("answered", how)
    assert.same({ "GET /1 ", "POST /a abc", "POST /a xyz0123456789", "GET /4 " }, seen)
  end)

  it("reads what a client sends while its request is answered, once the answer is out",
    function()
      -- The first request's answer waits; meanwhile the client sends a second: the server
      -- reads nothing while it answers (the head and the body of the request it answers are
      -- in its read buffer), then both are answered, in order.
      local late = assert(http.listen { on_request = function(req, res)
        seen[#seen + 1] = req.method .. " " .. req.path .. " " .. req.body
        if req.path == "/1" then claude.sleep(0.3) end
        res:respond(200, { ["content-type"] = "text/plain" }, "ok " .. req.path .. "\n")
      end })
      local p <close> = assert(process.spawn { NODE, args = { "-e", [[
        const net = require('net');
        let out = '';
        const s = net.connect(+process.argv[1], '127.0.0.1', () => {
          s.write('POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
          setTimeout(() => s.write('GET /2 HTTP/1.1\r\nHost: x\r\n\r\n'), 100);
        });
        const done = (error) => {
          process.stdout.write(JSON.stringify({ out, error }) + '\n');
          process.exit(0);
        };
        s.on('data', d => { out += d.toString('latin1'); if (/ok \/2/.test(out)) done(); });
        s.on('end', () => done());
        s.on('error', e => done(e.code));
      ]], tostring(late:port()) } })
      local r = json.decode(assert(p:read_line(20)))
      p:wait(20)
      assert.is_nil(r.error)
      assert.same({ "ok /1", "ok /2" }, { r.out:match("(ok /1).*(ok /2)") })
      assert.same({ "POST /1 abc", "GET /2 " }, seen)
      close(late)
    end)

  it("answers 431 to a head over max_header and 413 to a body over max_body, then closes",
    function()
      for _, case in ipairs {
        { 431, "GET /a HTTP/1.1\r\nHost: x\r\nX: " .. string.rep("y", 70 * 1024) .. "\r\n\r\n" },
        -- past h2o's own limit (it closed without a word)
        { 431, "GET /a HTTP/1.1\r\nHost: x\r\nX: " .. string.rep("y", 500 * 1024) .. "\r\n\r\n" },
        -- more fields than h2o takes (it answered 400)
        { 431, "GET /a HTTP/1.1\r\nHost: x\r\n" .. string.rep("X: y\r\n", 101) .. "\r\n" },
        -- a body still coming when the answer goes (the close reset the connection, and the
        -- client lost the answer)
        { 413, post("Content-Length: 3000000\r\n", string.rep("x", 3000000)) },
        { 413, post("Transfer-Encoding: chunked\r\n", "100000\r\n" .. string.rep("x", 1048576)
          .. "\r\n0\r\n\r\n") },
      } do
        local statuses, how = wire(srv, case[2])
        assert.same({ case[1] }, statuses)
        assert.equal("closed", how)
      end
      assert.same({}, seen)
      -- at max_header and max_body, requests go through
      local small = assert(core.http_listen { max_header = 200, max_body = 10,
        on_request = function(req, res) res:respond(200, nil, "ok " .. req.path .. "\n") end })
      local head = "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n"
      head = head .. "X: " .. string.rep("y", 200 - #head - 7) .. "\r\n\r\n"
      assert.equal(200, #head)
      assert.same({ 200 }, (wire(small, head .. "0123456789", 1)))
      assert.same({ 431 }, (wire(small, head:gsub("X: ", "X: y") .. "0123456789")))
      close(small)
    end)
end)

-- A client that stops reading: curl writes into a pipe nobody reads, so it stops reading the
-- socket once the pipe is full.
local function stuck_client(u, args)
  return assert(process.spawn { "sh", args = { "-c",
    "exec curl -sN " .. (args or "") .. " " .. u .. " | sleep 60" } })
end

describe("the HTTP server's bounds per client", function()
  before_each(harness.before)
  after_each(harness.after)

  it("drops a client past max_queued: the write says so, on_close says why", function()
    local closed, why, last = async.event(), nil, nil
    local chunk = string.rep("x", 64 * 1024)
    local srv = assert(core.http_listen { high_water = 16 * 1024, max_queued = 256 * 1024,
      write_timeout = 0, on_request = function(_, res)
        res:start(200, { ["content-type"] = "text/plain" })
        res.on_close = function(_, reason)
          why = reason
          closed:set()
        end
        -- a writer that ignores write's false: 64 MB, far more than the sockets hold
        for _ = 1, 1024 do
          local ok, err, code = res:write(chunk)
          if ok == nil then
            last = { err, code }
            break
          end
        end
      end })
    local p <close> = stuck_client(url(srv))
    assert.is_true(closed:wait(20))
    assert.matches("too slow", why)
    assert.equal("closed", last and last[2])
    assert.matches("max_queued", last[1])
    local st = srv:stats()
    assert.equal(1, st.dropped_slow)
    -- the queue never held more than the bound and the write that found it full
    assert.is_true(st.queued_peak <= 256 * 1024 + #chunk, st.queued_peak)
    p:close(0)
    close(srv)
  end)

  it("drops a client that takes nothing for write_timeout, also after a complete answer",
    function()
      local closed, why = async.event(), nil
      local srv = assert(core.http_listen { write_timeout = 1, on_request = function(req, res)
        if req.path == "/big" then -- one answer larger than the sockets hold
          res:respond(200, { ["content-type"] = "text/plain" }, string.rep("y", 32 * 1024 * 1024))
          return
        end
        res:start(200, { ["content-type"] = "text/plain" })
        res.on_close = function(_, reason)
          why = reason
          closed:set()
        end
        -- a writer that waits whenever write says the queue is over high_water
        local chunk = string.rep("x", 64 * 1024)
        local function more()
          while true do
            local ok = res:write(chunk)
            if ok == nil then return end
            if ok == false then
              res.on_drain = more
              return
            end
          end
        end
        more()
      end })
      local p <close> = stuck_client(url(srv))
      assert.is_true(closed:wait(20))
      assert.matches("write timeout", why)
      assert.equal(1, srv:stats().dropped_timeout)
      local q <close> = stuck_client(url(srv, "/big"))
      for _ = 1, 2000 do
        if srv:stats().dropped_timeout == 2 then break end
        claude.sleep(0.01)
      end
      assert.equal(2, srv:stats().dropped_timeout)
      for _ = 1, 2000 do
        if srv:stats().connections == 0 then break end
        claude.sleep(0.01)
      end
      assert.equal(0, srv:stats().connections)
      -- a client that reads gets a large answer whole, and an idle kept-alive connection
      -- is not a slow one
      local code, out = curl { "-s", url(srv, "/big"), "-o", "/dev/null", "-w",
        "%{size_download} %{http_code}" }
      assert.equal(0, code)
      assert.equal(tostring(32 * 1024 * 1024) .. " 200", out)
      p:close(0)
      q:close(0)
      close(srv)
    end)

  it("answers 503 to connections past max_connections, and serves again below", function()
    local streams = {}
    local srv = assert(core.http_listen { max_connections = 2, on_request = function(req, res)
      if req.path == "/hold" then
        res:start(200, { ["content-type"] = "text/plain" })
        res:write("held\n")
        streams[#streams + 1] = res
      else
        res:respond(200, nil, "ok")
      end
    end })
    local a <close> = assert(process.spawn { "curl", args = { "-sN", url(srv, "/hold") } })
    local b <close> = assert(process.spawn { "curl", args = { "-sN", url(srv, "/hold") } })
    assert.equal("held", a:read_line(10))
    assert.equal("held", b:read_line(10))
    local code, out = curl { "-si", url(srv, "/x") }
    assert.equal(0, code)
    assert.matches("^HTTP/1.1 503 Service Unavailable\n", out)
    assert.matches("\nRetry%-After: 1\n", out)
    assert.equal(1, srv:stats().refused)
    for _, res in ipairs(streams) do res:finish() end
    a:wait(10)
    b:wait(10)
    for _ = 1, 500 do
      if srv:stats().connections == 0 then break end
      claude.sleep(0.01)
    end
    assert.equal("200", status_of(url(srv, "/x")))
    close(srv)
  end)

  it("refuses bad bounds", function()
    for _, case in ipairs {
      { { max_queued = -1 }, "bad field 'max_queued' %(at least 0 expected%)" },
      { { write_timeout = -1 }, "bad field 'write_timeout' %(non%-negative number expected%)" },
      { { max_connections = 1.5 }, "bad field 'max_connections' %(integer expected" },
    } do
      local o = case[1]
      o.on_request = function() end
      local ok, err = pcall(core.http_listen, o)
      assert.is_false(ok)
      assert.matches(case[2], tostring(err))
    end
  end)
end)
