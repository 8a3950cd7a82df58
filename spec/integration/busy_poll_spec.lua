-- The loop's busy poll (src/busy_poll.c): polling before it sleeps while its turns come back
-- fast, and sleeping again once they do not.
local claude = require "claude"
local process = require "claude.process"
local harness = require "support.harness"

local function cpus()
  local p = assert(io.popen("nproc"))
  local n = tonumber(p:read("l"))
  p:close()
  return n
end

local function under_valgrind()
  local f = assert(io.open("/proc/self/maps"))
  local maps = f:read("a")
  f:close()
  return maps:find("vgpreload", 1, true) ~= nil
end

-- `n` lines to cat and back, one at a time: the ping-pong the busy poll is for.
local function ping_pong(n)
  local cat <close> = assert(process.spawn { "cat" })
  for i = 1, n do
    assert(cat:write(i .. "\n"))
    assert.equal(tostring(i), cat:read_line(5))
  end
end

describe("the busy poll", function()
  local window
  before_each(function()
    harness.before()
    window = claude.busy_poll()
  end)
  after_each(function()
    claude.busy_poll(window)
    harness.after()
  end)

  it("is on by default (50 us) on a loop claude owns with more than one CPU", function()
    if os.getenv("CLAUDELUA_BUSY_POLL_US") then return end -- (the environment's say)
    assert.equal(cpus() > 1 and 50 or 0, window)
  end)

  it("sets a window and returns the one before; bad windows raise at the caller", function()
    assert.equal(window, claude.busy_poll(200))
    assert.equal(200, claude.busy_poll(0))
    assert.equal(0, claude.busy_poll())
    for _, bad in ipairs { -1, 1001, 1.5, "x" } do
      local ok, err = pcall(function() claude.busy_poll(bad) end)
      assert.is_false(ok)
      assert.matches("busy_poll_spec.lua:%d+: bad argument #1 to 'busy_poll' %(microseconds", err)
    end
  end)

  -- What the code guarantees, with no claim on the machine's speed: a poll follows only a
  -- turn that came back within the window after a write (stats.fast), such turns poll, and a
  -- quiet loop stops polling. How many turns are fast is the load's say (under four CPU hogs,
  -- 300 round trips gave none in about half the runs), so the spec goes on with round trips
  -- until the load allowed a poll, with a generous deadline.
  it("polls after the fast turns of a ping-pong, and sleeps when the loop goes quiet", function()
    claude.busy_poll(1000)
    local before = claude.busy_poll_stats()
    local during
    local deadline = claude.core.now() + 120
    repeat
      ping_pong(100)
      during = claude.busy_poll_stats()
    until during.spins > before.spins or claude.core.now() > deadline or under_valgrind()
    local fast, spins = during.fast - before.fast, during.spins - before.spins
    assert.is_true(spins <= fast, ("%d polls after %d fast turns"):format(spins, fast))
    assert.is_true(during.hits - before.hits <= spins)
    -- (under valgrind no turn comes back within the window: nothing to poll for)
    if not under_valgrind() then
      assert.is_true(spins > 0, ("no poll in 120 s of round trips (%d fast turns)"):format(fast))
    end
    -- quiet: at most one window polled in vain after the last answer, then the loop sleeps
    -- (a count, not a time: the poll's seconds depend on the machine's load)
    claude.sleep(0.3)
    local after = claude.busy_poll_stats()
    assert.is_true(after.spins - during.spins <= 2)
    assert.is_true(after.seconds >= during.seconds)
  end)

  it("never polls in a loop that only reads", function()
    claude.busy_poll(1000)
    local seq <close> = assert(process.spawn { "seq", args = { "1", "2000" } })
    local before = claude.busy_poll_stats()
    for i = 1, 2000 do assert.equal(tostring(i), seq:read_line(30)) end
    local after = claude.busy_poll_stats()
    assert.equal(before.spins, after.spins)
  end)

  it("is off at 0", function()
    claude.busy_poll(0)
    local before = claude.busy_poll_stats()
    ping_pong(100)
    assert.same(before, claude.busy_poll_stats())
  end)

  it("never polls in a turn that must not sleep (claude.step(0) from an application's loop)",
    function()
      local code, out, err = harness.sh(harness.lua_preload
        .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
        .. harness.quote(harness.build .. "/?.so;;") .. " lua5.4 -e " .. harness.quote([[
          local claude = require "claude"
          claude.busy_poll(1000)
          local cat = assert(require("claude.process").spawn { "cat" })
          local got, spins = 0, claude.busy_poll_stats().spins
          for i = 1, 200 do
            cat:write(i .. "\n")
            -- an application's loop: steps that do not wait, until the answer is in
            local t = claude.spawn(function() return cat:read_line(5) end)
            while t.status ~= "done" do claude.step(0) end
            if t:wait() == tostring(i) then got = got + 1 end
          end
          print(got, claude.busy_poll_stats().spins - spins)
          cat:close()]]))
      assert.equal(0, code, err)
      assert.equal("200\t0\n", out)
    end)
end)
