-- permissions.lua -- decide in Lua whether the model may use a tool.
--
-- The tools come from an in-process MCP server (claude.server); they are not
-- in allowed_tools, so the CLI asks `can_use_tool` before each call. The
-- callback allows additions, rounds the operands of multiplications (allow
-- with changed input), and refuses divisions by zero with a message the
-- model reads.
--
--   claudelua examples/permissions.lua           # your real Claude Code setup
--   claudelua --demo examples/permissions.lua    # offline (or CLAUDELUA_DEMO=1)
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local json = require "claude.json"
local demo = require "demo"

local calc = claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
  claude.tool("multiply", "Multiply two numbers", { a = "number", b = "number" },
    function(args) return args.a * args.b end),
  claude.tool("divide", "Divide a by b", { a = "number", b = "number" },
    function(args) return args.a / args.b end),
})

local function can_use_tool(tool, input)
  print(string.format("[asked: %s %s]", tool, json.encode(input)))
  if tool == "mcp__calc__add" then
    return claude.allow()
  elseif tool == "mcp__calc__multiply" then
    -- allow, but with the input changed: the tool sees the rounded numbers
    return claude.allow { a = math.floor(input.a + 0.5), b = math.floor(input.b + 0.5) }
  elseif tool == "mcp__calc__divide" and input.b == 0 then
    return claude.deny("Division by zero is not allowed in this session.")
  end
  return claude.deny("The Lua host only allows the calc tools.")
end

local prompt = "Use the calc tools, one call at a time: add 2 and 3, multiply 2.4 by 4.6, "
  .. "then divide 10 by 0. Then report the three results in one line."

local options = demo.setup({ turns = {
  { content = { { type = "text", text = "First the addition." },
    { type = "tool_use", name = "mcp__calc__add", input = { a = 2, b = 3 } } } },
  { content = { { type = "tool_use", name = "mcp__calc__multiply",
    input = { a = 2.4, b = 4.6 } } } },
  { content = { { type = "tool_use", name = "mcp__calc__divide", input = { a = 10, b = 0 } } } },
  { content = { { type = "text", text = "Results: add 5, multiply 10 (rounded), "
    .. "divide refused ({{last_tool_result}})." } } },
} }, {
  mcp_servers = { calc = calc },
  can_use_tool = can_use_tool,
  max_turns = 6,
})

for msg in claude.query(prompt, options) do
  if msg.type == "assistant" then
    for _, block in ipairs(msg.message.content) do
      if block.type == "text" and block.text ~= "" then print(block.text)
      elseif block.type == "tool_use" then
        print(string.format("[tool_use %s %s]", block.name, json.encode(block.input)))
      end
    end
  elseif msg.type == "user" and type(msg.message.content) == "table" then
    for _, block in ipairs(msg.message.content) do
      if block.type == "tool_result" then
        local text = type(block.content) == "string" and block.content
          or claude.text { message = { content = block.content } } or ""
        text = text:gsub("%s*<system%-reminder>.*$", "")
        print(string.format("[tool_result%s: %s]", block.is_error and " (error)" or "", text))
      end
    end
  elseif msg.type == "result" then
    print(string.format("[%s, %d denial(s), %s]", msg.subtype,
      #(msg.permission_denials or {}), demo.cost(msg)))
  end
end
