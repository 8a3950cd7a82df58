-- The bounds of the Streamable HTTP transport (docs/mcp-server.md, "Bounds"), each against a
-- client that would exhaust the server without it (issue 23): in both eras, against a
-- transport in this process (its `stats()` says what the bounds see), with curl for the
-- clients that stop reading.
local claude = require "claude"
local async = require "claude.async"
local json = require "claude.json"
local process = require "claude.process"
local http = require "claude.http.client"
local mcp_http = require "claude.mcp.server.http"
local harness = require "support.harness"

local T = 20
local JSON_SSE = "application/json, text/event-stream"
local PV, CAPS = "io.modelcontextprotocol/protocolVersion",
  "io.modelcontextprotocol/clientCapabilities"

local function rpc(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or json.object() }
end

local INIT = rpc(0, "initialize", { protocolVersion = "2025-11-25",
  capabilities = json.object(), clientInfo = { name = "spec", version = "1" } })

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- One request: status, headers, body, whatever the status.
local function request(r)
  local headers = r.headers or {}
  if r.body ~= nil then
    headers["content-type"] = headers["content-type"] or "application/json"
    headers.accept = headers.accept or JSON_SSE
  end
  local resp, err = http.request { method = r.method or (r.body and "POST" or "GET"),
    url = r.url, headers = headers, timeout = r.timeout or T,
    body = type(r.body) == "table" and json.encode(r.body) or r.body }
  if resp then return resp.status, resp.headers, resp.body end
  assert(err.kind == "http", tostring(err))
  return err.status, err.headers, err.body
end

-- Opens a session at `url`; returns the headers its requests carry.
local function session(url)
  local status, headers, body = request { url = url, body = INIT }
  assert.equal(200, status, body)
  local h = { ["mcp-session-id"] = headers["mcp-session-id"],
    ["mcp-protocol-version"] = "2025-11-25" }
  assert.equal(202, (request { url = url, headers = copy(h),
    body = { jsonrpc = "2.0", method = "notifications/initialized" } }))
  return h
end

-- A request of protocol 2026-07-28 and its headers.
local function modern(id, method, params, name)
  params = params or {}
  params._meta = { [PV] = "2026-07-28", [CAPS] = json.object() }
  local h = { ["mcp-protocol-version"] = "2026-07-28", ["mcp-method"] = method,
    ["mcp-name"] = name }
  return { jsonrpc = "2.0", id = id, method = method, params = params }, h
end

-- The messages of an SSE body (or of a JSON one).
local function messages(body)
  local out = {}
  for data in body:gmatch("data: ([^\n]+)") do out[#out + 1] = json.decode(data) end
  if #out == 0 and body:sub(1, 1) == "{" or body:sub(1, 1) == "[" then
    local v = json.decode(body)
    if v.jsonrpc then return { v } end
    return v
  end
  return out
end

local function answer_of(list, id)
  for _, m in ipairs(list) do
    if m.id == id and m.method == nil then return m end
  end
end

-- Waits (bounded) until fn() is true.
local function eventually(fn, what)
  for _ = 1, 3000 do
    if fn() then return end
    claude.sleep(0.01)
  end
  error("never happened: " .. what)
end

-- A client that sends `body` (or a GET) and then stops reading: curl writes into a pipe
-- nobody reads. Returns the process (close it).
local function stuck_client(url, headers, body)
  local args = { "-sN", "-o", "-" }
  for k, v in pairs(headers or {}) do
    args[#args + 1] = "-H"
    args[#args + 1] = k .. ": " .. v
  end
  if body then
    for _, a in ipairs { "-H", "content-type: application/json", "-H", "accept: " .. JSON_SSE,
      "--data-binary", json.encode(body) } do
      args[#args + 1] = a
    end
  else
    args[#args + 1] = "-H"
    args[#args + 1] = "accept: text/event-stream"
  end
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = harness.quote(a) end
  return assert(process.spawn { "sh", args = { "-c", "exec curl " .. table.concat(quoted, " ")
    .. " " .. harness.quote(url) .. " | sleep 30" } })
end

-- The tools: `add`; `hold` waits until `release` is set; `flood` logs n lines of size
-- bytes; `poll` ends its stream (ctx.close_stream) and then logs.
local function tools(release)
  local s = claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" },
      function(args) return args.a + args.b end),
    claude.tool("hold", "Waits until released", function()
      assert(release:wait(3 * T))
      return "released"
    end),
    claude.tool("flood", "Logs n lines", { n = "integer", size = "integer" },
      function(args, ctx)
        local line = string.rep("x", args.size)
        for i = 1, args.n do
          ctx.log("info", line)
          if i % 50 == 0 then claude.sleep(0) end
        end
        return "flooded " .. args.n
      end, { budget = false }),
    claude.tool("poll", "Ends its stream, then logs n lines", { n = "integer" },
      function(args, ctx)
        ctx.close_stream()
        for _ = 1, args.n do ctx.log("info", string.rep("y", 1000)) end
        return "polled"
      end, { budget = false }),
  }, { subscribe = true })
  return s
end

local function set_level(t, h)
  local status = request { url = t:url(), headers = copy(h),
    body = rpc(90, "logging/setLevel", { level = "info" }) }
  assert.equal(200, status)
end

describe("the bounds of the Streamable HTTP transport", function()
  local errors_seen, release

  before_each(function()
    harness.before()
    errors_seen = {}
    release = async.event()
    claude.on_error(function(err) errors_seen[#errors_seen + 1] = tostring(err) end)
  end)

  after_each(function()
    release:set()
    claude.on_error(nil)
    harness.after()
  end)

  local function case(fn) return harness.task(fn, 6 * T) end

  local function listen(opts)
    opts = opts or {}
    opts.log = opts.log or function() end
    return assert(mcp_http.listen({ { "calc", tools(release) } }, opts))
  end

  it("refuses a request id that is not an integer (400, -32600), in both eras, keeping nothing",
    case(function()
      -- the id was answered as null on the GET stream: the POST waited forever, the
      -- session stayed busy (it never expired) and the id was refused from then on
      local t <close> = listen()
      local h = session(t:url())
      for _, id in ipairs { "1.5", "1e1000", "9223372036854775808", "-0.5" } do
        local body = '{"jsonrpc":"2.0","id":' .. id .. ',"method":"tools/call","params":'
          .. '{"name":"add","arguments":{"a":1,"b":2}}}'
        local status, _, answer = request { url = t:url(), headers = copy(h), body = body,
          timeout = 5 }
        assert.equal(400, status, answer)
        local e = json.decode(answer).error
        assert.equal(-32600, e.code)
        assert.matches("string or an integer", e.message)
        -- the modern era too
        local msg, mh = modern(1, "tools/call", { name = "add", arguments = { a = 1, b = 2 } },
          "add")
        body = json.encode(msg):gsub('"id":1', '"id":' .. id)
        status = request { url = t:url(), headers = mh, body = body, timeout = 5 }
        assert.equal(400, status)
      end
      assert.equal(0, t:stats().calls)
      assert.equal(0, t:pending())
      -- the session goes on; ids that are integers, or strings, are served
      for _, id in ipairs { 1, "1.5", 2 } do
        local status, _, body = request { url = t:url(), headers = copy(h),
          body = rpc(id, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }) }
        assert.equal(200, status, body)
        assert.equal(id, json.decode(body).id)
      end
      assert.same({}, errors_seen)
    end))

  it("answers a batch over max_batch with 400 and serves none of it", case(function()
    local t <close> = listen { max_batch = 4 }
    local h = session(t:url())
    local batch = {}
    for i = 1, 5 do
      batch[i] = rpc(i, "tools/call", { name = "add", arguments = { a = i, b = 0 } })
    end
    local status, _, body = request { url = t:url(), headers = copy(h), body = json.array(batch) }
    assert.equal(400, status, body)
    assert.equal(-32600, json.decode(body).error.code)
    assert.matches("max_batch", json.decode(body).error.message)
    batch[5] = nil
    status, _, body = request { url = t:url(), headers = copy(h), body = json.array(batch) }
    assert.equal(200, status, body)
    assert.equal(4, #json.decode(body))
  end))

  it("serves max_post_calls requests of a POST and answers the others at once with an error",
    case(function()
      local t <close> = listen { max_post_calls = 2 }
      local h = session(t:url())
      local batch = {}
      for i = 1, 5 do
        batch[i] = rpc(i, "tools/call", { name = "add", arguments = { a = i, b = 0 } })
      end
      batch[6] = { jsonrpc = "2.0", method = "notifications/progress",
        params = { progressToken = 1, progress = 1 } }
      local status, _, body = request { url = t:url(), headers = copy(h),
        body = json.array(batch) }
      assert.equal(200, status, body)
      local answers = json.decode(body)
      assert.equal(5, #answers)
      local served, refused = 0, 0
      for i = 1, 5 do
        local a = answer_of(answers, i)
        if a.result then
          served = served + 1
          assert.equal(tostring(i), a.result.content[1].text)
        else
          refused = refused + 1
          assert.equal(-32000, a.error.code)
          assert.equal("max_post_calls", a.error.data.bound)
        end
      end
      assert.same({ 2, 3 }, { served, refused })
      assert.equal(0, t:stats().calls)
    end))

  it("answers the requests of a session past max_session_calls with an error, and serves "
    .. "again once its calls end", case(function()
      local t <close> = listen { max_session_calls = 2 }
      local h, other = session(t:url()), session(t:url())
      local held = {}
      for i = 1, 2 do
        held[i] = claude.spawn(function()
          return request { url = t:url(), headers = copy(h),
            body = rpc(i, "tools/call", { name = "hold", arguments = json.object() }) }
        end)
      end
      eventually(function() return t:stats().calls == 2 end, "two calls in flight")
      local status, _, body = request { url = t:url(), headers = copy(h),
        body = rpc(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }) }
      assert.equal(200, status, body)
      local e = json.decode(body).error
      assert.equal(-32000, e.code)
      assert.equal("max_session_calls", e.data.bound)
      assert.equal(3, json.decode(body).id)
      -- another session is served
      status, _, body = request { url = t:url(), headers = copy(other),
        body = rpc(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }) }
      assert.equal(200, status)
      assert.equal("3", json.decode(body).result.content[1].text)
      release:set()
      for i = 1, 2 do assert.equal(200, select(2, held[i]:join(T))) end
      status, _, body = request { url = t:url(), headers = copy(h),
        body = rpc(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }) }
      assert.equal(200, status)
      assert.equal("3", json.decode(body).result.content[1].text)
      assert.equal(0, t:stats().calls)
    end))

  it("answers 503 past max_calls in the whole server, counting both eras (a listen is a "
    .. "stream, as a GET is, not a call)", case(function()
      local t <close> = listen { max_calls = 2 }
      local h = session(t:url())
      local held = {
        claude.spawn(function()
          return request { url = t:url(), headers = copy(h),
            body = rpc(1, "tools/call", { name = "hold", arguments = json.object() }) }
        end),
        claude.spawn(function()
          local msg, mh = modern(1, "tools/call", { name = "hold", arguments = {} }, "hold")
          return request { url = t:url(), headers = mh, body = msg }
        end),
      }
      local listening = claude.spawn(function()
        local msg, mh = modern(2, "subscriptions/listen",
          { notifications = { toolsListChanged = true } })
        return request { url = t:url(), headers = mh, body = msg, timeout = 3 * T }
      end)
      eventually(function() return t:stats().calls == 2 and t:stats().connections == 3 end,
        "two requests in flight and the listen open")
      local status, headers, body, _ = request { url = t:url(), headers = copy(h),
        body = rpc(2, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }) }
      assert.equal(503, status, body)
      assert.equal("1", headers["retry-after"])
      assert.equal(-32000, json.decode(body).error.code)
      local msg, mh = modern(3, "tools/call", { name = "add", arguments = { a = 1, b = 2 } },
        "add")
      status, headers, body = request { url = t:url(), headers = mh, body = msg }
      assert.equal(503, status, body)
      assert.equal("1", headers["retry-after"])
      assert.equal(3, json.decode(body).id)
      assert.equal("max_calls", json.decode(body).error.data.bound)
      listening:cancel()
      release:set()
      for _, task in ipairs(held) do assert.equal(200, select(2, task:join(T))) end
      assert.equal(0, t:stats().calls)
      status, _, body = request { url = t:url(), headers = mh, body = msg }
      assert.equal(200, status, body)
    end))

  it("evicts the least recently used idle session past max_sessions, and answers 503 when "
    .. "every session is busy", case(function()
      local t <close> = listen { max_sessions = 2 }
      local a = session(t:url())
      local b = session(t:url())
      assert.equal(200, (request { url = t:url(), headers = copy(a), body = rpc(1, "ping") }))
      local c = session(t:url()) -- b is the least recently used
      assert.equal(2, t:stats().sessions)
      assert.equal(404, (request { url = t:url(), headers = copy(b), body = rpc(2, "ping") }))
      assert.equal(200, (request { url = t:url(), headers = copy(a), body = rpc(2, "ping") }))
      -- a and c busy: no session can go
      local held = {}
      for i, h in ipairs { a, c } do
        held[i] = claude.spawn(function()
          return request { url = t:url(), headers = copy(h),
            body = rpc(10, "tools/call", { name = "hold", arguments = json.object() }) }
        end)
      end
      eventually(function() return t:stats().calls == 2 end, "two calls in flight")
      local status, headers, body = request { url = t:url(), body = INIT }
      assert.equal(503, status, body)
      assert.equal("1", headers["retry-after"])
      assert.matches("max_sessions", json.decode(body).error.message)
      assert.equal(2, t:stats().sessions)
      release:set()
      for _, task in ipairs(held) do assert.equal(200, select(2, task:join(T))) end
      session(t:url())
      assert.equal(2, t:stats().sessions)
    end))

  it("keeps at most history_bytes of events for Last-Event-ID per session, whatever its streams",
    case(function()
      -- 64 abandoned streams of 1,000 events each were kept, with no bound on bytes
      local t <close> = listen { history_bytes = 16 * 1024 }
      local h = session(t:url())
      set_level(t, h)
      local last
      for i = 1, 4 do
        local status, _, body = request { url = t:url(), headers = copy(h),
          body = rpc(i, "tools/call", { name = "poll", arguments = { n = 50 } }) }
        assert.equal(200, status, body)
        for id in body:gmatch("id: (%d+%-%d+)") do last = id end
        eventually(function() return t:stats().calls == 0 end, "the call to end")
        assert.is_true(t:stats().history_bytes_max <= 16 * 1024, t:stats().history_bytes_max)
      end
      -- notifications for the GET stream, which nobody opened
      local uri = "big://" .. string.rep("u", 400)
      assert.equal(200, (request { url = t:url(), headers = copy(h),
        body = rpc(9, "resources/subscribe", { uri = uri }) }))
      for _ = 1, 100 do t.endpoints["/mcp"].server:resource_updated(uri) end
      assert.is_true(t:stats().history_bytes_max <= 16 * 1024, t:stats().history_bytes_max)
      assert.is_true(t:stats().history_bytes_max > 8 * 1024, t:stats().history_bytes_max)
      -- the last stream's end is still there for its client
      local status, _, body = request { url = t:url(), method = "GET",
        headers = { ["mcp-session-id"] = h["mcp-session-id"], accept = "text/event-stream",
          ["last-event-id"] = last } }
      assert.equal(200, status)
      local got = answer_of(messages(body), 4)
      assert.equal("polled", got.result.content[1].text)
      assert.same({}, errors_seen)
    end))

  it("makes a call that logs faster than its client reads wait, and drops a client that takes "
    .. "nothing for write_timeout", case(function()
      -- a tool logging 200 MB to a client that stopped reading: +245 to +435 MiB, never
      -- given back; the connection was held with the socket's send queue full
      local t <close> = listen { high_water = 16 * 1024, max_queued = 64 * 1024,
        write_timeout = 1, history_bytes = 64 * 1024 }
      local h = session(t:url())
      set_level(t, h)
      -- a client that reads gets every line, the call going at its pace
      local status, _, body = request { url = t:url(), headers = copy(h),
        body = rpc(1, "tools/call", { name = "flood", arguments = { n = 2000, size = 1000 } }) }
      assert.equal(200, status)
      local list = messages(body)
      assert.equal(2001, #list)
      assert.equal("flooded 2000", answer_of(list, 1).result.content[1].text)
      -- one that stops reading: 40 MB of logs
      local p <close> = stuck_client(t:url(), copy(h),
        rpc(2, "tools/call", { name = "flood", arguments = { n = 4000, size = 10000 } }))
      eventually(function() return t:stats().dropped_timeout == 1 end, "the client dropped")
      -- the call went on (its client may resume): its logs are kept up to history_bytes
      eventually(function() return t:stats().calls == 0 end, "the call to end")
      local st = t:stats()
      assert.is_true(st.queued_peak <= 64 * 1024 + 11000, st.queued_peak)
      assert.is_true(st.history_bytes_max <= 64 * 1024, st.history_bytes_max)
      assert.equal(0, st.queued)
      p:close(0)
      assert.same({}, errors_seen)
    end))

  it("drops a GET stream and a listen past max_queued when notifications flood them",
    case(function()
      -- 400,000 list_changed on a GET stream: +41 MiB
      local t <close> = listen { high_water = 16 * 1024, max_queued = 64 * 1024, max_uri = 8192 }
      local server = t.endpoints["/mcp"].server
      local uri = "big://" .. string.rep("u", 4000)
      local h = session(t:url())
      assert.equal(200, (request { url = t:url(), headers = copy(h),
        body = rpc(1, "resources/subscribe", { uri = uri }) }))
      local get <close> = stuck_client(t:url(), copy(h))
      local msg, mh = modern(1, "subscriptions/listen",
        { notifications = { resourceSubscriptions = { uri } } })
      local listen_client <close> = stuck_client(t:url(), mh, msg)
      eventually(function() return t:stats().responses == 2 end,
        "the GET stream and the listen open")
      claude.sleep(0.1)
      for i = 1, 20000 do -- 80 MB of notifications to each
        server:resource_updated(uri)
        if t:stats().dropped_slow == 2 then break end
        if i % 100 == 0 then claude.sleep(0) end
      end
      eventually(function() return t:stats().dropped_slow == 2 end, "both clients dropped")
      eventually(function() return t:stats().responses == 0 end, "both streams to end")
      local st = t:stats()
      assert.equal(0, st.calls)
      assert.is_true(st.queued_peak <= 64 * 1024 + 4200, st.queued_peak)
      assert.is_true(st.history_bytes_max <= t.opts.history_bytes)
      get:close(0)
      listen_client:close(0)
      assert.same({}, errors_seen)
    end))

  it("does not take a session of /mcp at /mcp/NAME (404)", case(function()
    local t <close> = listen()
    local h = session(t:url())
    assert.equal(200, (request { url = t:url(), headers = copy(h), body = rpc(1, "ping") }))
    local status, _, body = request { url = t:url("calc"), headers = copy(h),
      body = rpc(2, "ping") }
    assert.equal(404, status, body)
    local other = session(t:url("calc"))
    assert.equal(404, (request { url = t:url(), headers = copy(other), body = rpc(3, "ping") }))
    assert.equal(200, (request { url = t:url("calc"), headers = copy(other),
      body = rpc(3, "ping") }))
  end))

  it("refuses bounds that are not positive numbers", function()
    for _, k in ipairs { "max_sessions", "max_calls", "max_session_calls", "max_post_calls",
      "max_batch", "history_bytes", "max_queued", "write_timeout" } do
      local ok, err = pcall(mcp_http.listen, { { "calc", tools(release) } }, { [k] = 0 })
      assert.is_false(ok)
      assert.matches("bad field '" .. k .. "' to 'listen' %(a positive number expected",
        tostring(err))
    end
    -- a misspelt bound is no silent default
    local ok, err = pcall(mcp_http.listen, { { "calc", tools(release) } }, { max_session = 8 })
    assert.is_false(ok)
    assert.matches("unknown field 'max_session' to 'listen' %(did you mean 'max_sessions'%?%)",
      tostring(err))
  end)
end)
