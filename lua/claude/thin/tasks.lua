--- Tasks of the thin client on the host's own loop (Neovim's `vim.loop`, or luv): a task is
-- a coroutine; a wait yields it, and the callback that ends the wait resumes it through the
-- host's `schedule` (Neovim's `vim.schedule`: a loop callback may not touch the editor).
-- Nothing here ever blocks the loop.
-- @module claude.thin.tasks
local M = {}

local create, resume, running, status, yield = coroutine.create, coroutine.resume,
  coroutine.running, coroutine.status, coroutine.yield
local unpack = table.unpack or rawget(_G, "unpack") -- (Lua 5.1's is a global)

--- The host: `uv` (luv's module), `schedule(fn)` (runs fn where the host's API may be
-- used), `report(err)` (an error nobody waits for). `claude.thin.setup` sets them.
M.host = {
  uv = nil,
  schedule = function(fn) fn() end,
  report = function(err) io.stderr:write("claude: ", tostring(err), "\n") end,
}

local by_coroutine = setmetatable({}, { __mode = "k" })

local Task = {}
Task.__index = Task
Task.__tostring = function(t)
  return "claude.thin.Task (" .. (t.finished and "done" or "running") .. ")"
end

local function step(task, ...)
  local ok, err = resume(task.co, ...)
  if not ok then
    task.finished, task.error = true, err
    M.host.report(debug.traceback(task.co, tostring(err)))
  elseif status(task.co) == "dead" then
    task.finished = true
  end
end

--- Runs `fn(...)` as a task, at once until its first wait.
function M.spawn(fn, ...)
  if type(fn) ~= "function" then
    error("bad argument #1 to 'spawn' (function expected, got " .. type(fn) .. ")", 2)
  end
  local task = setmetatable({ co = create(fn), finished = false }, Task)
  by_coroutine[task.co] = task
  step(task, ...)
  return task
end

function Task:done() return self.finished end

--- The running task, or nil outside one.
function M.current()
  local co = running()
  return co and by_coroutine[co] or nil
end

--- Waits until `arm(done)` calls `done(...)`: returns true, ... ; or false, err after
-- `timeout` seconds. `arm` may return a function that unregisters it (on timeout). Only
-- inside a task: outside one, the host's loop would have to block.
function M.await(arm, timeout)
  local task = M.current()
  if not task then
    error("this waits, and the host's loop must not block: call it inside claude.spawn", 3)
  end
  local finished, arming, early, timer = false, true, nil, nil
  local function finish(...)
    if finished then return end
    finished = true
    if timer then timer:stop(); timer:close() end
    local values = { n = select("#", ...), ... }
    -- ended by `arm` itself: the task has not yielded yet, so there is nothing to resume
    if arming then early = values; return end
    M.host.schedule(function() step(task, unpack(values, 1, values.n)) end)
  end
  local unarm = arm(function(...) finish(true, ...) end)
  arming = false
  if early then return unpack(early, 1, early.n) end
  if timeout then
    timer = M.host.uv.new_timer()
    timer:start(math.floor(timeout * 1000), 0, function()
      if type(unarm) == "function" then unarm() end
      finish(false, setmetatable({ kind = "timeout", message = "timed out" },
        { __tostring = function(e) return e.message end }))
    end)
  end
  return yield()
end

--- Waits `seconds` on a timer of the loop.
function M.sleep(seconds)
  if type(seconds) ~= "number" then
    error("bad argument #1 to 'sleep' (number expected, got " .. type(seconds) .. ")", 2)
  end
  M.await(function(done)
    local timer = M.host.uv.new_timer()
    timer:start(math.floor(seconds * 1000), 0, function()
      timer:close()
      done()
    end)
  end)
end

return M
