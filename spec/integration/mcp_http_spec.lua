-- `claudelua mcp --http` against curl: the session life cycle, JSON and SSE answers, batches,
-- resumption with Last-Event-ID, and every bad request with its status (400, 403, 404, 405,
-- 406, 409, 413, 415), a client that leaves mid-call, stateless mode and idle expiry.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local TOOLS = harness.root .. "/spec/support/mcp_http_tools.lua"
local JSON_SSE = "application/json, text/event-stream"

-- The curl arguments of one request: { method, url, body, headers = {name = value} }.
-- (The head goes to a file: the line reader drops empty lines, and curl cannot open
-- /dev/stderr when it is a socket.)
local function curl_args(r, head)
  local args = { "-s", "-N", "-D", head or "/dev/null", "--max-time", "20",
    "-X", r.method or "POST" }
  local headers = r.headers or {}
  if r.method == nil or r.method == "POST" then
    if headers["Content-Type"] == nil then headers["Content-Type"] = "application/json" end
    if headers.Accept == nil then headers.Accept = JSON_SSE end
  end
  for k, v in pairs(headers) do
    args[#args + 1] = "-H"
    args[#args + 1] = k .. ": " .. v
  end
  if r.body then
    args[#args + 1] = "--data-binary"
    args[#args + 1] = type(r.body) == "table" and json.encode(r.body) or r.body
  end
  args[#args + 1] = r.url
  return args
end

-- The status and headers (lower-case names) curl wrote with -D to the file `path`.
local function parse_head(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  os.remove(path)
  local status = tonumber(text:match("^HTTP/%S+ (%d+)"))
  local headers = {}
  for k, v in text:gmatch("\n([^:\r\n]+):%s*([^\r\n]*)") do headers[k:lower()] = v end
  return status, headers
end

-- One request: status, headers, body (a string; the line reader drops empty lines, so SSE
-- events are not separated by blank lines here).
local function request(r)
  local head = os.tmpname()
  local p <close> = assert(process.spawn { "curl", args = curl_args(r, head), stderr = "collect" })
  local lines = {}
  for line in p:lines(30) do lines[#lines + 1] = line end
  p:wait(30)
  local status, headers = parse_head(head)
  return status, headers, table.concat(lines, "\n")
end

local function rpc(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or json.object() }
end

local function init_body(version)
  return rpc(0, "initialize", { protocolVersion = version or "2025-11-25",
    capabilities = json.object(), clientInfo = { name = "curl", version = "1" } })
end

-- Initializes a session at `url`; returns its id.
local function initialize(url, version)
  local status, headers, body = request { url = url, body = init_body(version) }
  assert.equal(200, status, body)
  local sid = headers["mcp-session-id"]
  assert.matches("^%x+$", sid)
  assert.equal(202, (request { url = url, headers = { ["Mcp-Session-Id"] = sid },
    body = { jsonrpc = "2.0", method = "notifications/initialized" } }))
  return sid
end

local function call(url, sid, id, name, args, meta)
  return request { url = url, headers = { ["Mcp-Session-Id"] = sid },
    body = rpc(id, "tools/call", { name = name, arguments = args or json.object(),
      _meta = meta }) }
end

-- The decoded data of each SSE event of a body, and the ids.
local function events(body)
  local out, ids = {}, {}
  for line in body:gmatch("[^\n]+") do
    local id, data = line:match("^id: (%S+)"), line:match("^data: (.+)")
    if id then ids[#ids + 1] = id end
    if data then out[#out + 1] = json.decode(data) end
  end
  return out, ids
end

local function error_of(body)
  local msg = json.decode(body)
  return msg.error.code, msg.error.message
end

-- Waits (bounded) until fn() is true.
local function eventually(fn, what)
  for _ = 1, 2000 do
    if fn() then return end
    claude.sleep(0.01)
  end
  error("never happened: " .. what)
end

local busted_it = it

describe("claudelua mcp --http", function()
  local url, stderr

  -- Each case gets its own server, started and stopped inside it (inside the host, a
  -- process spawned by setup() does not outlive setup's task).
  local function it(name, fn)
    busted_it(name, function()
      local server
      server, url, stderr = mcp_http.start { "--max-message", "100000", TOOLS }
      local ok, err = pcall(fn)
      server:signal("term")
      local code = server:wait(10)
      server:close()
      assert(ok, err)
      assert.equal(0, code)
    end)
  end

  it("serves a session: initialize, a call answered with JSON, DELETE, then 404", function()
    local sid = initialize(url)
    assert.equal(32, #sid)
    local status, headers, body = call(url, sid, 1, "add", { a = 2, b = 3 })
    assert.equal(200, status)
    assert.equal("application/json", headers["content-type"])
    assert.equal(sid, headers["mcp-session-id"])
    assert.same({ jsonrpc = "2.0", id = 1, result = { content = { { type = "text",
      text = "5" } } } }, json.decode(body))
    assert.equal(200, (request { method = "DELETE", url = url,
      headers = { ["Mcp-Session-Id"] = sid } }))
    local _
    status, _, body = call(url, sid, 2, "add", { a = 1, b = 1 })
    assert.equal(404, status)
    assert.equal(-32001, error_of(body))
    assert.equal(404, (request { method = "DELETE", url = url,
      headers = { ["Mcp-Session-Id"] = sid } }))
  end)

  -- a compact tools/call is read in C (no message table), any other spelling decoded whole:
  -- the answers are the same
  it("answers a call alike however its body is spelled", function()
    local sid = initialize(url)
    local bodies = {
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add",'
        .. '"arguments":{"a":2,"b":3}}}',
      ' { "jsonrpc" : "2.0", "id" : 1, "method" : "tools/call", "params" : { "name" : '
        .. '"add", "arguments" : { "a" : 2, "b" : 3 } } }\n',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\u0061dd",'
        .. '"arguments":{"a":2,"b":3}}}',
      '{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"add",'
        .. '"arguments":{"a":2,"b":3},"_meta":{"progressToken":5}}}',
    }
    for i, b in ipairs(bodies) do
      local status, headers, body = request { url = url, body = b,
        headers = { ["Mcp-Session-Id"] = sid, ["MCP-Protocol-Version"] = "2025-11-25" } }
      assert.equal(200, status, body)
      assert.equal(sid, headers["mcp-session-id"])
      assert.same({ jsonrpc = "2.0", id = i == 4 and "a-1" or 1, result = { content = {
        { type = "text", text = "5" } } } }, json.decode(body), "body " .. i)
    end
    -- the checks of the message path hold for a call read in C: an unknown protocol
    -- version, another session's id, no session
    local status, _, body = request { url = url, body = bodies[1],
      headers = { ["Mcp-Session-Id"] = sid, ["MCP-Protocol-Version"] = "1999-01-01" } }
    assert.equal(400, status, body)
    assert.equal(404, (request { url = url, body = bodies[1],
      headers = { ["Mcp-Session-Id"] = "0123456789abcdef0123456789abcdef" } }))
    assert.equal(400, (request { url = url, body = bodies[1] }))
  end)

  it("serves each server at /mcp/NAME, the first also at /mcp", function()
    local echo = url .. "/echo"
    local sid = initialize(echo)
    local _, _, body = call(echo, sid, 1, "echo", { text = "hi" })
    assert.equal("hi", json.decode(body).result.content[1].text)
    -- a session belongs to its server
    assert.equal(404, (call(url, sid, 2, "add", { a = 1, b = 1 })))
    local sid2 = initialize(url .. "/calc")
    _, _, body = call(url .. "/calc", sid2, 1, "add", { a = 1, b = 1 })
    assert.equal("2", json.decode(body).result.content[1].text)
    assert.equal(404, (request { url = url .. "/nope", body = init_body() }))
  end)

  it("answers a batch with a JSON array and a batch of notifications with 202", function()
    local sid = initialize(url)
    local status, _, body = request { url = url, headers = { ["Mcp-Session-Id"] = sid },
      body = { rpc(1, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }),
        { jsonrpc = "2.0", method = "notifications/progress",
          params = { progressToken = "x", progress = 1 } },
        rpc("two", "ping") } }
    assert.equal(200, status)
    local list = json.decode(body)
    assert.equal(2, #list)
    assert.equal(1, list[1].id)
    assert.equal("two", list[2].id)
    status, _, body = request { url = url, headers = { ["Mcp-Session-Id"] = sid },
      body = { { jsonrpc = "2.0", method = "notifications/cancelled",
        params = { requestId = 99 } },
        { jsonrpc = "2.0", method = "notifications/roots/list_changed" } } }
    assert.equal(202, status, body)
    assert.equal("", body)
  end)

  it("streams progress as SSE: a priming event with id and retry, then events, then the answer",
    function()
      local sid = initialize(url)
      local status, headers, body = call(url, sid, 7, "count", { n = 3 },
        { progressToken = "tok" })
      assert.equal(200, status)
      assert.equal("text/event-stream", headers["content-type"])
      assert.matches("^id: %d+%-1\nretry: %d+\ndata: \n", body)
      local list, ids = events(body)
      assert.equal(4, #list)
      for i = 1, 3 do
        assert.equal("notifications/progress", list[i].method)
        assert.equal(i, list[i].params.progress)
        assert.equal("tok", list[i].params.progressToken)
      end
      assert.equal("counted 3", list[4].result.content[1].text)
      assert.equal(5, #ids) -- the priming event and four events, ids unique
    end)

  it("does not prime streams for a client of protocol 2025-06-18", function()
    local sid = initialize(url, "2025-06-18")
    local _, _, body = call(url, sid, 1, "count", { n = 1 }, { progressToken = 1 })
    assert.matches("^id: %d+%-1\nevent: message\ndata: {", body)
  end)

  it("resumes a POST stream the client left, with Last-Event-ID, and the call goes on",
    function()
      local sid = initialize(url)
      local p = assert(process.spawn { "curl", args = curl_args { url = url,
        headers = { ["Mcp-Session-Id"] = sid }, body = rpc(5, "tools/call",
          { name = "count", arguments = { n = 1 } }) }, stderr = "collect" })
      p:close()
      -- the stream: a wait call that says something first, so that it becomes SSE
      local w = assert(process.spawn { "curl", args = curl_args { url = url,
        headers = { ["Mcp-Session-Id"] = sid }, body = { rpc(6, "tools/call",
          { name = "count", arguments = { n = 1 }, _meta = { progressToken = 1 } }),
          rpc(8, "tools/call", { name = "wait", arguments = { tag = "resume" } }) } },
        stderr = "collect" })
      local first
      for line in w:lines(20) do
        first = first or line:match("^id: (%d+%-1)$")
        if line:match("counted 1") then break end
      end
      assert.truthy(first)
      eventually(function()
        for _, l in ipairs(stderr) do if l == "started resume" then return true end end
      end, "the wait call started")
      w:signal("kill")
      w:wait(10)
      w:close()
      local _, _, body = call(url, sid, 9, "state", { tag = "resume" })
      assert.equal("running", json.decode(body).result.content[1].text)
      call(url, sid, 10, "release", { tag = "resume" })
      local status, headers
      status, headers, body = request { method = "GET", url = url, headers = {
        Accept = "text/event-stream", ["Mcp-Session-Id"] = sid, ["Last-Event-ID"] = first } }
      assert.equal(200, status)
      assert.equal("text/event-stream", headers["content-type"])
      local list = events(body)
      assert.equal(8, list[#list].id)
      assert.equal("released resume", list[#list].result.content[1].text)
      -- the stream is complete: nothing more to resume
      assert.equal(404, (request { method = "GET", url = url, headers = {
        Accept = "text/event-stream", ["Mcp-Session-Id"] = sid, ["Last-Event-ID"] = first } }))
    end)

  it("cancels the calls of a client that disconnects, and only those", function()
    local a, b = initialize(url), initialize(url)
    local pa = assert(process.spawn { "curl", args = curl_args { url = url,
      headers = { ["Mcp-Session-Id"] = a }, body = rpc(1, "tools/call",
        { name = "wait", arguments = { tag = "a" } }) }, stderr = "collect" })
    local head = os.tmpname()
    local pb = assert(process.spawn { "curl", args = curl_args({ url = url,
      headers = { ["Mcp-Session-Id"] = b }, body = rpc(1, "tools/call",
        { name = "wait", arguments = { tag = "b" } }) }, head), stderr = "collect" })
    local function started(tag)
      for _, l in ipairs(stderr) do if l == "started " .. tag then return true end end
    end
    eventually(function() return started("a") and started("b") end, "both calls started")
    pa:signal("kill")
    pa:wait(10)
    pa:close()
    local function state(tag)
      local _, _, body = call(url, b, 50, "state", { tag = tag })
      return json.decode(body).result.content[1].text
    end
    eventually(function() return state("a") == "cancelled" end, "call a cancelled")
    assert.equal("running", state("b"))
    call(url, b, 51, "release", { tag = "b" })
    local lines = {}
    for line in pb:lines(20) do lines[#lines + 1] = line end
    pb:wait(10)
    assert.equal(200, (parse_head(head)))
    pb:close()
    assert.equal("released b", json.decode(lines[1]).result.content[1].text)
  end)

  it("refuses what the transport does not accept, each with its status", function()
    local sid = initialize(url)
    local s = { ["Mcp-Session-Id"] = sid }
    local list = { a = 1, b = 1 }
    local cases = {
      -- status, JSON-RPC code or nil, request
      { 406, -32000, { url = url, headers = { ["Mcp-Session-Id"] = sid,
        Accept = "application/json" }, body = rpc(1, "ping") } },
      { 406, -32000, { method = "GET", url = url, headers = { ["Mcp-Session-Id"] = sid,
        Accept = "application/json" } } },
      { 415, -32000, { url = url, headers = { ["Mcp-Session-Id"] = sid,
        ["Content-Type"] = "text/plain" }, body = rpc(1, "ping") } },
      { 405, -32000, { method = "PUT", url = url, headers = s, body = "x" } },
      { 400, -32000, { url = url, body = rpc(1, "tools/call", { name = "add",
        arguments = list }) } },
      { 400, -32000, { url = url, headers = { ["Mcp-Session-Id"] = sid,
        ["MCP-Protocol-Version"] = "1999-01-01" }, body = rpc(1, "ping") } },
      { 400, -32700, { url = url, headers = s, body = '{"jsonrpc":"2.0","id":1,' } },
      -- RFC 8259 8.1: not UTF-8 is not JSON (it used to be echoed raw in the answer)
      { 400, -32700, { url = url, headers = s, body = '{"jsonrpc":"2.0","id":1,"method":'
        .. '"tools/call","params":{"name":"x\255","arguments":{}}}' } },
      { 400, -32600, { url = url, headers = s, body = '{"id":1,"method":"ping"}' } },
      { 400, -32600, { url = url, headers = s, body = "[]" } },
      { 400, -32600, { url = url, headers = s, body = init_body() } },
      { 400, -32000, { method = "GET", url = url, headers = { Accept = "text/event-stream" } } },
      { 404, -32001, { url = url, headers = { ["Mcp-Session-Id"] = "f00d" },
        body = rpc(1, "ping") } },
      { 404, -32000, { method = "GET", url = url, headers = { ["Mcp-Session-Id"] = sid,
        Accept = "text/event-stream", ["Last-Event-ID"] = "77-1" } } },
      { 403, -32000, { url = url, headers = { Host = "evil.example.com" },
        body = init_body() } },
      { 403, -32000, { url = url, headers = { Origin = "http://evil.example.com" },
        body = init_body() } },
      { 413, nil, { url = url, headers = s, body = string.rep(" ", 100001) .. "{}" } },
    }
    for i, c in ipairs(cases) do
      local status, headers, body = request(c[3])
      assert.equal(c[1], status, "case " .. i .. ": " .. body)
      if c[2] then assert.equal(c[2], error_of(body), "case " .. i) end
      if status == 405 then assert.equal("GET, POST, DELETE", headers.allow) end
    end
    -- the session still works, and local origins pass
    local status, _, body = request { url = url, headers = { ["Mcp-Session-Id"] = sid,
      Origin = "http://localhost:3000" }, body = rpc(2, "ping") }
    assert.equal(200, status, body)
  end)

  it("keeps one standalone GET stream per session (409 for a second)", function()
    local sid = initialize(url)
    local g = assert(process.spawn { "curl", args = curl_args { method = "GET", url = url,
      headers = { Accept = "text/event-stream", ["Mcp-Session-Id"] = sid } },
      stderr = "collect" })
    local primed = false
    for line in g:lines(20) do
      if line:match("^id: 0%-%d+$") then primed = true end
      if line == "data: " then break end
    end
    assert.is_true(primed)
    local status = request { method = "GET", url = url, headers = {
      Accept = "text/event-stream", ["Mcp-Session-Id"] = sid } }
    assert.equal(409, status)
    g:signal("kill")
    g:wait(10)
    g:close()
  end)
end)

describe("claudelua mcp --http --stateless", function()
  it("answers without a session, and has no GET stream and no DELETE", function()
    local server <close>, url = mcp_http.start { "--stateless", TOOLS }
    local status, headers, body = request { url = url, body = rpc(1, "tools/call",
      { name = "add", arguments = { a = 4, b = 5 } }) }
    assert.equal(200, status)
    assert.is_nil(headers["mcp-session-id"])
    assert.equal("9", json.decode(body).result.content[1].text)
    -- an initialize is answered too, and leaves no session behind (it was a 500)
    status, headers, body = request { url = url, body = rpc(2, "initialize",
      { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = { name = "c",
        version = "1" } }) }
    assert.equal(200, status)
    assert.is_nil(headers["mcp-session-id"])
    assert.equal("2025-11-25", json.decode(body).result.protocolVersion)
    local h
    status, h = request { method = "GET", url = url, headers = { Accept = "text/event-stream" } }
    assert.equal(405, status)
    assert.equal("POST", h.allow)
    assert.equal(405, (request { method = "DELETE", url = url }))
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)
end)

describe("claudelua mcp --http --session-timeout", function()
  it("ends a session left idle", function()
    local server <close>, url, stderr = mcp_http.start { "--session-timeout", "1", TOOLS }
    local sid = initialize(url)
    -- (a request would keep it alive: the server's log says when it expired)
    eventually(function()
      for _, l in ipairs(stderr) do
        if l == "claudelua mcp: session " .. sid .. " expired" then return true end
      end
    end, "the session expired")
    assert.equal(404, (request { url = url, headers = { ["Mcp-Session-Id"] = sid },
      body = rpc(1, "ping") }))
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)
end)

describe("claudelua mcp --http --max-sessions --max-batch ...", function()
  it("takes the bounds from the command line, and refuses bad ones", function()
    local server <close>, url, stderr = mcp_http.start { "--max-sessions", "1", "--max-batch",
      "2", "--write-timeout", "none", TOOLS }
    local first = initialize(url)
    local second = initialize(url) -- the first, idle, makes room
    assert.equal(404, (request { url = url, headers = { ["Mcp-Session-Id"] = first },
      body = rpc(1, "ping") }))
    local status, _, body = request { url = url, headers = { ["Mcp-Session-Id"] = second },
      body = { rpc(1, "ping"), rpc(2, "ping"), rpc(3, "ping") } }
    assert.equal(400, status)
    assert.matches("max_batch", body)
    server:signal("term")
    assert.equal(0, server:wait(10))
    assert.is_table(stderr)
    local p <close> = assert(process.spawn { harness.claudelua, args = { "mcp", "--http", "0",
      "--max-calls", "0", TOOLS }, stderr = "collect" })
    assert.equal(1, p:wait(10))
  end)
end)

describe("claudelua mcp --http --watch", function()
  it("serves the reloaded tools file to the sessions already open", function()
    local file = os.tmpname() .. ".lua"
    local function write(body)
      local f = assert(io.open(file, "w"))
      f:write('local claude = require "claude"\nreturn claude.server("w", {', body, "})\n")
      f:close()
    end
    write('claude.tool("one", "One", function() return 1 end)')
    local server <close>, url, stderr = mcp_http.start { "--watch", file }
    local sid = initialize(url)
    local function names()
      local _, _, body = request { url = url, headers = { ["Mcp-Session-Id"] = sid },
        body = rpc(1, "tools/list") }
      local out = {}
      for _, t in ipairs(json.decode(body).result.tools) do out[#out + 1] = t.name end
      table.sort(out)
      return table.concat(out, ",")
    end
    assert.equal("one", names())
    write('claude.tool("one", "One", function() return 1 end),'
      .. 'claude.tool("two", "Two", function() return 2 end)')
    eventually(function()
      for _, l in ipairs(stderr) do if l:match("reloaded") then return true end end
    end, "the file was reloaded")
    assert.equal("one,two", names())
    server:signal("term")
    assert.equal(0, server:wait(10))
    os.remove(file)
  end)
end)
