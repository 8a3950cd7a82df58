-- Shared by the claudelua drivers (run as `build/claudelua bench/lua/<driver>.lua`): where the
-- fake CLI is, a wall clock, peak RSS, the `calc` server, one JSON line out.
local claude = require "claude"

local M = { claude = claude }

M.FAKE = os.getenv("CLAUDELUA_BENCH_FAKE")
if not M.FAKE then
  io.stderr:write("CLAUDELUA_BENCH_FAKE must name the fake CLI (bench/run sets it)\n")
  os.exit(2)
end

--- Monotonic seconds.
M.now = claude.core.now

--- Peak resident set of this process alone (the fake CLI is a separate process).
function M.peak_rss_kb()
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmHWM:%s*(%d+)"))
end

--- The `calc` server with the one tool the fake calls: add(a, b) -> text of the sum.
function M.calc_server()
  -- CLAUDELUA_BENCH_MIDDLEWARE=1: one middleware that passes every request on
  local middleware = os.getenv("CLAUDELUA_BENCH_MIDDLEWARE") == "1"
    and { function(req, _, next) return next(req) end } or nil
  return claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
      return args.a + args.b
    end),
  }, { middleware = middleware })
end

--- Prints one JSON line: { sdk = "claudelua", peak_rss_kb = ..., <fields> }.
function M.report(fields)
  fields.sdk = "claudelua"
  fields.peak_rss_kb = M.peak_rss_kb()
  io.stdout:write(claude.json.encode(fields), "\n")
  io.stdout:flush()
end

return M
