-- app_state.lua -- tools over a live in-memory store that the script keeps
-- using: the model reads and changes the application's own tables, in this
-- process, and the script sees every change as soon as the turn is over.
--
--   claudelua examples/app_state.lua            # your real Claude Code setup
--   claudelua --demo examples/app_state.lua     # offline, scripted answers
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local demo = require "demo"

-- The application's state: a small inventory.
local inventory = { apples = 3, pears = 0 }
local history = {}

local store = claude.server("inventory", {
  claude.tool { name = "list", description = "All items and their counts",
    input_schema = {}, annotations = { read_only = true },
    execute = function()
      local items = {}
      for name, count in pairs(inventory) do items[#items + 1] = { name = name, count = count } end
      table.sort(items, function(x, y) return x.name < y.name end)
      return { items = claude.json.array(items) }
    end },
  claude.tool { name = "restock", description = "Add units of an item",
    input_schema = { item = "string", count = "integer" },
    execute = function(args, ctx)
      if args.count <= 0 then return nil, "count must be positive" end
      inventory[args.item] = (inventory[args.item] or 0) + args.count
      history[#history + 1] = string.format("restock %s +%d (%s)", args.item, args.count,
        ctx.tool_use_id or "?")
      return { item = args.item, count = inventory[args.item] }
    end },
}, { state = inventory })

local options = demo.setup({ turns = {
  { content = { { type = "tool_use", name = "mcp__inventory__list", input = {} } } },
  { content = { { type = "tool_use", name = "mcp__inventory__restock",
    input = { item = "pears", count = 5 } } } },
  { content = { { type = "text", text = "Pears were out of stock; I added 5." } } },
  { content = { { type = "tool_use", name = "mcp__inventory__restock",
    input = { item = "apples", count = 2 } } } },
  { content = { { type = "text", text = "Done: apples are at {{last_tool_result}}." } } },
} }, { mcp_servers = { inventory = store }, allowed_tools = store:tool_names(), max_turns = 6 })

local session <close> = assert(claude.connect(options))

local function turn(prompt)
  session:send(prompt)
  for msg in session:receive() do
    if msg.type == "assistant" and claude.text(msg) then print("claude: " .. claude.text(msg)) end
  end
end

turn("Restock anything that is out of stock with 5 units.")
print(string.format("after turn 1: apples=%d pears=%d", inventory.apples, inventory.pears))
inventory.apples = inventory.apples - 1 -- the application goes on using its state
turn("Add 2 apples.")
print(string.format("after turn 2: apples=%d pears=%d", inventory.apples, inventory.pears))
for _, line in ipairs(history) do print("history: " .. line) end
