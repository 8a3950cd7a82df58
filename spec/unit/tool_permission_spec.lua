-- What a session would do with an MCP tool call (claude.testing.tool_permission): the demo
-- model calls only the tools a session would run or ask about.
local decide = require("claude.testing.tool_permission").decide

describe("claude.testing.tool_permission", function()
  local ADD = "mcp__calc__add"

  it("allows what allowed_tools names: the tool, its server, a rule with content", function()
    assert.equal("allow", decide({ allowed_tools = { ADD } }, ADD))
    assert.equal("allow", decide({ allowed_tools = { "mcp__calc" } }, ADD))
    assert.equal("allow", decide({ allowed_tools = { "mcp__calc__*" } }, ADD))
    assert.equal("allow", decide({ settings = { permissions = { allow = { ADD } } } }, ADD))
    assert.equal("allow", decide({ permission_mode = "bypassPermissions" }, ADD))
  end)

  it("asks where the session has someone to ask", function()
    assert.equal("ask", decide({ can_use_tool = function() end }, ADD))
    assert.equal("ask", decide({ permission_prompt_tool_name = "mcp__p__ask" }, ADD))
    assert.equal("ask", decide({ hooks = { PreToolUse = {} } }, ADD))
  end)

  it("denies what the session would refuse without asking", function()
    assert.equal("deny", decide({}, ADD))
    assert.equal("deny", decide({ allowed_tools = { "mcp__calc__sub" } }, ADD))
    assert.equal("deny", decide({ allowed_tools = { "mcp__calculator" } }, ADD))
    assert.equal("deny", decide({ permission_mode = "acceptEdits" }, ADD))
    assert.equal("deny", decide({ allowed_tools = { ADD }, disallowed_tools = { "mcp__calc" } },
      ADD))
    assert.equal("deny", decide({ can_use_tool = function() end,
      settings = { permissions = { deny = { ADD } } } }, ADD))
  end)

  it("allows anything for a session it does not know", function()
    assert.equal("allow", decide(nil, ADD))
  end)
end)
