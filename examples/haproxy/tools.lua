-- examples/haproxy/tools.lua -- the MCP server examples/haproxy/claude.lua calls
-- (`claudelua mcp tools.lua`, started by the first /tool request).
local claude = require "claude"

return claude.server("haproxy_tools", {
  claude.tool("upper", "The text in capitals", { text = "string" },
    function(args) return args.text:upper() end),
  -- a slow tool: waits (without blocking anything) until the file `path` exists
  claude.tool("wait_for", "Waits until a file exists", { path = "string" }, function(args)
    local f = io.open(args.path)
    while not f do
      claude.sleep(0.05)
      f = io.open(args.path)
    end
    f:close()
    return "there: " .. args.path
  end),
})
