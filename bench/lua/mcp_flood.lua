-- mcp_flood through claudelua: one in-process server; the fake calls `add`
-- CLAUDELUA_BENCH_N times and measures calls/s and latency itself.
local common = dofile((arg[0]:match("^(.*)/") or ".") .. "/common.lua")
local claude = common.claude

local t0 = common.now()
local result, messages = nil, 0
local options = { cli_path = common.FAKE, mcp_servers = { calc = common.calc_server() } }
-- CLAUDELUA_BENCH_TOOL_BUDGET=off: tool calls without a budget (what the default costs)
if os.getenv("CLAUDELUA_BENCH_TOOL_BUDGET") == "off" then options.tool_budget = false end
for msg in claude.query("go", options) do
  messages = messages + 1
  if msg.type == "result" then result = msg end
end
common.report {
  driver = "mcp_flood",
  ok = result ~= nil and not result.is_error,
  messages = messages,
  wall_s = common.now() - t0,
}
