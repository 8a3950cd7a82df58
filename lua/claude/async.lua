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

local SUSPEND = setmetatable({}, { __name = "claude.suspend",
  __tostring = function() return "claude.suspend" end })
local tasks = setmetatable({}, { __mode = "k" }) -- coroutine -> task
local npending = 0 -- tasks started and not finished
local pack, unpack = table.pack, table.unpack

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
  return string.format("claude.Task (%s%s)", t.name and (t.name .. ", ") or "", t.status)
end

local function wake_waiters(task)
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
  coroutine.close(co)
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
    coroutine.close(co)
    tasks[co] = nil
    fail(task, errors.new("task", msg))
  end
end

-- The answer to a task's request read in C resumes the task there (claude.rpc, core.pending:
-- a request added with the task's coroutine), and hands what does not end in its next wait
-- to settle_step.
-- A request's deadline kept by its pending set in C ends the task's wait with `expire`.
core.task_waker(SUSPEND, settle_step, function(task)
  local abort = task.abort
  if abort then abort(errors.new("timeout", "timed out"), task) end
end)

local function step(task, ...)
  local co = task.co
  local b = task.budget
  if b then return settle_step(task, co, budget_resume(b, co, ...)) end
  return settle_step(task, co, resume(co, ...))
end

local function new_task(observed)
  -- every field a task gets, made at once (no rehash while it runs)
  return setmetatable({ status = "running", observed = observed, co = false,
    result = false, values = false, finished = false, timer = false, abort = false,
    budget = false, deadline = false, on_budget = false, on_budget_data = false,
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
  npending = npending + 1
  if budget then
    task.budget = budget
    ok, yielded, reason = budget_start(budget, co, task, a, b, c)
  else
    task.budget = false
    ok, yielded = resume(co, task, a, b, c)
  end
  if yielded == DONE and ok and not task.finished and not task.timer then
    -- the usual end, settled here: done at once, nobody waiting; back to the pool
    npending = npending - 1
    n = pool.n
    if n < MAX_IDLE then
      pool.n = n + 1
      pool[n + 1] = task
    else
      tasks[co] = nil
    end
    return nil
  end
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
      local abort = task.abort
      if abort then abort(errors.new("budget", "budget exceeded: seconds"), task) end
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

-- What a task's wait returns when it is resumed; a cancellation raises.
local own_timer -- (task): another wait of the task takes its timer over from wait_call

local function resumed(ok, ...)
  if ok == false then
    local err = ...
    if errors.is(err, "cancelled") then error(err, 0) end
  end
  return ok, ...
end

--- Waits for an event. `arm(done)` registers the completion: `done(...)`
-- ends the wait with those values and may be called at once. `arm` may
-- return a function that unregisters it, called when the wait ends by
-- timeout or cancellation.
-- @treturn boolean true with the values given to `done`, or false and a
--   timeout error
-- @raise a `cancelled` error when the task is cancelled
function M.await(arm, timeout)
  local task = tasks[coroutine.running()]
  if task and task.cancel_pending then
    local err = task.cancel_pending
    task.cancel_pending = false
    error(err, 0)
  end
  if not task and core.running() then
    error(errors.new("misuse", "cannot wait here: this code runs inside a callback of the "
      .. "claude loop (the loop is already running); wait inside a task (claude.spawn) "
      .. "instead"), 0)
  end
  local state = 0 -- 0 arming, 1 waiting, 2 finished
  local early, disarm, timer
  local function finish(...)
    if state == 2 then return end
    local was = state
    state = 2
    if was == 0 then
      early = pack(...)
    elseif task then
      task.abort = nil
      if timer then timer:stop() end
      task.status = "running"
      step(task, ...)
    else
      early = pack(...)
      core.stop() -- the loop's run below ends with this turn
    end
  end
  disarm = arm(function(...) finish(true, ...) end)
  if state == 2 then return unpack(early, 1, early.n) end
  state = 1
  if task then
    task.abort = function(err)
      if disarm then disarm() end
      finish(false, err)
    end
    if timeout then
      timer = task.timer
      if not timer then
        timer = core.timer()
        task.timer = timer
      end
      timer:start(timeout, function() task.abort(timeout_error(timeout), task) end)
      if task.call_due ~= nil then own_timer(task) end
    end
    task.status = "waiting"
    return resumed(coroutine.yield(SUSPEND))
  end
  -- Outside any task: run the loop until the wait completes.
  if timeout then
    timer = core.timer()
    timer:start(timeout, function()
      if disarm then disarm() end
      finish(false, timeout_error(timeout))
    end)
  end
  -- (in C until the wait ends, not a turn at a time: finish stops the run)
  while state ~= 2 do
    if not core.run("default") and state ~= 2 then
      if disarm then disarm() end
      if timer then timer:close() end
      error(errors.new("deadlock", "nothing left that could end this wait "
        .. "(no timer, process or task is pending)"), 0)
    end
  end
  if timer then timer:close() end
  return unpack(early, 1, early.n)
end

-- A wait with no closure (wait_call): the running task is itself the function that ends it
-- (Task.__call), and what it keeps of the wait are fields of its own. The request peer's
-- calls wait so (claude.rpc): a callback, a wait, an abort and a timer per request would be
-- four closures and a table each time.

-- The deadline of a wait_call costs nothing until it bites: the task's timer (task.timer,
-- the one its other waits use) is not started and stopped around every wait (two registry
-- refs and two timer-heap changes per request) but stays armed from one wait to the next;
-- when it fires it times out the wait of that moment if its deadline passed, re-arms for it
-- if not, and lapses if none. It keeps the loop alive only while a wait is on (timer:ref).
-- `call_due`: when it fires for wait_call (false: not armed for it; nil: never was).
local now = core.now

-- The end of a wait_call's deadline: the timer no longer holds the loop.
local function no_deadline(task)
  task.wait_deadline = false
  task.timer:ref(false)
end

-- Another wait of the task takes its timer over: it holds the loop again, and wait_call
-- arms it anew.
own_timer = function(task)
  task.call_due = false
  task.timer:ref(true)
end

-- task.abort of such a wait (cancelled, timed out, or its budget stopped it).
local function call_abort(err, task)
  task.abort = nil
  local undo = task.on_abort
  if undo then
    task.on_abort = false
    undo(task, err)
  end
  if task.wait_deadline then no_deadline(task) end
  task.status = "running"
  step(task, false, err)
end

-- The task's timer callback for wait_call, made once.
local function call_timer(task)
  local f = function()
    task.call_due = false
    local deadline = task.wait_deadline
    if not deadline then return task.timer:stop() end -- no wait now: it lapses
    local left = deadline - now()
    if left > 0 then -- armed for an earlier wait: now for this one
      task.call_due = deadline
      return task.timer:start(left, task.on_call_timer)
    end
    local abort = task.abort
    if abort then abort(timeout_error(task.wait_timeout), task) end
  end
  task.on_call_timer = f
  return f
end

--- A task called as a function ends its `wait_call` with `true, a, b` (two values at most:
-- a request's answer, or nil and an error); called before the wait began (by what the task
-- did just before, such as an answer written at once), it hands those values to the wait to
-- come. (step inline, with no varargs: every answer a client waits for comes this way.)
function Task.__call(task, a, b)
  if task.abort == call_abort then
    task.abort = nil
    task.on_abort = false
    if task.wait_deadline then no_deadline(task) end
    task.status = "running"
    local co, budget = task.co, task.budget
    if budget then return settle_step(task, co, budget_resume(budget, co, true, a, b)) end
    return settle_step(task, co, resume(co, true, a, b))
  end
  task.early = pack(true, a, b)
end

--- The running task's wait for a call of itself (`task(...)`, Task.__call): returns `true`
-- and the values of the call, or `false` and a timeout error after `timeout` seconds (nil:
-- none); raises a `cancelled` error when the task is cancelled. `on_abort(task, err)` is
-- called when the wait ends without the call (timed out or cancelled), before the task goes
-- on. `task` must be the running task; its `early` values (a call made before the wait)
-- end the wait at once.
-- @param task
-- @tparam[opt] number timeout
-- @tparam[opt] function on_abort
function M.wait_call(task, timeout, on_abort)
  local early = task.early
  if early then
    task.early = false
    return unpack(early, 1, early.n)
  end
  task.on_abort = on_abort or false
  task.abort = call_abort
  if timeout then
    local deadline = now() + timeout
    task.wait_deadline, task.wait_timeout = deadline, timeout
    local timer = task.timer
    if not timer then
      timer = core.timer()
      task.timer = timer
    end
    local due = task.call_due
    if not due or due > deadline then
      timer:start(timeout, task.on_call_timer or call_timer(task))
      task.call_due = deadline
    end
    timer:ref(true)
  end
  task.status = "waiting"
  -- resumed's check, with no varargs: three values at most (Task.__call's, call_abort's)
  local ok, a, b = yield(SUSPEND)
  if task.abort == call_abort then -- resumed by core.pending's reader: Task.__call's part
    task.abort = nil
    task.on_abort = false
    if task.wait_deadline then no_deadline(task) end
    task.status = "running"
  end
  if ok == false and errors.is(a, "cancelled") then error(a, 0) end
  return ok, a, b
end

-- For claude.rpc's written requests, which take the running task and wait for their answer
-- inline (caller's and wait_call's way, without a timeout: the pending set keeps it), two
-- calls fewer on every request: the tasks by coroutine, what a wait yields, a wait_call's
-- abort.
M.inline_wait = { tasks = tasks, SUSPEND = SUSPEND, call_abort = call_abort }

--- The running task, ready for `wait_call`: nil outside a task; raises the cancellation a
-- task got while it did not wait, as a wait would.
function M.caller()
  local task = tasks[coroutine.running()]
  if task then
    local err = task.cancel_pending
    if err then
      task.cancel_pending = false
      error(err, 0)
    end
    task.early = false
  end
  return task
end

local Event = {}
Event.__index = Event
Event.__name = "claude.Event"

function Event:__tostring()
  return "claude.Event (" .. (self.is_set and "set" or "not set") .. ")"
end

--- A one-shot event: waits on it end when it is set (at once once it is).
function M.event()
  return setmetatable({ is_set = false, waiters = {} }, Event)
end

--- Sets the event and wakes everything waiting on it.
function Event:set()
  if self.is_set then return end
  self.is_set = true
  local w = self.waiters
  self.waiters = nil
  for i = 1, #w do w[i]() end
end

--- True while something waits on the event.
function Event:waiting()
  return self.waiters ~= nil and #self.waiters > 0
end

--- Waits until the event is set.
-- @treturn boolean true, or false and a timeout error
function Event:wait(timeout)
  if self.is_set then return true end
  return M.await(function(done)
    local w = self.waiters
    w[#w + 1] = done
    return function()
      for i = #w, 1, -1 do
        if w[i] == done then table.remove(w, i) end
      end
    end
  end, timeout)
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
    local timer <close> = core.timer()
    M.await(function(done) timer:start(seconds, done) end)
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
  if self.abort then
    self.abort(err, self)
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
