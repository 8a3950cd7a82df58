-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned), server side, every
-- scenario the suite lists, against `claudelua mcp --http 127.0.0.1:0
-- spec/conformance/tools.lua`: claudelua's own Streamable HTTP transport, nothing in between,
-- no baseline of expected failures.
local conformance = require "support.conformance"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

describe("claudelua mcp --http, against the MCP conformance suite", function()
  it("passes every server scenario", function()
    local server <close>, url = mcp_http.start { harness.root .. "/spec/conformance/tools.lua" }
    local text, code = conformance.run_server(url)
    conformance.assert_passed(text, conformance.scenarios("Server"))
    assert.equal(0, code, "the suite failed:\n" .. text)
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)
end)
