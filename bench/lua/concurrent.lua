-- concurrent through claudelua: K sessions at once in this one process, each with its own fake
-- CLI and its own in-process server running a small mcp_flood.
local common = dofile((arg[0]:match("^(.*)/") or ".") .. "/common.lua")
local claude = common.claude

local K = tonumber(arg[1]) or 10

local function session()
  local result
  local options = { cli_path = common.FAKE, mcp_servers = { calc = common.calc_server() } }
  for msg in claude.query("go", options) do
    if msg.type == "result" then result = msg end
  end
  return result ~= nil and not result.is_error
end

local t0 = common.now()
local tasks = {}
for i = 1, K do tasks[i] = claude.spawn(session) end
local ok_count = 0
for i = 1, K do
  local ok, good = pcall(tasks[i].wait, tasks[i])
  if ok and good then ok_count = ok_count + 1 end
  if not ok then io.stderr:write("session ", i, ": ", tostring(good), "\n") end
end
common.report { driver = "concurrent", k = K, ok = ok_count == K, sessions_ok = ok_count,
  wall_s = common.now() - t0 }
