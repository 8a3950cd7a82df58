-- budget.lua -- what a budget costs (src/budget.c): a tool-call-sized coroutine resumed with
-- coroutine.resume, under a budget made per call, and under one kept from call to call
-- (b:start); a Lua loop with no budget, under a `run` budget (the watchdog: no hook) and
-- under an `instructions` budget (the count hook); an allocation-heavy loop outside and
-- inside a budgeted call (the memory meter). CPU time (os.clock), best of 5.
-- Run: build/claudelua bench/lua/budget.lua   (or lua5.4 with claude on its paths: there the
-- first budget wraps the allocator, so allocations outside budgets pay for it too)
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

local kept = core.budget(DEFAULT)
local function calls_kept(n)
  for _ = 1, n do
    local co = coroutine.create(tool)
    kept:start(co, args)
  end
end

local function loop(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
local function loop_plain(n) coroutine.wrap(loop)(n) end
local function loop_run(n) core.budget({ run = 10 }):resume(coroutine.create(loop), n) end
local function loop_count(n)
  core.budget({ instructions = 1e12 }):resume(coroutine.create(loop), n)
end

local function allocs(n)
  local keep = {}
  for i = 1, n do keep[i % 100 + 1] = { i, tostring(i) } end
  return keep
end
local function allocs_budget(n)
  core.budget({ memory = 1e12 }):resume(coroutine.create(allocs), n)
end

local N, L, A = 200000, 20000000, 1000000
local p = best(calls_plain, N)
local a_plain = best(allocs, A)
local l_plain = best(loop_plain, L)
local l_run = best(loop_run, L)
local l_count = best(loop_count, L)
local b = best(calls_budget, N)
local k = best(calls_kept, N)
local a_budget = best(allocs_budget, A)
local a_after = best(allocs, A)
print(string.format("tool-call coroutine, coroutine.resume        %7.0f ns", p * 1e9))
print(string.format("tool-call coroutine, a budget per call       %7.0f ns  (+%.0f ns)", b * 1e9,
  (b - p) * 1e9))
print(string.format("tool-call coroutine, a budget kept (b:start) %7.0f ns  (+%.0f ns)", k * 1e9,
  (k - p) * 1e9))
print(string.format("Lua loop iteration, no budget                %7.2f ns", l_plain * 1e9))
print(string.format("Lua loop iteration, run budget (no hook)     %7.2f ns  (%+.1f%%)", l_run * 1e9,
  (l_run / l_plain - 1) * 100))
print(string.format("Lua loop iteration, count hook               %7.2f ns  (%+.1f%%)",
  l_count * 1e9, (l_count / l_plain - 1) * 100))
print(string.format("allocation loop step, no budget              %7.1f ns", a_plain * 1e9))
print(string.format("allocation loop step, in a budgeted call     %7.1f ns  (%+.1f%%)",
  a_budget * 1e9, (a_budget / a_plain - 1) * 100))
print(string.format("allocation loop step, after budgets          %7.1f ns  (%+.1f%%)",
  a_after * 1e9, (a_after / a_plain - 1) * 100))
