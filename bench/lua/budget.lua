-- budget.lua -- what a budget costs (src/budget.c): a tool-call-sized coroutine resumed with
-- coroutine.resume and with b:resume under a fresh default budget (run 1 s, 256 MiB), a Lua
-- loop with and without the count hook, and allocation-heavy work before and after the
-- state's allocator is wrapped (which happens once, when the first memory budget is made,
-- so that part runs last). CPU time (os.clock), best of 5.
-- Run: build/claudelua bench/lua/budget.lua
local core = require "claude.core"

local function best(f, n)
  local b = math.huge
  for _ = 1, 5 do
    collectgarbage()
    local t0 = os.clock()
    f(n)
    b = math.min(b, os.clock() - t0)
  end
  return b / n
end

-- a tool call's work: arguments in, a small result table out
local function tool(args)
  return { content = { { type = "text", text = tostring(args.a + args.b) } } }
end
local args = { a = 1, b = 2 }

local function calls_plain(n)
  for _ = 1, n do
    local co = coroutine.create(tool)
    coroutine.resume(co, args)
  end
end

local DEFAULT = { run = 1, memory = 256 * 1024 * 1024 }
local function calls_budget(n)
  for _ = 1, n do
    local co = coroutine.create(tool)
    core.budget(DEFAULT):resume(co, args)
  end
end

local function loop(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
local function loop_plain(n) coroutine.wrap(loop)(n) end
local function loop_budget(n) core.budget({ run = 10 }):resume(coroutine.create(loop), n) end

local function allocs(n)
  local keep = {}
  for i = 1, n do keep[i % 100 + 1] = { i, tostring(i) } end
  return keep
end

local N = 200000
local p = best(calls_plain, N)
local a_plain = best(allocs, 1000000)
local l_plain = best(loop_plain, 20000000)
local l_budget = best(loop_budget, 20000000)
local b = best(calls_budget, N) -- wraps the allocator from here on
local a_wrapped = best(allocs, 1000000)
print(string.format("tool-call coroutine, coroutine.resume   %7.0f ns", p * 1e9))
print(string.format("tool-call coroutine, default budget     %7.0f ns  (+%.0f ns)", b * 1e9,
  (b - p) * 1e9))
print(string.format("Lua loop iteration, no hook             %7.2f ns", l_plain * 1e9))
print(string.format("Lua loop iteration, count hook          %7.2f ns  (%+.1f%%)", l_budget * 1e9,
  (l_budget / l_plain - 1) * 100))
print(string.format("allocation loop step, own allocator     %7.1f ns", a_plain * 1e9))
print(string.format("allocation loop step, wrapped allocator %7.1f ns  (%+.1f%%)", a_wrapped * 1e9,
  (a_wrapped / a_plain - 1) * 100))
