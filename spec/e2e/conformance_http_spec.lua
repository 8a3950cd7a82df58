-- The MCP conformance suite, server side, against `claudelua mcp --http 127.0.0.1:0
-- spec/conformance/tools.lua`: claudelua's own Streamable HTTP transport, nothing in between,
-- no baseline of expected failures. The suite is 0.2.0-alpha.12 (pinned as
-- @modelcontextprotocol/conformance-next): every scenario of its requirement sets of
-- protocol 2025-11-25 and 2026-07-28 (scored or not), and each extension scenario (the tasks
-- and the skills extensions), run one by one at the 2026-07-28 wire. Its 2025-11-25 set holds
-- every server scenario and check of 0.1.16, which the server specs no longer run.
local conformance = require "support.conformance"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

-- Scenarios the suite lists but skips itself (no check to run yet).
local EMPTY = { ["tasks-status-notifications"] = true }

describe("claudelua mcp --http, against the MCP conformance suite", function()
  local server, url

  setup(function()
    server, url = mcp_http.start { harness.root .. "/spec/conformance/tools.lua" }
  end)

  teardown(function()
    server:signal("term")
    assert.equal(0, server:wait(10))
    server:close()
  end)

  for _, version in ipairs { "2025-11-25", "2026-07-28" } do
    it("passes every server scenario of the requirements of " .. version, function()
      local args = { "--requirements", version }
      local text, code = conformance.run_server(url, args, conformance.next)
      local names = conformance.scenarios("Server", conformance.next, args)
      assert.is_true(#names >= 33)
      conformance.assert_passed(text, names, EMPTY)
      assert.equal(0, code, "the suite failed:\n" .. text)
    end)
  end

  it("passes every extension scenario (tasks, skills)", function()
    local names = conformance.scenarios("Server", conformance.next, nil, "extension")
    assert.is_true(#names >= 13)
    for _, name in ipairs(names) do
      local text, code = conformance.run_server(url, { "--scenario", name }, conformance.next)
      conformance.assert_scenario_passed(text, name, EMPTY[name])
      assert.equal(0, code, name .. ":\n" .. text)
    end
  end)
end)
