-- `claudelua mcp` against the TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0)
-- with protocol negotiation 'auto': over stdio and over Streamable HTTP the SDK probes with
-- server/discover and keeps the modern era (2026-07-28); tools, progress, multi round-trip
-- input (elicitation, sampling, roots, several rounds, a prompt), resources, prompts, a list
-- change through the SDK's listen, and tasks work with one tools file, which serves the
-- legacy era unchanged to the same client with negotiation 'legacy'.
-- (spec/support/mcp_sdk2_client.mjs says what the SDK cannot do of tasks, and how the spec
-- goes around it.)
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"
local conformance = require "support.conformance"

local root = harness.root
local TOOLS = root .. "/spec/conformance/tools.lua"

local function drive(args)
  return conformance.drive(root .. "/spec/support/mcp_sdk2_client.mjs", args)
end

local function check(r, protocol)
  assert.equal(protocol, r.connect)
  assert.is_true(#r.tools > 30)
  assert.equal("This is a simple text response for testing.", r.simple)
  assert.equal("Tool with progress executed successfully", r.progress.text)
  assert.same({ 0, 50 }, { r.progress.progress[1], r.progress.progress[2] })
  assert.equal("Hello, Alice!", r.elicit)
  assert.equal("Sampling response: Paris", r.sample)
  assert.equal("Client exposed 1 root(s): file:///spec/root", r.roots)
  assert.equal("Multi-round complete: Alice likes blue", r.multi_round)
  assert.same({ "skill://lua-style/SKILL.md", "test://static-binary", "test://static-text",
    "test://watched-resource" }, r.resources)
  assert.equal("This is the content of the static text resource.", r.read)
  assert.equal("7", r.template)
  assert.is_true(#r.prompts >= 5)
  assert.equal("Prompt with arguments: arg1='a', arg2='b'", r.prompt)
  assert.equal("Use the following context: from the spec", r.prompt_input)
  assert.is_true(r.list_changed)
  assert.equal("computed sync after 0.3s", r.task_sync)
end

describe("claudelua mcp with the TypeScript SDK v2 client", function()
  it("negotiates 2026-07-28 over stdio and serves everything in it", function()
    local r = drive { "stdio", "auto", conformance.claudelua, "mcp", TOOLS }
    check(r, "2026-07-28")
    assert.same({ created = "task", status = "completed", text = "computed task after 0.5s",
      cancelled = true }, r.task)
    assert.same({ names = { "lua-style" }, verified = { true, true }, name = "lua-style",
      dir = { "skill://lua-style/SKILL.md", "skill://lua-style/references",
        "skill://lua-style/scripts" } }, r.skills)
  end)

  it("negotiates 2026-07-28 over HTTP and serves everything in it", function()
    local server <close>, url = mcp_http.start { TOOLS }
    local r = drive { "http", url, "auto" }
    check(r, "2026-07-28")
    assert.same({ created = "task", status = "completed", text = "computed task after 0.5s",
      cancelled = true }, r.task)
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)

  it("serves the same tools file in the legacy era to a client that asks for it", function()
    local server <close>, url = mcp_http.start { TOOLS }
    local r = drive { "http", url, "legacy" }
    check(r, "2025-11-25")
    -- no tasks in the legacy era: the call answers at its end
    assert.equal("computed task after 0.5s", r.task.answer.result.content[1].text)
    server:signal("term")
    assert.equal(0, server:wait(10))
    r = drive { "stdio", "legacy", conformance.claudelua, "mcp", TOOLS }
    check(r, "2025-11-25")
  end)
end)
