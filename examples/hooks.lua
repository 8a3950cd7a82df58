-- hooks.lua -- Lua functions the CLI calls at points of its loop.
--
-- UserPromptSubmit sees each prompt; PreToolUse sees every tool call before
-- it runs and may allow it (no permission prompt) or deny it with a reason
-- the model reads; PostToolUse sees the tool's answer; Stop runs when the
-- model has finished.
--
--   claudelua examples/hooks.lua                 # your real Claude Code setup
--   claudelua --demo examples/hooks.lua          # offline (or CLAUDELUA_DEMO=1)
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local json = require "claude.json"
local demo = require "demo"

local calc = claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
  claude.tool("divide", "Divide a by b", { a = "number", b = "number" },
    function(args) return args.a / args.b end),
})

local hooks = {
  UserPromptSubmit = function(input)
    print(string.format("[UserPromptSubmit: %d characters]", #input.prompt))
  end,
  PreToolUse = {
    { matcher = "mcp__calc__.*", hooks = { function(input, tool_use_id)
      print(string.format("[PreToolUse %s %s (%s)]", input.tool_name,
        json.encode(input.tool_input), tool_use_id))
      if input.tool_name == "mcp__calc__divide" and input.tool_input.b == 0 then
        return { hook_specific_output = { permission_decision = "deny",
          permission_decision_reason = "Division by zero is blocked by a hook." } }
      end
      -- allow: the CLI does not ask can_use_tool (nor the user) for this call
      return { hook_specific_output = { permission_decision = "allow",
        permission_decision_reason = "calc tools are safe" } }
    end } },
  },
  PostToolUse = {
    { matcher = "mcp__calc__.*", hooks = { function(input)
      print(string.format("[PostToolUse %s -> %s]", input.tool_name,
        json.encode(input.tool_response)))
    end } },
  },
  Stop = function()
    print("[Stop]")
  end,
}

local prompt = "Use the calc tools, one call at a time: add 2 and 3, then divide 1 by 0. "
  .. "Then say what you got, in one line."

local options = demo.setup({ turns = {
  { content = { { type = "tool_use", name = "mcp__calc__add", input = { a = 2, b = 3 } } } },
  { content = { { type = "tool_use", name = "mcp__calc__divide", input = { a = 1, b = 0 } } } },
  { content = { { type = "text", text = "2 + 3 = 5; the division was blocked." } } },
} }, {
  mcp_servers = { calc = calc },
  hooks = hooks,
  max_turns = 5,
})

for msg in claude.query(prompt, options) do
  if msg.type == "assistant" then
    local text = claude.text(msg)
    if text and text ~= "" then print(text) end
  elseif msg.type == "user" and type(msg.message.content) == "table" then
    for _, block in ipairs(msg.message.content) do
      if block.type == "tool_result" and block.is_error then
        local text = type(block.content) == "string" and block.content or json.encode(block.content)
        print("[tool error: " .. text:gsub("%s*<system%-reminder>.*$", "") .. "]")
      end
    end
  elseif msg.type == "result" then
    print(string.format("[%s, %s]", msg.subtype, demo.cost(msg)))
  end
end
