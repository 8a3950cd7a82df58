-- What the fuzz_http target (fuzz/http.c, docs/fuzzing.md) found in the Streamable HTTP
-- transport and the HTTP server under it, each replayed here against a transport in this
-- process: the request as the fuzzer sent it (reduced), and the answer it must get.
local claude = require "claude"
local async = require "claude.async"
local json = require "claude.json"
local process = require "claude.process"
local http = require "claude.http.client"
local mcp_http = require "claude.mcp.server.http"
local harness = require "support.harness"

local T = 10
local JSON_SSE = "application/json, text/event-stream"
local NODE = harness.root .. "/node_modules/.bin/node"

local function rpc(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or json.object() }
end

local INIT = rpc(0, "initialize", { protocolVersion = "2025-11-25",
  capabilities = json.object(), clientInfo = { name = "spec", version = "1" } })

-- One request: status, headers, body, whatever the status.
local function request(r)
  local headers = r.headers or {}
  if r.body ~= nil then
    headers["content-type"] = headers["content-type"] or "application/json"
    headers.accept = headers.accept or JSON_SSE
  end
  local resp, err = http.request { method = r.method or (r.body and "POST" or "GET"),
    url = r.url, headers = headers, timeout = T,
    body = type(r.body) == "table" and json.encode(r.body) or r.body }
  if resp then return resp.status, resp.headers, resp.body end
  assert(err.kind == "http", tostring(err))
  return err.status, err.headers, err.body
end

-- `hold` waits until `release` is set: a call that stays in flight while the spec acts.
local function calc(release)
  return claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" },
      function(args) return args.a + args.b end),
    claude.tool("hold", "Waits until released", function()
      assert(release:wait(T))
      return "released"
    end),
  })
end

-- Opens a session at `url`; returns the headers its requests carry.
local function session(url)
  local status, headers, body = request { url = url, body = INIT }
  assert.equal(200, status, body)
  local h = { ["mcp-session-id"] = headers["mcp-session-id"],
    ["mcp-protocol-version"] = "2025-11-25" }
  assert.equal(202, (request { url = url, headers = h,
    body = { jsonrpc = "2.0", method = "notifications/initialized" } }))
  return h
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

describe("the Streamable HTTP transport on what fuzz_http found", function()
  local errors_seen

  before_each(function()
    harness.before()
    errors_seen = {}
    claude.on_error(function(err) errors_seen[#errors_seen + 1] = tostring(err) end)
  end)

  after_each(function()
    claude.on_error(nil)
    harness.after()
  end)

  -- every case runs in a task, so that the transport's tasks run too
  local function case(fn) return harness.task(fn, 3 * T) end

  it("skips the empty members of an Accept list (one of spaces was a 500)", case(function()
    local t <close> = assert(mcp_http.listen({ { "calc", calc() } }))
    for _, accept in ipairs { "application/json, , text/event-stream",
      " , application/json, text/event-stream", "application/json,\t,text/event-stream",
      JSON_SSE .. ", " } do
      local status, headers, body = request { url = t:url(), body = INIT,
        headers = { accept = accept } }
      assert.equal(200, status, body)
      assert.equal(32, #headers["mcp-session-id"])
    end
    -- an Accept of nothing but empty members names nothing: 406
    local status, _, body = request { url = t:url(), body = INIT, headers = { accept = ", ," } }
    assert.equal(406, status, body)
    assert.same({}, errors_seen)
  end))

  it("sends the head of a GET stream at once, with no priming event (before 2025-11-25)",
    case(function()
      -- the stream of an older client starts with nothing to say: its head was held back
      -- until the first event, so the client never saw its GET answered
      local t <close> = assert(mcp_http.listen({ { "calc", calc() } }))
      local init = rpc(0, "initialize", { protocolVersion = "2025-06-18",
        capabilities = json.object(), clientInfo = { name = "spec", version = "1" } })
      local status, headers = request { url = t:url(), body = init }
      assert.equal(200, status)
      local sid = headers["mcp-session-id"]
      local script = [[
        const [port, sid] = process.argv.slice(1);
        require('http').get({ host: '127.0.0.1', port, path: '/mcp', headers: {
          accept: 'text/event-stream', 'mcp-session-id': sid,
          'mcp-protocol-version': '2025-06-18' } }, res => {
          console.log('head ' + res.statusCode + ' ' + res.headers['content-type']);
          res.on('data', d => console.log('body ' + JSON.stringify(String(d))));
          res.on('end', () => console.log('end'));
        }).on('error', e => console.log('error ' + e.message));
      ]]
      local p <close> = assert(process.spawn { NODE, args = { "-e", script,
        tostring(t:port()), sid } })
      assert.equal("head 200 text/event-stream", p:read_line(T))
      t:close() -- ends the session and its stream
      assert.equal("end", p:read_line(T))
      assert.equal(0, p:wait(T))
      assert.same({}, errors_seen)
    end))

  it("refuses two requests with one id, in a batch or in flight (the POST waited forever)",
    case(function()
      local release = async.event()
      local t <close> = assert(mcp_http.listen({ { "calc", calc(release) } }))
      local h = session(t:url())
      -- the batch of the fuzzer: its second answer went to the GET stream, and the POST
      -- waited for it
      local status, _, body = request { url = t:url(), headers = copy(h), body = {
        rpc(1, "tools/call", { name = "add", arguments = { a = 1, b = 2 } }), rpc(1, "ping") } }
      assert.equal(400, status, body)
      assert.equal(-32600, json.decode(body).error.code)
      -- a request whose id is in flight in another POST of the session: its answer would have
      -- gone to the new POST, and the first would have waited forever
      local first = claude.spawn(function()
        return request { url = t:url(), headers = copy(h),
          body = rpc(7, "tools/call", { name = "hold", arguments = json.object() }) }
      end)
      for _ = 1, 1000 do
        if t:pending() > 0 then break end
        claude.sleep(0.001)
      end
      assert.equal(1, t:pending())
      status, _, body = request { url = t:url(), headers = copy(h), body = rpc(7, "ping") }
      assert.equal(400, status, body)
      assert.matches("not answered yet", json.decode(body).error.message)
      release:set()
      local ok, first_status, _, first_body = first:join(T)
      assert.is_true(ok)
      assert.equal(200, first_status)
      assert.equal("released", json.decode(first_body).result.content[1].text)
      -- once answered, the id may come again
      status, _, body = request { url = t:url(), headers = copy(h), body = rpc(7, "ping") }
      assert.equal(200, status, body)
      assert.same({}, errors_seen)
    end))
end)
