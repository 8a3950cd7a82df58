-- calculator.lua -- four Lua functions become tools the model calls.
--
--   claudelua examples/calculator.lua ["question"]     # your real Claude Code setup
--   claudelua --demo examples/calculator.lua           # offline, scripted answers
--
-- The tools run in this process: no MCP subprocess, no boilerplate. Division by
-- zero is an isError result the model reads and can recover from.
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local demo = require "demo"

local function binary(name, description, op)
  return claude.tool(name, description, { a = "number", b = "number" }, function(args)
    return op(args.a, args.b)
  end)
end

local calc = claude.server("calc", {
  binary("add", "Add two numbers", function(a, b) return a + b end),
  binary("subtract", "Subtract b from a", function(a, b) return a - b end),
  binary("multiply", "Multiply two numbers", function(a, b) return a * b end),
  binary("divide", "Divide a by b", function(a, b)
    if b == 0 then return nil, "division by zero" end
    return a / b
  end),
}, { version = "1.0.0" })

local prompt = arg[1] or "What is 15 + 27? Then divide it by 0, and tell me what happened."

local options = demo.setup({ turns = {
  { content = { { type = "text", text = "Let me add those." },
    { type = "tool_use", name = "mcp__calc__add", input = { a = 15, b = 27 } } } },
  { content = { { type = "tool_use", name = "mcp__calc__divide", input = { a = 42, b = 0 } } } },
  { content = { { type = "text",
    text = "15 + 27 = 42. Dividing by zero failed: {{last_tool_result}}" } } },
} }, {
  mcp_servers = { calc = calc },
  allowed_tools = calc:tool_names(),  -- mcp__calc__add, mcp__calc__subtract, ...
  max_turns = 5,
})

-- tool input as "a=15, b=27" (sorted: Lua tables have no key order)
local function show(input)
  local keys, parts = {}, {}
  for k in pairs(input) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(input[k]) end
  return table.concat(parts, ", ")
end

local calls = {}
for msg in claude.query(prompt, options) do
  if msg.type == "assistant" then
    for _, block in ipairs(msg.message.content) do
      if block.type == "text" then
        print(block.text)
      elseif block.type == "tool_use" then
        calls[block.id] = block.name
        print(string.format("-> %s(%s)", block.name, show(block.input)))
      end
    end
  elseif msg.type == "user" and type(msg.message.content) == "table" then
    for _, block in ipairs(msg.message.content) do
      if block.type == "tool_result" then
        local content = block.content
        if type(content) == "table" then
          content = claude.text { message = { content = content } }
        end
        print(string.format("<- %s%s: %s", calls[block.tool_use_id] or "?",
          block.is_error and " (error)" or "", content))
      end
    end
  elseif msg.type == "result" then
    print(string.format("[%s, %s]", msg.subtype, demo.cost(msg)))
  end
end
