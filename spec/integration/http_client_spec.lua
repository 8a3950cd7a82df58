-- The HTTP client (src/http_client.c, lua/claude/http/client.lua) against a
-- local Node server (spec/support/http_server.mjs).
local claude = require "claude"
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local process = require "claude.process"
local http = require "claude.http.client"
local harness = require "support.harness"

local server, base, closed_base

local function node()
  return process.which("node") and "node" or (harness.root .. "/node_modules/.bin/node")
end

local function get_json(path)
  local resp = assert(http.request { url = base .. path, timeout = 10 })
  return json.decode(resp.body)
end

-- Waits until the server saw the client close stream `key` (no timing: it
-- asks the server until it says so, bounded by the spec's timeout).
local function wait_closed(key)
  for _ = 1, 500 do
    if get_json("/stats?key=" .. key).closed then return true end
    claude.sleep(0.01)
  end
  return false
end

local function base64(s)
  local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  return ((s:gsub(".", function(c)
    local b, out = c:byte(), ""
    for i = 8, 1, -1 do out = out .. ((b >> (i - 1)) & 1) end
    return out
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(bits)
    if #bits < 6 then return "" end
    local n = tonumber(bits, 2)
    return chars:sub(n + 1, n + 1)
  end) .. ({ "", "==", "=" })[#s % 3 + 1])
end

-- Runs the loop until `cond()` holds (outside a task), or sleeps in steps
-- (inside one).
local function run_until(cond)
  while not cond() do
    if claude.current() then claude.sleep(0.005) else core.run("once") end
  end
end

describe("the HTTP client", function()
  setup(function()
    server = assert(process.spawn { node(), args = { "spec/support/http_server.mjs" } })
    local info = json.decode(assert(server:read_line(20)))
    base = "http://127.0.0.1:" .. info.port
    closed_base = "http://127.0.0.1:" .. info.closed_port
  end)

  teardown(function()
    server:close()
  end)

  before_each(harness.before)
  after_each(harness.after)

  describe("request", function()
    it("sends a GET with headers and returns status, headers and body", function()
      local resp, err = http.request { url = base .. "/echo?q=1",
        headers = { ["x-test"] = "yes", ["X-Number"] = 42, ["x-empty"] = "" } }
      assert.is_nil(err)
      assert.equal(200, resp.status)
      assert.equal("application/json", resp.headers["content-type"])
      assert.is_string(resp.headers["x-connection"])
      local echo = json.decode(resp.body)
      assert.equal("GET", echo.method)
      assert.equal("/echo?q=1", echo.url)
      assert.equal("yes", echo.headers["x-test"])
      assert.equal("42", echo.headers["x-number"])
      assert.equal("", echo.headers["x-empty"])
      assert.matches("^claudelua/", echo.headers["user-agent"])
    end)

    it("sends a POST body as it is, with the content type given and no other", function()
      local body = json.encode { jsonrpc = "2.0", id = 1, method = "ping" }
      local resp = assert(http.request { method = "POST", url = base .. "/echo",
        headers = { ["content-type"] = "application/json", accept = "application/json" },
        body = body })
      local echo = json.decode(resp.body)
      assert.equal("POST", echo.method)
      assert.equal(body, echo.body)
      assert.equal("application/json", echo.headers["content-type"])
      assert.is_nil(echo.headers.expect)

      resp = assert(http.request { method = "PUT", url = base .. "/echo", body = "plain" })
      echo = json.decode(resp.body)
      assert.equal("PUT", echo.method)
      assert.equal("plain", echo.body)
      assert.is_nil(echo.headers["content-type"])
    end)

    it("sends a large body and an empty POST", function()
      local big = string.rep("0123456789", 100000)
      local echo = json.decode(assert(http.request { method = "POST", url = base .. "/echo",
        body = big }).body)
      assert.equal(#big, #echo.body)
      echo = json.decode(assert(http.request { method = "POST", url = base .. "/echo" }).body)
      assert.equal("POST", echo.method)
      assert.equal("0", echo.headers["content-length"])
    end)

    it("sends DELETE and HEAD", function()
      local echo = json.decode(assert(http.request { method = "DELETE",
        url = base .. "/echo" }).body)
      assert.equal("DELETE", echo.method)
      local resp = assert(http.request { method = "HEAD", url = base .. "/echo" })
      assert.equal(200, resp.status)
      assert.equal("", resp.body)
    end)

    it("returns a status >= 400 as an http error with status, headers and body", function()
      local resp, err = http.request { url = base .. "/status/404" }
      assert.is_nil(resp)
      assert.is_true(errors.is(err, "http"))
      assert.equal(404, err.status)
      assert.equal("status 404", err.body)
      assert.equal("text/plain", err.headers["content-type"])
      assert.matches("GET http://127.0.0.1:%d+/status/404: HTTP 404: status 404", tostring(err))
      resp = assert(http.request { url = base .. "/status/204" })
      assert.equal(204, resp.status)
      resp = assert(http.request { url = base .. "/status/302" }) -- not followed
      assert.equal(302, resp.status)
    end)

    it("reports a refused connection", function()
      local resp, err = http.request { url = closed_base .. "/echo" }
      assert.is_nil(resp)
      assert.is_true(errors.is(err, "connection"))
      assert.matches("Failed to connect", err.message)
    end)

    it("times out", function()
      local resp, err = http.request { url = base .. "/slow", timeout = 0.2 }
      assert.is_nil(resp)
      assert.is_true(errors.is(err, "timeout"))
      assert.matches("GET .*/slow: .*timed out", tostring(err))
    end)

    it("reports a server that closes mid-body", function()
      local resp, err = http.request { url = base .. "/truncated" }
      assert.is_nil(resp)
      assert.is_true(errors.is(err, "connection"))
      assert.matches("transfer closed with 90 bytes remaining", err.message)
      assert.equal(200, err.response.status)
    end)

    it("stops at max_body, and takes a large body by default", function()
      local resp, err = http.request { url = base .. "/big?n=100000", max_body = 1000 }
      assert.is_nil(resp)
      assert.is_true(errors.is(err, "overflow"))
      assert.matches("exceeds the limit of 1000 bytes", err.message)
      resp = assert(http.request { url = base .. "/big?n=3000000" })
      assert.equal(3000000, #resp.body)
      assert.is_nil(resp.body:find("[^x]"))
    end)

    it("returns bad URLs as url errors", function()
      for _, url in ipairs { "not a url", "ftp://127.0.0.1/", "file:///etc/passwd",
                             "http://[::1" } do
        local resp, err = http.request { url = url }
        assert.is_nil(resp)
        assert.is_true(errors.is(err, "url"), url)
      end
    end)

    it("raises for misuse at the caller's line", function()
      local function raises(opts, pattern)
        local ok, err = pcall(http.request, opts)
        assert.is_false(ok)
        assert.matches(pattern, err)
      end
      local line = "http_client_spec.lua:%d+: "
      local ok, err = pcall(function() http.request("http://x") end)
      assert.is_false(ok)
      assert.matches(line .. "bad argument #1 to 'request' %(table expected, got string%)", err)
      raises({}, "bad field 'url' to 'request' %(string expected, got nil%)")
      raises({ url = base, method = "GE T" }, "bad field 'method'")
      raises({ url = base, headers = { ["x-a"] = "1\r\nx-b: 2" } }, "CR, LF or NUL")
      raises({ url = base, headers = { ["bad name"] = "1" } }, "bad header name")
      raises({ url = base, headers = { x = {} } }, "bad value for header 'x'")
      raises({ url = base, headers = "x" }, "bad field 'headers'")
      raises({ url = base, timeout = -1 }, "bad field 'timeout'")
      raises({ url = base, max_body = 1.5 }, "bad field 'max_body'")
      raises({ url = base, body = {} }, "bad field 'body'")
      raises({ url = base, on_done = print }, "bad field 'on_done' to 'request'")
      ok, err = pcall(function() http.request { url = 7 } end)
      assert.is_false(ok)
      assert.matches(line .. "bad field 'url' to 'request'", err)
    end)

    it("runs many requests in parallel and reuses the kept-alive connections", function()
      local n = 16
      -- one round: n requests that the server answers only once all n have arrived, so
      -- they are in flight at once however the machine schedules them
      local function round(key)
        local tasks, distinct, count = {}, {}, 0
        for i = 1, n do
          tasks[i] = claude.spawn(function()
            return assert(http.request { url = base .. "/echo?i=" .. i .. "&barrier=" .. n
              .. "&key=" .. key })
          end)
        end
        for i = 1, n do
          local resp = tasks[i]:wait()
          assert.matches("^/echo%?i=" .. i .. "&", json.decode(resp.body).url)
          local id = resp.headers["x-connection"]
          if not distinct[id] then distinct[id], count = true, count + 1 end
        end
        return count
      end
      local function connections() return get_json("/stats").connections end
      assert.equal(n, round("first")) -- n connections, some of them maybe kept from before
      -- the second round runs on the first round's connections, kept alive
      local before = connections()
      assert.equal(n, round("second"))
      assert.equal(before, connections())
      -- one after the other: no new connection at all
      for _ = 1, 10 do assert(http.request { url = base .. "/echo" }) end
      assert.equal(before, connections())
    end)

    it("is aborted when its task is cancelled", function()
      local task = claude.spawn(function()
        return http.request { url = base .. "/slow" }
      end)
      assert.is_true(task:cancel())
      local ok, err = task:join()
      assert.is_false(ok)
      assert.is_true(errors.is(err, "cancelled"))
    end)
  end)

  describe("stream", function()
    it("delivers SSE events as they come", function()
      -- the server sends the second event only once the client asks for it,
      -- which it does after reading the first
      local key = tostring(math.random(1 << 30))
      local stream <close> = assert(http.stream { url = base .. "/sse/gated?key=" .. key })
      assert.equal(200, stream.status)
      assert.is_true(stream.sse)
      assert.equal("text/event-stream", stream.headers["content-type"])
      local first = assert(stream:read(10))
      assert.same({ event = "first", data = "one" }, first)
      assert.equal("released", assert(http.request { url = base .. "/release?key=" .. key }).body)
      assert.same({ event = "message", data = "two" }, assert(stream:read(10)))
      assert.same({ nil, nil }, { stream:read(10) })
      assert.is_true(stream.finished)
    end)

    it("gives ids and keeps the last one", function()
      local stream <close> = assert(http.stream { url = base .. "/sse?n=5" })
      local got = {}
      for event in stream:events(10) do got[#got + 1] = event.id .. "=" .. event.data end
      assert.same({ "1=event 1", "2=event 2", "3=event 3", "4=event 4", "5=event 5" }, got)
      assert.equal("5", stream.last_event_id)
    end)

    it("parses a stream written a byte at a time", function()
      local raw = "\239\187\191: hello\r\nretry: 2500\r\nid: a\r\nevent: e\r\ndata: 1\r\ndata: 2"
        .. "\r\n\r\ndata: x\rdata: y\r\rid\ndata:z\n\n"
      local stream <close> = assert(http.stream { url = base .. "/sse/raw?b=" .. base64(raw) })
      local got = {}
      for event in stream:events(10) do got[#got + 1] = event end
      assert.same({
        { event = "e", data = "1\n2", id = "a", retry = 2500 },
        { event = "message", data = "x\ny", id = "a", retry = 2500 },
        { event = "message", data = "z", retry = 2500 },
      }, got)
      assert.is_nil(stream.last_event_id) -- the last id line was empty
      assert.equal(2500, stream.retry)
    end)

    it("stops a stream on close, and the server sees the connection go", function()
      local key = tostring(math.random(1 << 30))
      local stream = assert(http.stream { url = base .. "/sse/forever?key=" .. key })
      for i = 1, 3 do assert.equal("tick " .. i, stream:read(10).data) end
      stream:close()
      assert.is_true(wait_closed(key))
      assert.same({ nil }, { (stream:read(0)) })
      stream:close() -- idempotent
    end)

    it("stops reading while Lua has not taken what came: a flood stays in the socket",
      function()
        -- curl read all the socket held before Lua saw any of it: 2M notifications of an MCP
        -- server queued 520 MiB in the client. A million notifications (140 MB) to a client
        -- in a process of its own, which decodes each; its peak memory is measured coarsely
        -- (it was 194 MiB, now about 12)
        local script = harness.tempfile([[
          local core = require "claude.core"
          local claude = require "claude"
          local n, done = 0, false
          local json = require "claude.json"
          core.http_request { url = arg[1], on_event = function(ev)
              n = n + #json.decode(ev.data).params.data
            end,
            on_done = function(ok, a) done = ok and "ok" or tostring(a) end }
          while not done do claude.sleep(0.01) end
          local hwm
          for line in io.lines("/proc/self/status") do
            hwm = hwm or tonumber(line:match("^VmHWM:%s+(%d+)"))
          end
          print(done, n, hwm // 1024)
        ]], ".lua")
        local p <close> = assert(process.spawn { harness.claudelua,
          args = { script, base .. "/sse/flood?n=1000000&size=100" }, stderr = "collect" })
        local line = p:read_line(60)
        assert.equal(0, p:wait(60), table.concat(p.stderr_lines or {}, "\n"))
        os.remove(script)
        local status, bytes, peak = line:match("^(%S+)%s+(%d+)%s+(%d+)$")
        assert.equal("ok", status, line)
        assert.equal(100000000, tonumber(bytes))
        -- (a sanitizer's shadow memory and quarantine make it meaningless there)
        if not os.getenv("CLAUDELUA_SANITIZER_PRELOAD") then
          assert.is_true(tonumber(peak) < 96, "peak memory " .. peak .. " MiB")
        end
      end)

    it("reports a stream cut mid-event, keeping the id and retry time for a reconnect", function()
      local stream <close> = assert(http.stream { url = base .. "/sse/truncated" })
      assert.equal("whole", stream:read(10).data)
      local event, err = stream:read(10)
      assert.is_nil(event)
      assert.is_true(errors.is(err, "connection"))
      assert.equal("7", stream.last_event_id)
      assert.equal(1500, stream.retry)
      assert.equal("7", err.response.last_event_id)
    end)

    it("fails an event over max_event", function()
      local stream <close> = assert(http.stream { url = base .. "/sse?n=1&size=5000",
        max_event = 1000 })
      local event, err = stream:read(10)
      assert.is_nil(event)
      assert.is_true(errors.is(err, "overflow"))
      assert.matches("an SSE event exceeds the limit of 1000 bytes", err.message)
    end)

    it("reads a response that is not an event stream as a body", function()
      local stream <close> = assert(http.stream { method = "POST", url = base .. "/json",
        body = "{}" })
      assert.is_false(stream.sse)
      assert.equal('{"jsonrpc":"2.0","id":1,"result":{}}', stream:body(10))
    end)

    it("reads the event stream a POST answers with (as MCP servers do)", function()
      local stream <close> = assert(http.stream { method = "POST", url = base .. "/sse?n=2",
        headers = { ["content-type"] = "application/json",
                    accept = "application/json, text/event-stream" }, body = "{}" })
      assert.is_true(stream.sse)
      assert.equal("event 1", stream:read(10).data)
      assert.equal("event 2", stream:read(10).data)
      assert.is_nil(stream:read(10))
    end)

    it("returns an http error with the body for a status >= 400", function()
      local stream, err = http.stream { url = base .. "/status/405" }
      assert.is_nil(stream)
      assert.is_true(errors.is(err, "http"))
      assert.equal(405, err.status)
      assert.equal("status 405", err.body)
    end)

    it("returns a connection error before any headers", function()
      local stream, err = http.stream { url = closed_base .. "/sse" }
      assert.is_nil(stream)
      assert.is_true(errors.is(err, "connection"))
    end)

    it("prints well", function()
      local stream = assert(http.stream { url = base .. "/sse/gated?key=print" })
      assert.matches("^claude.http.Stream %(GET http://127.0.0.1:%d+/sse/gated%?key=print, open%)$",
        tostring(stream))
      stream:close()
      assert.matches("closed%)$", tostring(stream))
    end)
  end)

  describe("core.http_request", function()
    it("streams a body to on_data and calls on_headers first", function()
      local order, total, result = {}, 0, nil
      local req = core.http_request { url = base .. "/big?n=300000",
        on_headers = function(status, headers, mode)
          order[#order + 1] = "headers " .. status .. " " .. mode
          assert.equal("application/octet-stream", headers["content-type"])
        end,
        on_data = function(chunk)
          if total == 0 then order[#order + 1] = "data" end
          total = total + #chunk
        end,
        on_done = function(ok, resp) result = { ok, resp } end }
      assert.matches("^claude.HttpRequest %(GET .*/big%?n=300000, running%)$", tostring(req))
      run_until(function() return result end)
      assert.same({ "headers 200 stream", "data" }, order)
      assert.equal(300000, total)
      assert.is_true(result[1])
      assert.is_nil(result[2].body)
      assert.is_false(req:running())
      assert.matches("finished%)$", tostring(req))
    end)

    it("collects the body when on_event is given but the response is no event stream",
      function()
        local result
        core.http_request { url = base .. "/json", on_event = function() error("no") end,
          on_done = function(ok, resp) result = { ok, resp } end }
        run_until(function() return result end)
        assert.equal('{"jsonrpc":"2.0","id":1,"result":{}}', result[2].body)
      end)

    it("calls nothing after cancel, even from inside its own callback", function()
      local key = tostring(math.random(1 << 30))
      local events, done, req = 0, false, nil
      req = core.http_request { url = base .. "/sse/forever?key=" .. key,
        on_event = function()
          events = events + 1
          if events == 3 then assert.is_true(req:cancel()) end
        end,
        on_done = function() done = true end }
      run_until(function() return not req:running() end)
      assert.is_true(wait_closed(key))
      assert.equal(3, events)
      assert.is_false(done)
      assert.is_false(req:cancel())
      assert.matches("cancelled%)$", tostring(req))
    end)

    it("reports an error raised in a callback and goes on with the request", function()
      local seen, reported, result = {}, {}, nil
      claude.on_error(function(err) reported[#reported + 1] = tostring(err) end)
      core.http_request { url = base .. "/sse?n=3",
        on_event = function(event)
          seen[#seen + 1] = event.data
          if event.id == "2" then error("boom in on_event") end
        end,
        on_done = function(ok) result = ok end }
      run_until(function() return result ~= nil end)
      claude.on_error(nil)
      assert.same({ "event 1", "event 2", "event 3" }, seen)
      assert.is_true(result)
      assert.equal(1, #reported)
      assert.matches("boom in on_event", reported[1])
    end)

    it("finishes a request nobody keeps a reference to", function()
      local result
      core.http_request { url = base .. "/echo", on_done = function(ok) result = ok end }
      collectgarbage()
      collectgarbage()
      run_until(function() return result ~= nil end)
      assert.is_true(result)
    end)

    it("keeps libuv handles open only while requests run", function()
      local idle = core.stats().handles
      local result
      local req = core.http_request { url = base .. "/echo",
        on_done = function(ok) result = ok end }
      assert.is_true(core.stats().handles > idle)
      run_until(function() return result ~= nil end)
      assert.is_true(result)
      run_until(function() return core.stats().handles == idle end)
      assert.equal(1, core.stats().objects.http) -- the multi handle and its connections
      assert.is_false(req:running())
    end)

    it("aborts requests still running when the state closes, leaking nothing", function()
      local script = harness.tempfile(string.format([[
        package.cpath = %q .. "/?.so;" .. package.cpath
        package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
        local core = require "claude.core"
        core.http_request { url = %q, on_done = function() error("not expected") end }
        local started
        core.http_request { url = %q, on_event = function() started = true end }
        while not started do core.run("once") end
        print("closing with", core.stats().handles, "handles")
      ]], harness.build, base .. "/slow", base .. "/sse/forever?key=close"), ".lua")
      for _, lua in ipairs { harness.lua_preload .. "lua5.4", harness.claudelua } do
        local code, out, err = harness.sh(lua .. " " .. script)
        assert.equal(0, code, err)
        assert.matches("closing with%s+%d+%s+handles", out)
        assert.equal("", err)
      end
      os.remove(script)
    end)
  end)

  describe("loading", function()
    -- Start-up cost: libcurl and libcrypto (with gnutls, krb5, ldap... behind
    -- libcurl) are mapped on first use only, not by `require "claude"`.
    it("maps libcurl on the first request and libcrypto on the first hash, not before", function()
      local script = harness.tempfile(string.format([[
        package.cpath = %q .. "/?.so;" .. package.cpath
        package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
        local function mapped(name)
          for l in io.lines("/proc/self/maps") do
            if l:find("/" .. name .. ".so", 1, true) then return "yes" end
          end
          return "no"
        end
        local function show(when) print(when, mapped("libcurl"), mapped("libcrypto")) end
        require "claude"
        local core = require "claude.core"
        show("require")
        assert(#core.sha256("x") == 32)
        show("sha256")
        local status
        assert(core.http_request { url = %q, on_done = function(ok, resp)
          status = ok and resp.status or resp
        end })
        show("request")
        while status == nil do core.run("once") end
        print("status", status)
      ]], harness.build, base .. "/echo"), ".lua")
      for _, lua in ipairs { harness.lua_preload .. "lua5.4", harness.claudelua } do
        local code, out, err = harness.sh(lua .. " " .. script)
        assert.equal(0, code, err)
        assert.equal("require\tno\tno\nsha256\tno\tyes\nrequest\tyes\tyes\nstatus\t200\n", out)
      end
      os.remove(script)
    end)
  end)
end)
