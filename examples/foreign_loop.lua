-- foreign_loop.lua -- claude inside an application that runs another event
-- loop (here luv, as in Neovim): the foreign loop polls claude.pollfd() and
-- calls claude.step(0) when it is readable or claude's next timer is due.
-- Run: lua5.4 examples/foreign_loop.lua (with lua/ and build/ on the paths)
local uv = require "luv"
local claude = require "claude"

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
  poll:start("r", function() claude.step(0); rearm() end)
  rearm()
  return function() poll:close(); timer:close() end
end

local results = {}
local tasks = {}
for i = 1, 3 do
  tasks[i] = claude.spawn(function()
    claude.sleep(0.01 * i)
    results[#results + 1] = "task " .. i
  end)
end

local stop = drive()
-- the application's own work, on its own loop
local ticks = 0
local app_timer = uv.new_timer()
app_timer:start(5, 5, function()
  ticks = ticks + 1
  if tasks[1]:done() and tasks[2]:done() and tasks[3]:done() then
    app_timer:close()
    stop()
  end
end)
uv.run()
print(table.concat(results, ", "))
print("the application's timer ticked: " .. tostring(ticks > 0))
