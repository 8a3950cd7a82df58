-- The real claude CLI (pinned, against the scripted Messages API) with `claudelua mcp` in the
-- modern era (2026-07-28): over stdio it probes with server/discover, keeps the modern era
-- (no initialize on the wire) and calls a tool; over Streamable HTTP the same; the tool sees
-- the era in its ctx. A skill the server serves is listed (as its skill:// resource) and read
-- by the model through the CLI's MCP resource tools.
--
-- What the CLI does with the skills extension itself (skills/list, skills/get): both 2.1.330
-- and 2.1.332 have the code, behind a feature flag that is off by default
-- (tengu_wiggly_crystal) and an organization policy verdict that only a first-party API
-- (api.anthropic.com) hands out; against the scripted API it never sends skills/list (see
-- docs/protocol.md). The skills scenarios of the conformance suite cover skills/list.
local claude = require "claude"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
  or root .. "/" .. harness.claudelua

local use, text = e2e.use, e2e.text

local TOOLS = [[
local claude = require "claude"
return claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(a)
    return a.a + a.b
  end),
  claude.tool("era", "Says which protocol the call came in", function(_, ctx)
    return ctx.era .. " " .. tostring(ctx.protocol_version)
  end),
}, { skills = ]] .. string.format("%q", root .. "/spec/conformance/skills") .. [[ })
]]

local ALLOWED = { "mcp__calc__add", "mcp__calc__era", "ListMcpResourcesTool",
  "ReadMcpResourceTool" }

local function turns()
  return { turns = {
    { content = { use("mcp__calc__add", { a = 15, b = 27 }) } },
    { content = { use("mcp__calc__era", {}) } },
    { content = { use("ListMcpResourcesTool", { server = "calc" }) } },
    { content = { use("ReadMcpResourceTool", { server = "calc",
      uri = "skill://lua-style/SKILL.md" }) } },
    { content = { text("done: {{last_tool_result}}") } },
  } }
end

local function check(mock, messages)
  assert.equal("connected", e2e.server_status(messages).calc)
  local results = mock:tool_results()
  assert.equal(4, #results, json.encode(results))
  assert.matches("42", json.encode(results[1]))
  assert.matches("modern 2026%-07%-28", json.encode(results[2]))
  -- the skill, listed as a resource (named and described by its frontmatter), and read
  local listed = json.encode(results[3])
  assert.matches("skill://lua%-style/SKILL.md", listed)
  assert.matches("lua%-style", listed)
  local read = json.encode(results[4])
  assert.matches("name: lua%-style", read)
  assert.matches("Lua style of claudelua", read)
end

describe("the real claude CLI with claudelua mcp in protocol 2026-07-28", function()
  before_each(harness.before)
  after_each(harness.after)

  it("keeps the modern era over stdio: server/discover answered, no initialize", function()
    local file = harness.tempfile(TOOLS, ".lua")
    local wire = harness.tempfile("", ".jsonl")
    -- what the CLI writes to the server, one message a line
    local wrapper = harness.tempfile(string.format("#!/bin/sh\ntee -a %s | exec %s mcp %s\n",
      harness.quote(wire), harness.quote(claudelua), harness.quote(file)), ".sh")
    os.execute("chmod +x " .. harness.quote(wrapper))
    local mock <close> = e2e.start(turns())
    local messages = harness.collect(claude.query("15 + 27?", mock:options {
      mcp_servers = { calc = { type = "stdio", command = wrapper, args = {} } },
      allowed_tools = ALLOWED }))
    check(mock, messages)
    local methods = {}
    for line in io.lines(wire) do
      local m = json.decode(line)
      if m and m.method then methods[m.method] = (methods[m.method] or 0) + 1 end
    end
    assert.is_truthy(methods["server/discover"])
    assert.is_nil(methods.initialize)
    assert.is_truthy(methods["tools/call"])
    assert.is_truthy(methods["resources/read"])
    os.remove(file)
    os.remove(wire)
    os.remove(wrapper)
  end)

  it("keeps the modern era over Streamable HTTP", function()
    local file = harness.tempfile(TOOLS, ".lua")
    local server <close>, url = mcp_http.start { file }
    local mock <close> = e2e.start(turns())
    local messages = harness.collect(claude.query("15 + 27?", mock:options {
      mcp_servers = { calc = { type = "http", url = url } }, allowed_tools = ALLOWED }))
    check(mock, messages)
    server:signal("term")
    assert.equal(0, server:wait(10))
    os.remove(file)
  end)
end)
