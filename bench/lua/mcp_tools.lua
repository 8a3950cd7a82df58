-- The benchmark's MCP server for `claudelua mcp`: the same `add` tool the
-- TypeScript side serves (bench/ts/mcp_server.mjs).
local claude = require "claude"

-- CLAUDELUA_BENCH_MIDDLEWARE=1: with one middleware that passes every request on (what the
-- middleware's way costs: docs/performance.md)
local middleware = os.getenv("CLAUDELUA_BENCH_MIDDLEWARE") == "1"
  and { function(req, _, next) return next(req) end } or nil

return claude.server("calc", {
  claude.tool("add", "Add two numbers", { a = "number", b = "number" },
    function(args) return args.a + args.b end),
}, { middleware = middleware })
