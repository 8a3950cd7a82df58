-- What the fuzz_http target (fuzz/http.c, docs/fuzzing.md) found in the Streamable HTTP
-- transport and the HTTP server under it, each replayed here against a transport in this
-- process: the request as the fuzzer sent it (reduced), and the answer it must get.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local http = require "claude.http.client"
local mcp_http = require "claude.mcp.http"
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

local function calc()
  return claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" },
      function(args) return args.a + args.b end),
  })
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
  local function case(fn)
    return function()
      local t = claude.spawn(fn)
      local ok, err = t:join(3 * T)
      if not ok then error(err, 0) end
    end
  end

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
end)
