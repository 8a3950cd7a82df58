-- The MCP conformance suite (0.2.0-alpha.12, pinned as @modelcontextprotocol/conformance-next),
-- server side, every scenario of its requirements of protocol 2025-11-25, against `claudelua
-- mcp spec/conformance/tools.lua` over stdio:
-- spec/support/mcp_stdio_bridge.mjs (the TypeScript SDK) fronts each of the suite's HTTP
-- sessions with its own claudelua child and relays the messages unchanged. The baseline
-- spec/conformance/stdio-expected-failures.yaml lists what cannot apply to stdio, and why;
-- every other scenario must pass. (Protocol 2026-07-28 over stdio: spec/e2e/mcp_sdk2_spec.lua.)
local process = require "claude.process"
local conformance = require "support.conformance"
local harness = require "support.harness"

local root = harness.root
local BASELINE = root .. "/spec/conformance/stdio-expected-failures.yaml"

describe("claudelua mcp over stdio, against the MCP conformance suite", function()
  it("passes every scenario that applies to stdio", function()
    local bridge <close> = assert(process.spawn { conformance.node, args = {
      root .. "/spec/support/mcp_stdio_bridge.mjs", "0", "--",
      conformance.claudelua, "mcp", root .. "/spec/conformance/tools.lua" },
      stderr = "collect" })
    local line = assert(bridge:read_line(30), "the bridge did not start: " .. bridge:stderr())
    local port = assert(line:match("^listening (%d+)$"), line)
    local args = { "--requirements", "2025-11-25" }
    local text, code = conformance.run_server("http://127.0.0.1:" .. port .. "/mcp",
      { "--expected-failures", BASELINE, table.unpack(args) }, conformance.next)
    local expected, must_pass = conformance.baseline(BASELINE, "server"), {}
    for _, name in ipairs(conformance.scenarios("Server", conformance.next, args)) do
      if not expected[name] then must_pass[#must_pass + 1] = name end
    end
    conformance.assert_passed(text, must_pass)
    assert.equal(0, code, "the suite failed beyond its baseline:\n" .. text)
    bridge:signal("term")
    bridge:wait(10)
  end)
end)
