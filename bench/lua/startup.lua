-- startup through claudelua: one trivial turn, with `--server` one in-process MCP server
-- declared. bench/run times the whole process from outside.
local common = dofile((arg[0]:match("^(.*)/") or ".") .. "/common.lua")
local claude = common.claude

local with_server = false
for _, a in ipairs(arg) do
  if a == "--server" then with_server = true end
end
local options = { cli_path = common.FAKE }
if with_server then options.mcp_servers = { calc = common.calc_server() } end
local result
for msg in claude.query("hi", options) do
  if msg.type == "result" then result = msg end
end
common.report { driver = "startup", server = with_server,
  ok = result ~= nil and not result.is_error }
