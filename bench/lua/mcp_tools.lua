-- The benchmark's MCP server for `claudelua mcp`: the same `add` tool the
-- TypeScript side serves (bench/ts/mcp_server.mjs).
local claude = require "claude"

return claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
})
