-- foreign_loop.lua -- claude inside an application that runs another event
-- loop (here luv, as in Neovim): the foreign loop polls claude.pollfd() and
-- calls claude.step(0) when it is readable or claude's next timer is due.
-- Work may start at any time, before or after the driver is set up, and from
-- the foreign loop's own callbacks: the descriptor becomes readable whenever
-- claude gains work outside step.
-- Run: lua5.4 examples/foreign_loop.lua [--tasks-first]
--   (with lua/ and build/ on LUA_PATH and LUA_CPATH; or `claudelua` with luv
--   on its cpath)
local uv = require "luv"
local claude = require "claude"
local testing = require "claude.testing"

-- Hooks claude into luv's loop; returns the function that unhooks it.
local function drive()
  local poll = uv.new_poll(claude.pollfd())
  local timer = uv.new_timer()
  local function rearm()
    local t = claude.timeout()
    timer:stop()
    -- at least 1 ms: a 0 ms luv timer started from a timer callback runs in the same pass
    if t then timer:start(math.max(1, math.ceil(t * 1000)), 0, function()
      claude.step(0)
      rearm()
    end) end
  end
  poll:start(claude.events(), function() claude.step(0); rearm() end)
  rearm()
  return function() poll:close(); timer:close() end
end

local results = {}
local tasks = {}
local function start_tasks()
  for i = 1, 3 do
    tasks[i] = claude.spawn(function()
      claude.sleep(0.01 * i)
      results[#results + 1] = "task " .. i
    end)
  end
end

local tasks_first = arg[1] == "--tasks-first"
local stop
if tasks_first then
  start_tasks()
  stop = drive()
else
  stop = drive() -- the usual order: hook claude in first, start work later
  start_tasks()
end

-- A query started from one of luv's callbacks, against a scripted fake CLI.
local options, fake = testing.fake_cli [[
  cli:expect_initialize()
  local _, text = cli:expect_user()
  cli:system_init()
  cli:assistant("You said: " .. text)
  cli:result()
]]
local answer
local kickoff = uv.new_timer()
kickoff:start(1, 0, function()
  kickoff:close()
  tasks[4] = claude.spawn(function()
    for msg in claude.query("hello from luv", options) do
      if msg.type == "result" then answer = claude.text(msg) end
    end
  end)
end)

-- the application's own work, on its own loop
local ticks = 0
local app_timer = uv.new_timer()
app_timer:start(5, 5, function()
  ticks = ticks + 1
  local all = #tasks == 4
  for _, t in ipairs(tasks) do all = all and t:done() end
  if all then
    app_timer:close()
    stop()
  end
end)
uv.run()
fake:cleanup()
for _, t in ipairs(tasks) do t:wait() end -- raises the error of a task that failed
print(table.concat(results, ", "))
print("the query answered: " .. tostring(answer))
print("the application's timer ticked: " .. tostring(ticks > 0))
