local claude = require "claude"
local core = require "claude.core"
local queue = require "claude.queue"
local async = require "claude.async"
local errors = require "claude.errors"
local harness = require "support.harness"

describe("tasks", function()
  before_each(harness.before)
  after_each(harness.after)

  it("return their results to wait", function()
    local t = claude.spawn(function(a, b) return a + b, "x" end, 15, 27)
    local sum, x = t:wait()
    assert.equal(42, sum)
    assert.equal("x", x)
  end)

  it("run concurrently while they sleep", function()
    local log = {}
    local a = claude.spawn(function()
      log[#log + 1] = "a start"; claude.sleep(0.05); log[#log + 1] = "a end"
    end)
    local b = claude.spawn(function()
      log[#log + 1] = "b start"; claude.sleep(0.01); log[#log + 1] = "b end"
    end)
    a:wait(); b:wait()
    assert.same({ "a start", "b start", "b end", "a end" }, log)
  end)

  it("wait may be called from inside another task", function()
    local inner = claude.spawn(function() claude.sleep(0.01); return "inner" end)
    local outer = claude.spawn(function() return "got " .. inner:wait() end)
    assert.equal("got inner", outer:wait())
  end)

  it("time out a wait with a timeout error and keep running", function()
    local slow = claude.spawn(function() claude.sleep(0.2); return "late" end)
    local ok, err = slow:join(0.01)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "timeout"))
    assert.equal("late", slow:wait(5))
  end)

  it("raise the task's error, with its traceback, in wait", function()
    local t = claude.spawn(function()
      claude.sleep(0)
      error("boom")
    end)
    local ok, err = pcall(t.wait, t)
    assert.is_false(ok)
    assert.matches("boom", err)
    assert.matches("stack traceback", err)
  end)

  it("report nothing to on_error when their error is retrieved", function()
    local seen = false
    claude.on_error(function() seen = true end)
    local t = claude.spawn(function() error("retrieved") end)
    assert.is_false((t:join()))
    claude.sleep(0.01)
    claude.on_error(nil)
    assert.is_false(seen)
  end)

  it("keep error objects intact", function()
    local t = claude.spawn(function() error({ code = 7 }) end)
    local ok, err = t:join()
    assert.is_false(ok)
    assert.equal(7, err.code)
  end)

  it("send errors nobody waits for to on_error", function()
    local seen
    claude.on_error(function(err, task) seen = { err = err, task = task } end)
    local t = claude.spawn(function() error("unobserved") end)
    claude.sleep(0.01) -- reported at the next turn of the loop, if nobody joined
    claude.on_error(nil)
    assert.matches("unobserved", seen.err)
    assert.equal(t, seen.task)
  end)

  it("name a coroutine.yield from user code", function()
    local t = claude.spawn(function() coroutine.yield(1) end)
    local ok, err = t:join()
    assert.is_false(ok)
    assert.matches("coroutine.yield was called directly inside a claude task", tostring(err))
  end)

  it("allow the user's own coroutines inside a task", function()
    local t = claude.spawn(function()
      local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
      claude.sleep(0)
      return gen() + gen() + gen()
    end)
    assert.equal(6, t:wait())
  end)

  it("are cancelled: the wait raises and to-be-closed variables run", function()
    local closed = false
    local t = claude.spawn(function()
      local _ <close> = setmetatable({}, { __close = function() closed = true end })
      claude.sleep(10)
    end)
    assert.is_true(t:cancel("stop"))
    local ok, err = t:join()
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    assert.equal(_VERSION ~= "Lua 5.3", closed) -- (5.3 has no to-be-closed variables)
    assert.is_false(t:cancel())
  end)

  -- The one wait (async's suspend): every wait ends once, and what comes for it after is
  -- dropped, not handed to the task's next wait.
  it("drop a completion that comes after the wait timed out", function()
    local late
    local t = claude.spawn(function()
      local ok, err = claude.await(function(done) late = done end, 0.01)
      local ev = async.event()
      claude.spawn(function()
        late("stale") -- the first wait's completion, while the task waits on ev
        ev:set()
      end)
      return ok, errors.is(err, "timeout"), ev:wait(5)
    end)
    assert.same({ false, true, true }, { t:wait(5) })
  end)

  it("wake a cancelled wait once: its completion and a second cancel change nothing", function()
    local finish, undone = nil, 0
    local t = claude.spawn(function()
      claude.await(function(done)
        finish = done
        return function() undone = undone + 1 end
      end)
    end)
    assert.equal("waiting", tostring(t):match("waiting"))
    assert.is_true(t:cancel("stop"))
    finish("too late")
    assert.is_false(t:cancel("again"))
    local ok, err = t:join()
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    assert.equal("stop", err.message)
    assert.equal(1, undone) -- the wait's registration undone once
  end)

  it("raise a cancellation that came while the task ran at its next wait, undone", function()
    local undone, ev, victim = 0, async.event(), nil
    claude.spawn(function()
      ev:wait()
      victim:cancel("meanwhile")
    end)
    local t = claude.spawn(function()
      victim = async.current()
      ev:set() -- the task above runs now and cancels this one, which runs but does not wait
      claude.await(function() return function() undone = undone + 1 end end)
    end)
    local ok, err = t:join(5)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "cancelled"))
    assert.equal(1, undone)
  end)

  it("keep an await's values, however many", function()
    local t = claude.spawn(function()
      local function pass(...)
        local args = table.pack(...)
        return table.pack(claude.await(function(done)
          claude.spawn(function() done(table.unpack(args, 1, args.n)) end)
        end))
      end
      return pass(), pass("a"), pass("a", nil), pass(1, 2, 3, nil)
    end)
    local none, one, two, four = t:wait(5)
    assert.same({ true, n = 1 }, none)
    assert.same({ true, "a", n = 2 }, one)
    assert.same({ true, "a", nil, n = 3 }, two)
    assert.same({ true, 1, 2, 3, nil, n = 5 }, four)
  end)

  it("sleep outside any task by running the loop", function()
    if harness.in_task() then return pending("runs outside tasks only") end
    local fired = false
    local timer <close> = core.timer()
    timer:start(0.005, function() fired = true end)
    claude.sleep(0.05) -- the loop runs meanwhile: the timer fires
    assert.is_true(fired)
  end)

  it("sleep as long as asked after Lua held the state without the loop", function()
    -- the loop's clock stands still while Lua runs without it: a sleep counted from that
    -- clock came back at once (a semantic bound of sleep, not a measure of speed)
    local spin_until = core.now() + 0.15
    while core.now() < spin_until do end
    local t0 = core.now()
    claude.sleep(0.05)
    assert.is_true(core.now() - t0 >= 0.045, "slept " .. (core.now() - t0) .. " s")
  end)

  it("report a wait that nothing can end", function()
    if harness.in_task() then return pending("runs outside tasks only") end
    local q = queue.new()
    local ok, err = pcall(q.pop, q)
    assert.is_false(ok)
    assert.is_true(errors.is(err, "deadlock"))
  end)

  it("refuse to run the loop from inside a callback", function()
    if harness.in_task() then return pending("runs outside tasks only") end
    local timer = core.timer()
    local caught
    timer:start(0, function()
      local ok, err = pcall(claude.sleep, 0.01)
      caught = not ok and err
    end)
    claude.sleep(0.02)
    timer:close()
    assert.matches("already running", caught)
  end)

  it("validate their arguments", function()
    assert.has_error(function() claude.spawn(42) end,
      "bad argument #1 to 'spawn' (function expected, got number)")
    assert.has_error(function() claude.sleep(-1) end)
  end)
end)

describe("queues", function()
  before_each(harness.before)
  after_each(harness.after)

  it("hand values to waiting tasks in order", function()
    local q = queue.new()
    local got = {}
    local consumer = claude.spawn(function()
      for _ = 1, 3 do got[#got + 1] = q:pop() end
    end)
    q:push("a"); q:push("b"); q:push("c")
    consumer:wait()
    assert.same({ "a", "b", "c" }, got)
  end)

  it("time out a pop without losing later values", function()
    local q = queue.new()
    local v, err = q:pop(0.01)
    assert.is_nil(v)
    assert.is_true(errors.is(err, "timeout"))
    q:push(1)
    assert.equal(1, q:pop(0))
  end)

  it("drain, then end, when closed", function()
    local q = queue.new()
    q:push(1)
    q:close("bye")
    assert.equal(1, q:pop())
    local v, err = q:pop()
    assert.is_nil(v)
    assert.equal("bye", err)
  end)
end)

describe("the foreign-loop interface", function()
  before_each(harness.before)
  after_each(harness.after)

  it("exposes pollfd, timeout and step", function()
    if harness.in_task() then return pending("runs outside tasks only") end
    assert.is_true(math.type(claude.pollfd()) == "integer" and claude.pollfd() >= 0)
    local fired = false
    local timer = core.timer()
    timer:start(0.01, function() fired = true end)
    assert.is_true(claude.timeout() <= 0.01)
    while not fired do claude.step(1) end
    timer:close()
    assert.is_true(fired)
  end)
end)
