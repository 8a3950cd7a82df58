--- Tasks: coroutines over the libuv loop.
--
-- A task is a coroutine that waits by yielding a private sentinel to this
-- module; whatever completes the wait resumes it. Code outside any task waits
-- by running the loop until the wait completes, so the same functions work in
-- `claudelua` scripts, in plain `lua5.4` and inside a host application.
--
-- (Over 600 lines: a task's coroutine, its pools (the pooled coroutines of the router's
-- calls among them), its waits and its budget are one life; apart, each would reach into
-- the others' state.)
-- @module claude.async
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local blame = errors.blame
-- coroutine.resume that tells the C core which coroutine runs, so that a budget's watchdog
-- and an interrupting signal (SIGINT in the host) can reach a task that holds the loop
local resume = core.resume
-- a budget's methods, looked up once (b:start and b:resume on the tool-call path)
local budget_methods = getmetatable(core.budget {}).__index
local budget_start, budget_resume = budget_methods.start, budget_methods.resume

-- what a waiting task yields (the one wait's: suspend); core's, so that C knows it too
local SUSPEND = core.task_suspend
local tasks = setmetatable({}, { __mode = "k" }) -- coroutine -> task
local npending = 0 -- tasks started and not finished
local pack, unpack = table.pack, table.unpack
-- Closing a coroutine runs its to-be-closed variables; Lua 5.3 has none to run, and a
-- coroutine closed here is never resumed again, so there it is only dropped.
local close_coroutine = coroutine.close or function() end

local function default_on_error(err, task)
  local where = task and task.name and (" '" .. task.name .. "'") or ""
  io.stderr:write("claude: error in task", where, ": ", tostring(err), "\n")
  if errors.is(err) and err.traceback then io.stderr:write(err.traceback, "\n") end
end

local on_error = default_on_error

--- Sets the function that receives errors nobody waits for: errors of tasks
-- without waiters and errors raised in callbacks. `nil` restores the default,
-- which prints to stderr.
-- @tparam[opt] function fn `fn(err, task)`
function M.on_error(fn)
  if fn ~= nil and type(fn) ~= "function" then
    return blame("bad argument #1 to 'on_error' (function expected, got %s)", type(fn))
  end
  on_error = fn or default_on_error
end

local function report(err, task)
  local ok, e = pcall(on_error, err, task)
  if not ok then io.stderr:write("claude: error in on_error: ", tostring(e), "\n") end
end

core.set_error_handler(function(err) report(err, nil) end)

--- Hands `err` to the `on_error` function (default: stderr), as for an
-- error nobody waits for.
M.report = report

-- Adds the traceback where the error was raised: strings get it appended
-- (as lua.c does), claude errors keep it in a field, other values are kept.
-- Lua's own words for a wait inside a function that C called, which do not say what to do
local C_BOUNDARY = "attempt to yield across a C-call boundary"
local C_BOUNDARY_HINT = C_BOUNDARY .. " (a claude wait inside a function that C code called"
  .. " and cannot resume: a table.sort comparator, a string.gsub function, a metamethod"
  .. " that C calls such as __tostring or __gc, or a module's main chunk under Lua's own"
  .. " require; wait outside it, or load the module with claude.require)"

local function traceback(err)
  if type(err) == "string" then
    if err == C_BOUNDARY then err = C_BOUNDARY_HINT end
    return debug.traceback(err, 2)
  end
  if errors.is(err) and err.traceback == nil then
    err.traceback = debug.traceback("", 2)
  end
  return err
end
-- it returns at once: a budget's or an interrupt's error may call it (docs/budgets.md)
core.trusted_handler(traceback)
M.traceback = traceback

local Task = {}
Task.__index = Task
Task.__name = "claude.Task"

function Task.__tostring(t)
  return string.format("claude.Task (%s%s)", t.name and (t.name .. ", ") or "",
    t.waits and "waiting" or t.status)
end

local function wake_waiters(task)
  task.waits = false -- (a wait its end cut short wakes nothing any more)
  if task.deadline then
    task.deadline:close()
    task.deadline = false
  end
  if task.timer then
    task.timer:close()
    task.timer = nil
  end
  npending = npending - 1
  if task.finished then task.finished:set() end
end

-- Failed tasks nobody waited on yet: reported at the next turn of the loop
-- unless somebody joins them first (the usual `spawn(f) ... t:wait()`).
local unretrieved, report_timer = {}, nil

local function report_unretrieved()
  report_timer:close()
  report_timer = nil
  local list = unretrieved
  unretrieved = {}
  for i = 1, #list do
    local task = list[i]
    if not task.retrieved then report(task.error, task) end
  end
end

local function fail(task, err)
  task.status = "failed"
  task.error = err
  if not task.observed and not (task.finished and task.finished:waiting())
    and not (errors.is(err, "cancelled") and task.cancel_requested) then
    unretrieved[#unretrieved + 1] = task
    if not report_timer then
      report_timer = core.timer()
      report_timer:start(0, report_unretrieved)
    end
  end
  wake_waiters(task)
end

-- Task coroutines are pooled: creating a coroutine (a lua_State and its
-- stack) is the largest cost of a short task such as one tool call.
local DONE = setmetatable({}, { __name = "claude.done",
  __tostring = function() return "claude.done" end })
local idle, MAX_IDLE = {}, 64

-- The body of every task coroutine: runs one task, says DONE, and waits to be
-- handed the next one (a tail call, so its stack stays flat).
local NO_VALUES = { true, n = 1 } -- the result of the many tasks that return nothing

local function settle(task, ok, ...)
  if ok and select("#", ...) == 0 then
    task.result = NO_VALUES
  else
    task.result = pack(ok, ...)
  end
end

local function body(task, fn, ...)
  settle(task, xpcall(fn, traceback, ...))
  return body(coroutine.yield(DONE))
end

-- A pooled coroutine for `task`, which counts as pending until it settles.
local function take_coroutine(task)
  local n = #idle
  local co = idle[n]
  if co then idle[n] = nil else co = coroutine.create(body) end
  task.co = co
  tasks[co] = task
  npending = npending + 1
  return co
end

-- Transient tasks (the router's calls) run `fn(task, ...)` in coroutines of a pool per `fn`
-- whose body calls it straight, with no protected call between: an error ends the
-- coroutine (the task fails with it and its traceback, and the coroutine is not reused).
-- A pool holds idle tasks, each with its coroutine (task.co, tasks[co]): a task that finished
-- at once goes back whole, since nobody ever saw it, and the next one reuses table and
-- coroutine, with no allocation and no weak-table write. Their result is always NO_VALUES.
local pools = setmetatable({}, { __mode = "k" }) -- fn -> { n = idle count, body, task... }
-- the pool of the function spawn_transient last ran (it holds them): the router's calls find
-- theirs with a compare, not a look-up by function
local last_fn, last_pool = false, false
local yield = coroutine.yield

local function pool_of(fn)
  local pool = { n = 0 }
  local function tbody(task, ...)
    fn(task, ...)
    return tbody(yield(DONE))
  end
  pool.body = tbody
  pools[fn] = pool
  return pool
end

--- Makes `body` the body of its own pool of transient tasks (`spawn_transient(body, ...)`),
-- for a caller that runs its tasks in a loop without a call per task (the router's calls):
-- `body(task, ...)` is the coroutine's body itself; it ends each task by yielding
-- `async.DONE`, and that yield returns the next task's `task, ...`. An error it raises ends
-- its task and its coroutine.
-- @tparam function loop
-- @treturn function loop
function M.worker(loop)
  pools[loop] = { n = 0, body = loop }
  return loop
end

--- What a worker (`async.worker`) yields when its task is done.
M.DONE = DONE

-- The error of a transient task's coroutine that died of it: with its traceback, as the
-- other tasks' get theirs (traceback), and its to-be-closed variables closed.
local function died(co, err)
  if type(err) == "string" then
    err = debug.traceback(co, err)
  elseif errors.is(err) and err.traceback == nil then
    err.traceback = debug.traceback(co, "")
  end
  close_coroutine(co)
  return err
end

-- The coroutine of a finished task goes back to its pool (without its task: whoever holds
-- the task may still look at it).
local pool_task -- (pool, co): a new idle task of the pool, for coroutine co

local function release_coroutine(co, task)
  tasks[co] = nil
  local pool = task.pool
  if pool then -- the coroutine goes back with a new task (whoever holds this one keeps it)
    local n = pool.n
    if n < MAX_IDLE then
      pool.n = n + 1
      pool[n + 1] = pool_task(pool, co)
    end
    return
  end
  local n = #idle
  if n < MAX_IDLE then idle[n + 1] = co end
end

-- A task its budget stopped: its coroutine is closed (never pooled), the task fails with a
-- `budget` error (`reason` says which limit), and its `on_budget` hears of it.
local function budget_stop(task, msg, reason)
  local err = errors.new("budget", msg, { reason = reason })
  fail(task, err)
  local on = task.on_budget
  if on then
    local ok, e = pcall(on, err, task.on_budget_data)
    if not ok then report(e, task) end
  end
end

-- What a resume of the task's coroutine `co` gave: it waits, it is done, or it failed (a
-- budgeted resume gives the reason as a third value when the budget stopped it).
local function settle_step(task, co, ok, yielded, reason)
  if ok and yielded == SUSPEND then return end
  if not ok then
    tasks[co] = nil
    if reason then return budget_stop(task, yielded, reason) end
    if task.pool then yielded = died(co, yielded) end
    fail(task, yielded)
  elseif yielded == DONE then
    release_coroutine(co, task)
    task.co = nil
    local r = task.result
    if r[1] then
      task.status = "done"
      task.values = r
      wake_waiters(task)
    else
      fail(task, r[2])
    end
  else
    local msg = debug.traceback(co, "coroutine.yield was called directly inside a claude "
      .. "task; waits in tasks must go through claude (sleep, wait, receive...); run your own "
      .. "coroutines with coroutine.wrap inside the task instead of yielding out of it", 0)
    close_coroutine(co)
    tasks[co] = nil
    fail(task, errors.new("task", msg))
  end
end

local abort -- (task, err): ends the task's wait without what it waited for (the one wait)

-- The answer to a task's request read in C resumes the task there (claude.rpc, core.pending:
-- a request added with the task's coroutine), and hands what does not end in its next wait
-- to settle_step. A request's deadline kept by its pending set in C ends the task's wait
-- with abort.
core.task_waker(settle_step, function(task) abort(task, errors.new("timeout", "timed out")) end)

local function step(task, ...)
  local co = task.co
  local b = task.budget
  if b then return settle_step(task, co, budget_resume(b, co, ...)) end
  return settle_step(task, co, resume(co, ...))
end

local function new_task(observed)
  -- every field a task gets, made at once (no rehash while it runs)
  return setmetatable({ status = "running", observed = observed, co = false,
    result = false, values = false, finished = false, timer = false, waits = false,
    on_abort = false, budget = false, deadline = false, on_budget = false, on_budget_data = false,
    pool = false, cancel_pending = false }, Task)
end

local function launch(task, fn, ...)
  local co = take_coroutine(task)
  settle_step(task, co, resume(co, task, fn, ...))
  return task
end

local function start(observed, fn, ...)
  return launch(new_task(observed), fn, ...)
end

-- What a transient task that did not end at once (or failed) becomes: the task while it
-- runs, else nil (a failure goes to on_error, nobody holding the task to see why).
local function transient_end(task, co, budgeted, ok, yielded, reason)
  settle_step(task, co, ok, yielded, reason)
  local status = task.status
  if status == "failed" then
    if budgeted and errors.is(task.error, "budget") then return nil, task.error end
    report(task.error, task)
    return nil
  end
  if status ~= "done" then return task end
  return nil
end

pool_task = function(pool, co)
  local task = new_task(true)
  task.pool, task.result, task.co = pool, NO_VALUES, co
  tasks[co] = task
  return task
end

--- Runs `fn(task, a, b, c)` as an observed task, for callers that only need the task while
-- it waits (the router's calls), under `budget` when one is given (a `core.budget`, started
-- over for this call: `budget:start`): every resume of its coroutine then goes through the
-- budget, and a task the budget stops fails with a `budget` error (`reason` field), its
-- coroutine closed, never reused. A task that ended at once is reused, table and coroutine
-- (a call that does not wait costs no allocation), and the caller may reuse `budget`. `fn`
-- returns nothing; an error it raises ends its task; a task that failed at once (not by its
-- budget) goes to on_error. (Three values at most: no varargs on the tool-call path.)
-- @tparam function fn a worker (`async.worker`) or any function
-- @param budget a `core.budget`, or false/nil
-- @return the task if it is still running (see `limit`), else nil, and the `budget` error
--   when the budget stopped it
function M.spawn_transient(fn, budget, a, b, c)
  local pool = last_pool
  if fn ~= last_fn then
    pool = pools[fn] or pool_of(fn)
    last_fn, last_pool = fn, pool
  end
  local n = pool.n
  local task = n > 0 and pool[n] or pool_task(pool, coroutine.create(pool.body))
  if n > 0 then
    pool.n = n - 1
    task.cancel_pending = false
  end
  local co = task.co
  local ok, yielded, reason
  if budget then
    task.budget = budget
    ok, yielded, reason = budget_start(budget, co, task, a, b, c)
  else
    task.budget = false
    ok, yielded = resume(co, task, a, b, c)
  end
  if yielded == DONE and ok and not task.finished and not task.timer then
    -- the usual end, settled here: done at once, nobody waiting; back to the pool (it never
    -- counted as pending: nothing could look while it ran without a wait)
    n = pool.n
    if n < MAX_IDLE then
      pool.n = n + 1
      pool[n + 1] = task
    else
      tasks[co] = nil
    end
    return nil
  end
  npending = npending + 1 -- (settling it counts it out)
  return transient_end(task, co, budget, ok, yielded, reason)
end

--- The limits of a budgeted task that waits (`spawn_transient` returned it): when its budget
-- stops it later (in a resume, or after `seconds`, when given: the budget is then stopped
-- with reason "seconds" and the wait ends), `on_budget(err, task.on_budget_data)` is called.
-- @param task
-- @tparam function on_budget
-- @tparam[opt] number seconds
function M.limit(task, on_budget, seconds)
  task.on_budget = on_budget
  if seconds then
    local t = core.timer()
    task.deadline = t
    t:start(seconds, function()
      task.budget:stop("seconds")
      abort(task, errors.new("budget", "budget exceeded: seconds"))
    end)
  end
end

--- Starts `fn(...)` as a task and runs it until its first wait.
-- @tparam function fn
-- @return the task
function M.spawn(fn, ...)
  if type(fn) ~= "function" then
    return blame("bad argument #1 to 'spawn' (function expected, got %s)", errors.typename(fn))
  end
  return start(false, fn, ...)
end

--- Like spawn, for a task whose caller will surely wait on it: its error is
-- not reported to on_error.
function M.spawn_observed(fn, ...)
  return start(true, fn, ...)
end

--- The running task, or nil outside any task.
function M.current()
  return tasks[coroutine.running()]
end

--- Number of tasks that have not finished.
function M.pending_count()
  return npending
end

local function timeout_error(timeout)
  return errors.new("timeout", string.format("timed out after %g s", timeout))
end

---------------------------------------------------------------------------------------------
-- The one wait
--
-- Every wait of a task is `suspend` (await, wait_call, and through them sleep, events,
-- queues and claude.rpc's requests): it marks the task waiting, yields, and clears the marks
-- when the task goes on, whatever resumed it. A waiting task (still "running" in its status,
-- which says how it ended once it did; tostring says "waiting") has:
--   waits     what may wake it (`wake`): the task itself for a call of it (Task.__call: a
--             request's answer, claude.rpc), or an await's completion function;
--   on_abort  `on_abort(task, err)`, called when the wait ends without that (`abort`: it was
--             cancelled, its deadline passed, its budget's time ran out), before it goes on;
--   wait_deadline  when its deadline passes, if it has one (the task's timer, below).
-- A wait ends once: `wake` and `abort` claim it (waits = false) before they resume the
-- task, and whatever comes later for it is dropped. C resumes a waiting task from the entry
-- of a request it took from its pending set (core.pending's reader, src/task.c): the entry
-- is the claim, and C changes nothing of the task; its coroutine does, here.

-- The deadline of a wait costs nothing until it bites: the task's timer (task.timer) is not
-- started and stopped around every wait (two registry refs and two timer-heap changes per
-- request) but stays armed from one wait to the next; when it fires it times out the wait
-- of that moment if its deadline passed, re-arms for it if not, and lapses if none. It keeps
-- the loop alive only while a wait is on (timer:ref). `call_due`: when it fires for a wait
-- (false: not armed for one; nil: never was). sleep uses the timer its own way (own_timer).
local now = core.now

-- The end of a wait's deadline: the timer no longer holds the loop.
local function no_deadline(task)
  task.wait_deadline = false
  task.timer:ref(false)
end

-- sleep takes the task's timer over: it holds the loop again, and the next deadline arms it
-- anew.
local function own_timer(task)
  task.call_due = false
  task.timer:ref(true)
end

-- The task's timer callback for its waits' deadlines, made once.
local function deadline_timer(task)
  local f = function()
    task.call_due = false
    local deadline = task.wait_deadline
    if not deadline then return task.timer:stop() end -- no wait now: it lapses
    local left = deadline - now()
    if left > 0 then -- armed for an earlier wait: now for this one
      task.call_due = deadline
      return task.timer:start(left, task.on_call_timer)
    end
    abort(task, timeout_error(task.wait_timeout))
  end
  task.on_call_timer = f
  return f
end

local function arm_deadline(task, timeout)
  local deadline = now() + timeout
  task.wait_deadline, task.wait_timeout = deadline, timeout
  local timer = task.timer
  if not timer then
    timer = core.timer()
    task.timer = timer
  end
  local due = task.call_due
  if not due or due > deadline then
    timer:start(timeout, task.on_call_timer or deadline_timer(task))
    task.call_due = deadline
  end
  timer:ref(true)
end

abort = function(task, err)
  if not task.waits then return end
  task.waits = false
  local undo = task.on_abort
  if undo then undo(task, err) end
  return step(task, false, err)
end

--- The one wait of the running task `task`: it waits until `token` wakes it (nil: a call of
-- the task itself, `task(a, b)`, whose values it returns after `true`; a call made before the
-- wait, such as an answer written at once, ends it at once), at most `timeout` seconds (nil:
-- no limit; then it returns `false` and a timeout error). `on_abort(task, err)` is called
-- when the wait ends without its wake (timed out or cancelled), before the task goes on. A
-- cancellation raises (after on_abort), also one that came while the task did not wait.
-- Returns `true` and three values at most. (No varargs: every answer a client waits for
-- comes this way.)
-- @param task
-- @tparam[opt] number timeout
-- @tparam[opt] function on_abort
-- @param[opt] token
local function suspend(task, timeout, on_abort, token)
  if token == nil then
    token = task
    local early = task.early
    if early then
      task.early = false
      return true, early[1], early[2]
    end
  end
  local cancelled = task.cancel_pending
  if cancelled then
    task.cancel_pending = false
    if on_abort then on_abort(task, cancelled) end
    error(cancelled, 0)
  end
  task.waits, task.on_abort = token, on_abort -- (on_abort is read only while it waits)
  if timeout then arm_deadline(task, timeout) end
  local ok, a, b, c = yield(SUSPEND)
  task.waits = false
  if task.wait_deadline then no_deadline(task) end
  if ok == false and errors.is(a, "cancelled") then error(a, 0) end
  return ok, a, b, c
end
M.wait_call = suspend

--- A task called as a function wakes its `wait_call` with `true, a, b` (two values at most:
-- a request's answer, or nil and an error); called before the wait began (by what the task
-- did just before, such as an answer written at once), it hands those values to the wait to
-- come. (step inline, with no varargs.)
function Task.__call(task, a, b)
  if task.waits == task then
    task.waits = false
    local co, budget = task.co, task.budget
    if budget then return settle_step(task, co, budget_resume(budget, co, true, a, b)) end
    return settle_step(task, co, resume(co, true, a, b))
  end
  task.early = { a, b }
end

--- The tasks by their coroutine, for claude.rpc's requests, which find the running task
-- (the one that will `wait_call`) with no call.
M.by_coroutine = tasks

-- What a wait outside any task does: run the loop until the wait completes.
local function await_outside(arm, timeout)
  if core.running() then
    error(errors.new("misuse", "cannot wait here: this code runs inside a callback of the "
      .. "claude loop (the loop is already running); wait inside a task (claude.spawn) "
      .. "instead"), 0)
  end
  local ended, values, timer = false, nil, nil
  local function finish(...)
    if ended then return end
    ended, values = true, pack(...)
    core.stop() -- the loop's run below ends with this turn
  end
  local disarm = arm(function(...) finish(true, ...) end)
  if ended then return unpack(values, 1, values.n) end
  if timeout then
    timer = core.timer()
    timer:start(timeout, function()
      if disarm then disarm() end
      finish(false, timeout_error(timeout))
    end)
  end
  -- (in C until the wait ends, not a turn at a time: finish stops the run)
  while not ended do
    if not core.run("default") and not ended then
      if disarm then disarm() end
      if timer then timer:close() end
      error(errors.new("deadlock", "nothing left that could end this wait "
        .. "(no timer, process or task is pending)"), 0)
    end
  end
  if timer then timer:close() end
  return unpack(values, 1, values.n)
end

local MANY = {} -- an await's wake with more values than suspend carries: packed

--- Waits for an event. `arm(done)` registers the completion: `done(...)`
-- ends the wait with those values and may be called at once. `arm` may
-- return a function that unregisters it, called when the wait ends by
-- timeout or cancellation.
-- @treturn boolean true with the values given to `done`, or false and a
--   timeout error
-- @raise a `cancelled` error when the task is cancelled
function M.await(arm, timeout)
  local task = tasks[coroutine.running()]
  if not task then return await_outside(arm, timeout) end
  local arming, early = true, nil
  local function done(...)
    if task.waits == done then -- the wait's wake: suspend returns true, n, and the values
      task.waits = false
      local n = select("#", ...)
      if n > 2 then return step(task, true, MANY, pack(...)) end
      return step(task, true, n, ...)
    end
    if arming and not early then early = pack(true, ...) end -- called at once
  end
  local disarm = arm(done)
  arming = false
  if early then return unpack(early, 1, early.n) end
  local ok, n, a, b = suspend(task, timeout, disarm and function() disarm() end, done)
  if not ok then return false, n end
  if n == MANY then return true, unpack(a, 1, a.n) end
  if n == 2 then return true, a, b end
  if n == 1 then return true, a end
  return true
end

local Event = {}
Event.__index = Event
Event.__name = "claude.Event"

function Event:__tostring()
  return "claude.Event (" .. (self.is_set and "set" or "not set") .. ")"
end

--- Waits until `async.wake_all(holder)`, at most `timeout` seconds: `holder.waiters` is the
-- list of what waits (made by the first wait). An event's waits, a stream's back pressure.
-- @treturn boolean true, or false and a timeout error
function M.wait_woken(holder, timeout)
  return M.await(function(done)
    local w = holder.waiters
    if not w then
      w = {}
      holder.waiters = w
    end
    w[#w + 1] = done
    return function()
      for i = #w, 1, -1 do
        if w[i] == done then table.remove(w, i) end
      end
    end
  end, timeout)
end

--- Wakes everything waiting on `holder` (wait_woken).
function M.wake_all(holder)
  local w = holder.waiters
  if w then
    holder.waiters = false
    for i = 1, #w do w[i]() end
  end
end

--- A one-shot event: waits on it end when it is set (at once once it is).
function M.event()
  return setmetatable({ is_set = false, waiters = false }, Event)
end

--- Sets the event and wakes everything waiting on it.
function Event:set()
  if self.is_set then return end
  self.is_set = true
  M.wake_all(self)
end

--- True while something waits on the event.
function Event:waiting()
  local w = self.waiters
  return w and #w > 0 or false
end

--- Waits until the event is set.
-- @treturn boolean true, or false and a timeout error
function Event:wait(timeout)
  if self.is_set then return true end
  return M.wait_woken(self, timeout)
end

--- Sleeps `seconds`; inside a task, other tasks run meanwhile.
function M.sleep(seconds)
  if type(seconds) ~= "number" or seconds < 0 then
    return blame("bad argument #1 to 'sleep' (non-negative number expected, got %s)",
      tostring(seconds))
  end
  local task = tasks[coroutine.running()]
  if task then
    M.await(function(done)
      local timer = task.timer
      if not timer then
        timer = core.timer()
        task.timer = timer
      end
      timer:start(seconds, done)
      if task.call_due ~= nil then own_timer(task) end
      return function() timer:stop() end
    end)
  else
    if core.running() then M.await(nil) end -- raises the misuse error
    -- closed by hand, not <close>: the Lua half runs on Lua 5.3 too (docs/architecture.md)
    local timer = core.timer()
    local ok, err = pcall(M.await, function(done) timer:start(seconds, done) end)
    timer:close()
    if not ok then error(err, 0) end
  end
end

--- Waits for the task to finish; never raises for the task's failure.
-- @treturn boolean true followed by the task's results, or false and the
--   error (the task's, with its traceback, or a timeout error)
function Task:join(timeout)
  if self.status ~= "done" and self.status ~= "failed" then
    self.finished = self.finished or M.event() -- made only for tasks somebody waits on
    local ok, err = self.finished:wait(timeout)
    if not ok then return false, err end
  end
  if self.status == "failed" then
    self.retrieved = true
    return false, self.error
  end
  local v = self.values
  return true, unpack(v, 2, v.n)
end

--- Waits for the task and returns its results; raises its error (or a
-- timeout error).
function Task:wait(timeout)
  local r = pack(self:join(timeout))
  if not r[1] then error(r[2], 0) end
  return unpack(r, 2, r.n)
end

--- Cancels the task: its current wait raises a `cancelled` error, which
-- unwinds it (running its to-be-closed variables). Returns false when the
-- task had already finished.
function Task:cancel(reason)
  if self.status == "done" or self.status == "failed" then return false end
  local err = errors.new("cancelled", reason or "task cancelled")
  self.cancel_requested = true
  if self.waits then
    abort(self, err)
  elseif tasks[coroutine.running()] == self then
    error(err, 0)
  else
    self.cancel_pending = err
  end
  return true
end

--- True once the task has finished (done or failed).
function Task:done()
  return self.status == "done" or self.status == "failed"
end

M.Task = Task
return M
