-- inventory.lua -- MCP Apps: a Lua tool over live application state that hosts show as an
-- interactive view (a table of the stock with a "+1" button per item), beside its answer.
-- The button calls a second tool, `restock`, which only the view may call.
--
--   npm install && node examples/apps/build.mjs           # bundle the view (once)
--   claudelua mcp --http 8080 examples/apps/inventory.lua  # http://127.0.0.1:8080/mcp
--   claudelua mcp --watch examples/apps/inventory.lua      # stdio; reloads on a change
--
-- A host of MCP Apps (Claude, VS Code, Goose, MCPJam, ...) calls `inventory`, reads the
-- view `ui://inventory/view.html` and renders it in a sandboxed iframe with the result; a
-- client without MCP Apps (the claude CLI) sees `inventory` as a plain tool that answers
-- a line of text. docs/mcp-apps.md explains the parts.
local claude = require "claude"

-- the built view (examples/apps/build.mjs), beside this file unless a path is given
local VIEW = ... or "build/view.html"

-- The application's state, changed while the server runs.
local stock = { apples = 3, pears = 0, plums = 7 }
local restocks = 0

-- The answer of both tools: a line of text for the model (and for clients without views),
-- the data the view draws (the result's structuredContent).
local function snapshot()
  local items, total, words = {}, 0, {}
  for name, count in pairs(stock) do
    items[#items + 1] = { name = name, count = count }
    total = total + count
  end
  table.sort(items, function(a, b) return a.name < b.name end)
  for i, item in ipairs(items) do words[i] = item.name .. " " .. item.count end
  return claude.view_result(table.concat(words, ", ") .. " (" .. total .. " units)",
    { items = claude.json.array(items), total = total, restocks = restocks })
end

local view = claude.view {
  uri = "ui://inventory/view.html", name = "Inventory",
  description = "The stock of every item, with a restock button per item",
  file = VIEW,
  prefers_border = true, -- no csp: the view reaches nothing but its host
}

return claude.server("inventory", {
  claude.tool("inventory", "The stock of every item", {}, snapshot,
    { view = view, annotations = { read_only = true } }),
  claude.tool("restock", "Adds units of an item to the stock",
    { item = "string", count = "integer?" }, function(args)
      local n = args.count or 1
      if n <= 0 then return nil, "count must be positive" end
      if not stock[args.item] then return nil, "no item " .. args.item end
      stock[args.item] = stock[args.item] + n
      restocks = restocks + 1
      return snapshot()
    end, { view = view, visibility = { "app" } }),
}, { instructions = "An inventory kept in memory while the server runs." })
