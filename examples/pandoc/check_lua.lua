-- examples/pandoc/check_lua.lua -- a pandoc Lua filter (Debian 12's pandoc 2.17 runs Lua
-- 5.3; docs/embedding.md) that sends each `lua` code block to the `check_lua` tool of an
-- MCP server (`claudelua mcp tools.lua`, a child of pandoc) and puts its verdict after
-- the block:
--   LUA_CPATH_5_3="/path/to/build/lua5.3/?.so;;" pandoc --lua-filter check_lua.lua doc.md
-- A filter runs synchronously: each call waits on claude's loop, which runs meanwhile
-- (pandoc has no loop of its own to keep going).
-- Environment: CLAUDE_PANDOC_TOOLS (the tools file; default: tools.lua beside this file),
-- CLAUDELUA (the claudelua that serves it; default: claudelua on PATH).
local claude = require "claude"
local pandoc = rawget(_G, "pandoc") -- pandoc's API

local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local client = assert(claude.mcp.connect {
  command = os.getenv("CLAUDELUA") or "claudelua",
  args = { "mcp", os.getenv("CLAUDE_PANDOC_TOOLS") or (here .. "tools.lua") },
})

local function check(block)
  if block.classes[1] ~= "lua" then return nil end
  local result = assert(client:call_tool("check_lua", { code = block.text }))
  return { block, pandoc.Para { pandoc.Emph { pandoc.Str(result.content[1].text) } } }
end

return {
  { CodeBlock = check },
  { Pandoc = function(doc) client:close() return doc end }, -- after every block
}
