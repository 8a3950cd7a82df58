-- examples/pandoc/tools.lua -- the MCP server of examples/pandoc/check_lua.lua
local claude = require "claude"

return claude.server("docs", {
  claude.tool("check_lua", "Whether a piece of Lua compiles, or its syntax error",
    { code = "string" }, function(args)
      local ok, err = load(args.code, "=block", "t")
      return ok and "compiles" or ("does not compile: " .. err)
    end),
})
