-- A server's middleware (claude.mcp.middleware) seen by real peers: the TypeScript SDK clients
-- v1 (@modelcontextprotocol/sdk, 2025-11-25) and v2 (@modelcontextprotocol/client, 2026-07-28
-- negotiated, or 2025-11-25 asked for) over stdio and Streamable HTTP against
-- spec/support/mcp_middleware_tools.lua, and the claude CLI calling an in-process server.
local claude = require "claude"
local json = require "claude.json"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"
local conformance = require "support.conformance"
local e2e = require "support.e2e"

local root = harness.root
local TOOLS = root .. "/spec/support/mcp_middleware_tools.lua"

local function drive(args)
  return conformance.drive(root .. "/spec/support/mcp_middleware_client.mjs", args)
end

-- what every client sees, whatever its era and transport
local function check(r, era, protocol)
  if protocol then assert.equal(protocol, r.protocol) end -- (the v1 client's: not over stdio)
  assert.same({ "add", "answer", "boom", "limited", "secret", "slow_start" }, r.tools)
  assert.equal("21 (mw)", r.add) -- b changed to 20 on the way in, the text on the way out
  assert.same({ code = -32001, data = { tool = "secret" } },
    { code = r.secret.code, data = r.secret.data })
  assert.truthy(r.secret.message:find("Forbidden: secret", 1, true))
  assert.equal(-32603, r.boom.code)
  assert.truthy(r.boom.message:find("Internal error: the middleware broke", 1, true))
  assert.equal("the middleware (" .. era .. ")", r.answer)
  assert.equal("after " .. era .. " (mw)", r.slow_start)
  assert.same({ "done (mw)", "done (mw)" }, r.limited)
  assert.equal(-32000, r.limited_third.code)
  assert.truthy(r.limited_third.data.retryAfterMs > 900000)
  assert.same({ "read 1", "read 1" }, r.reads.texts) -- the second from the server's cache
  if era == "modern" then
    assert.equal("public", r.reads.cacheScope)
    assert.truthy(r.reads.ttlMs > 500000 and r.reads.ttlMs < 600000) -- what is left of it
  else
    assert.same({ json.null, json.null }, { r.reads.ttlMs, r.reads.cacheScope })
  end
  assert.equal("Hello, ADA", r.prompt)
end

-- the log middleware's lines, one per request
local function check_log(stderr)
  for _, line in ipairs { "tools/list %S+ ms ok", "tools/call add %S+ ms ok",
      "tools/call secret %S+ ms error %-32001 Forbidden: secret",
      "tools/call limited %S+ ms error %-32000 Rate limit exceeded",
      "resources/read mem://counter %S+ ms ok", "prompts/get greet %S+ ms ok" } do
    assert.truthy(stderr:find("claude: mcp mw " .. line), line .. "\n" .. stderr)
  end
end

describe("server middleware with real peers", function()
  it("is seen by the TS SDK v1 client over stdio (2025-11-25)", function()
    local r, stderr = drive { "sdk1", "stdio", "legacy", conformance.claudelua, "mcp", TOOLS }
    check(r, "legacy")
    check_log(stderr)
  end)

  it("is seen by the TS SDK v2 client over stdio, in both eras", function()
    local r, stderr = drive { "sdk2", "stdio", "auto", conformance.claudelua, "mcp", TOOLS }
    check(r, "modern", "2026-07-28")
    check_log(stderr)
    r = drive { "sdk2", "stdio", "legacy", conformance.claudelua, "mcp", TOOLS }
    check(r, "legacy", "2025-11-25")
  end)

  it("is seen over Streamable HTTP by both clients, in both eras", function()
    for _, run in ipairs { { "sdk1", nil, "legacy" }, { "sdk2", "legacy", "legacy" },
        { "sdk2", "auto", "modern" } } do
      -- a server each: the counter and the rate limit start anew
      local server <close>, url, lines = mcp_http.start { TOOLS }
      local r = drive { run[1], "http", url, run[2] }
      check(r, run[3], run[3] == "modern" and "2026-07-28" or "2025-11-25")
      server:signal("term")
      assert.equal(0, server:wait(10))
      check_log(table.concat(lines, "\n"))
    end
  end)
end)

describe("server middleware with the real CLI in-process", function()
  before_each(harness.before)
  after_each(harness.after)

  it("wraps the CLI's tool calls: a changed request, a refusal, a log", function()
    local mock <close> = e2e.start { turns = {
      { content = { e2e.use("mcp__calc__add", { a = 1, b = 2 }) } },
      { content = { e2e.use("mcp__calc__add", { a = 13, b = 0 }) } },
      { content = { e2e.text("done: {{last_tool_result}}") } },
    } }
    local entries = {}
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    }, { middleware = {
      claude.mcp.middleware.log { write = function(_, entry) entries[#entries + 1] = entry end },
      { call = function(req, _, next)
        if req.params.arguments.a == 13 then return claude.content.error("13 is unlucky") end
        req.params.arguments.b = req.params.arguments.b + 100
        return next(req)
      end },
    } })
    local messages = harness.collect(claude.query("add", mock:options {
      mcp_servers = { calc = calc }, allowed_tools = { "mcp__calc__add" } }))
    assert.equal("done: ERROR: 13 is unlucky", harness.last_of(messages, "result").result)
    local calls = {}
    for _, e in ipairs(entries) do
      if e.method == "tools/call" then calls[#calls + 1] = e.outcome end
    end
    assert.same({ "ok", "tool error" }, calls)
    -- what the model got of the first call: 1 + (2 + 100)
    assert.truthy(json.encode(mock:requests()[2].tool_results[1]):find("103", 1, true))
  end)
end)
