local core = require "claude.core"
local harness = require "support.harness"

local MiB = 1024 * 1024

local function spin() while true do end end

-- Resumes a new coroutine running f under a budget made from `limits`.
local function run(limits, f, ...)
  local b = core.budget(limits)
  local co = coroutine.create(f)
  return b, co, b:resume(co, ...)
end

describe("core.budget", function()
  before_each(harness.before)
  after_each(function()
    assert.equal(0, (core.budget_current()))
    harness.after()
  end)

  -- { description, limits, body, reason }: each body would never end on its own
  local runaways = {
    { "a spinning loop, by run", { run = 0.05 }, spin, "run" },
    { "a spinning loop, by instructions", { instructions = 100000 }, spin, "instructions" },
    { "a spin wrapped in pcall, again and again", { run = 0.05 }, function()
      while true do pcall(spin) end
    end, "run" },
    { "a loop that catches every error", { instructions = 50000 }, function()
      while true do pcall(error, "again") end
    end, "instructions" },
    { "a spin inside table.sort's comparator (no yield possible there)", { run = 0.05 },
      function()
        local t = { 5, 4, 3, 2, 1 }
        table.sort(t, function() while true do end end)
      end, "run" },
    { "a comparator spin retried under pcall", { instructions = 100000 }, function()
      local t = { 5, 4, 3, 2, 1 }
      while true do pcall(table.sort, t, function() while true do end end) end
    end, "instructions" },
    { "a spin inside a coroutine the call created", { run = 0.05 }, function()
      coroutine.wrap(spin)()
    end, "run" },
    { "a call that resumes its own spinning coroutine forever", { instructions = 100000 },
      function()
        local inner = coroutine.create(spin)
        while true do coroutine.resume(inner) end
      end, "instructions" },
    { "a spin inside a metamethod", { run = 0.05 }, function()
      local t = setmetatable({}, { __index = function() while true do end end })
      return t.x
    end, "run" },
    { "a spin inside string.gsub's callback", { run = 0.05 }, function()
      return (string.gsub("abc", "%w", function() while true do end end))
    end, "run" },
    { "an allocation loop, by memory", { memory = 16 * MiB }, function()
      local t = {}
      while true do t[#t + 1] = string.rep("x", 100000) .. #t end
    end, "memory" },
    { "an allocation loop that catches the memory error", { memory = 16 * MiB }, function()
      local t = {}
      while true do pcall(function() t[#t + 1] = string.rep("x", 100000) .. #t end) end
    end, "memory" },
  }
  for _, row in ipairs(runaways) do
    it("stops " .. row[1], function()
      local b, co, ok, message, reason = run(row[2], row[3])
      assert.is_false(ok)
      assert.equal(row[4], reason)
      assert.matches("^budget exceeded: " .. row[4], message)
      assert.equal(row[4], b:stopped())
      assert.equal("dead", coroutine.status(co))
      -- a stopped budget never runs the call again
      assert.same({ false, message, reason }, { b:resume(co) })
    end)
  end

  it("counts instructions to within one hook period", function()
    local b = run({ instructions = 100000 }, spin)
    local used = b:usage().instructions
    assert.is_true(used > 100000 and used <= 102000, used)
  end)

  it("reports a memory budget the call went over even when it caught the error and returned",
    function()
      local _, co, ok, message, reason = run({ memory = 8 * MiB }, function()
        local fine = pcall(string.rep, "x", 64 * MiB)
        return fine and "allocated" or "caught"
      end)
      assert.same({ false, "memory" }, { ok, reason })
      assert.equal("budget exceeded: memory (more than 8388608 bytes)", message)
      assert.equal("dead", coroutine.status(co))
    end)

  it("leaves the state healthy after a memory stop", function()
    run({ memory = 16 * MiB }, function()
      local t = {}
      while true do t[#t + 1] = string.rep("y", 100000) .. #t end
    end)
    collectgarbage()
    local big = string.rep("z", 32 * MiB)
    assert.equal(32 * MiB, #big)
    local t = {}
    for i = 1, 100000 do t[i] = { i } end
    assert.equal(100000, #t)
    assert.is_true(select(2, core.budget_current()))
  end)

  it("counts net memory: a call that allocates and drops a lot stays within its budget",
    function()
      local b, _, ok, value = run({ memory = 32 * MiB }, function()
        local n = 0
        for i = 1, 200 do
          n = n + #string.rep("x", MiB)
          -- collect now and then: how much garbage waits for the collector depends on
          -- the heap the state already has (the host runs every spec in one state)
          if i % 8 == 0 then collectgarbage() end
        end
        return n
      end)
      assert.same({ true, 200 * MiB }, { ok, value })
      assert.is_nil(b:stopped())
    end)

  it("does not touch a coroutine that yields and resumes many times", function()
    local b = core.budget { run = 1, instructions = 10000000, memory = 256 * MiB }
    local co = coroutine.create(function(x)
      for _ = 1, 10000 do x = coroutine.yield(x + 1) end
      return "done", x
    end)
    local ok, v = b:resume(co, 0)
    for _ = 1, 10000 do
      assert.is_true(ok)
      ok, v = b:resume(co, v)
    end
    assert.same({ true, "done" }, { ok, v })
    assert.is_nil(b:stopped())
    assert.equal(10001, b:usage().resumes)
  end)

  it("passes values both ways and errors through, like coroutine.resume", function()
    local b = core.budget { run = 1 }
    local co = coroutine.create(function(a, b2)
      local c = coroutine.yield(a + b2, "x")
      error({ code = c })
    end)
    assert.same({ true, 3, "x" }, { b:resume(co, 1, 2) })
    local ok, err = b:resume(co, 7)
    assert.is_false(ok)
    assert.same({ code = 7 }, err)
    assert.same({ false, "cannot resume dead coroutine" }, { b:resume(co) })
    assert.is_nil(b:stopped())
  end)

  it("stops a waiting call (a wall-time timer's way) and closes it", function()
    if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no to-be-closed variables") end
    local closed = false
    local b = core.budget { run = false }
    local co = coroutine.create(function()
      local _ <close> = setmetatable({}, { __close = function() closed = true end })
      coroutine.yield("waiting")
      return "never"
    end)
    assert.same({ true, "waiting" }, { b:resume(co) })
    assert.equal(b, b:stop())
    assert.equal("seconds", b:stopped())
    assert.same({ false, "budget exceeded: seconds", "seconds" }, { b:resume(co) })
    assert.is_true(closed)
    assert.equal("dead", coroutine.status(co))
  end)

  it("closes a stopped call's to-be-closed variables, under a grace budget", function()
    if _VERSION == "Lua 5.3" then return pending("Lua 5.3 has no to-be-closed variables") end
    local closed, spun = false, false
    local b, co, ok, _, reason = run({ run = 0.05 }, function()
      local _ <close> = setmetatable({}, { __close = function()
        spun = true
        while true do end
      end })
      local _ <close> = setmetatable({}, { __close = function() closed = true end })
      spin()
    end)
    assert.same({ false, "run" }, { ok, reason })
    assert.is_true(closed)
    assert.is_true(spun) -- and cut short
    assert.equal("dead", coroutine.status(co))
    assert.equal("run", b:stopped())
  end)

  it("nests: an inner budget stops its own call, the outer call goes on", function()
    local b, _, ok, inner_reason, after = run({ run = 1 }, function()
      local inner = core.budget { instructions = 10000 }
      local _, _, why = inner:resume(coroutine.create(spin))
      return why, "went on"
    end)
    assert.same({ true, "instructions", "went on" }, { ok, inner_reason, after })
    assert.is_nil(b:stopped())
  end)

  it("nests: the outer budget stops an inner call and then its own", function()
    local inner = core.budget {}
    local _, _, ok, _, reason = run({ instructions = 100000 }, function()
      inner:resume(coroutine.create(spin))
      spin()
    end)
    assert.same({ false, "instructions" }, { ok, reason })
    assert.equal("outer", inner:stopped())
  end)

  it("lets a coroutine made inside a call run freely after it", function()
    local _, _, ok, later = run({ instructions = 100000 }, function()
      return coroutine.create(function()
        local n = 0
        for i = 1, 1000000 do n = n + i end
        return n
      end)
    end)
    assert.is_true(ok)
    assert.same({ true, 500000500000 }, { coroutine.resume(later) })
    assert.is_nil(debug.gethook(later))
  end)

  it("refuses a coroutine that is not suspended", function()
    local b = core.budget { run = 1 }
    local co
    co = coroutine.create(function() return b:resume(co) end)
    assert.same({ true, false, "cannot resume non-suspended coroutine" },
      { coroutine.resume(co) })
    assert.has_error(function() b:resume(function() end) end)
    assert.has_error(function() b:resume() end)
  end)

  it("refuses resuming a second coroutine while the budget runs one", function()
    local b = core.budget { run = 1 }
    local ok, err = b:resume(coroutine.create(function()
      return b:resume(coroutine.create(function() end))
    end))
    assert.is_false(ok)
    assert.matches("already running a coroutine", err)
  end)

  -- { limits, message }
  local expected = "a positive number or false expected"
  local bad = {
    { { run = -1 }, "bad budget field 'run' (" .. expected .. ", got a number not above 0)" },
    { { instructions = "many" }, "bad budget field 'instructions' (" .. expected
      .. ", got string)" },
    { { memory = true }, "bad budget field 'memory' (" .. expected .. ", got boolean)" },
  }
  for _, row in ipairs(bad) do
    it("refuses " .. next(row[1]) .. " = " .. tostring(select(2, next(row[1]))), function()
      local ok, err = pcall(core.budget, row[1])
      assert.is_false(ok)
      assert.matches(row[2], err, 1, true)
    end)
  end

  it("takes limits too large to reach", function()
    local b = core.budget { run = 1e300, instructions = math.huge, memory = 2 ^ 70 }
    assert.same({ true, "fine" }, { b:resume(coroutine.create(function() return "fine" end)) })
  end)

  it("sets no hook on a call that stays within run and memory (the watchdog waits)",
    function()
      local hooked
      local b = core.budget { run = 1, memory = 64 * MiB }
      local co = coroutine.create(function()
        hooked = debug.gethook(coroutine.running())
        local n = 0
        for i = 1, 100000 do n = n + i end
        return n
      end)
      assert.same({ true, 5000050000 }, { b:resume(co) })
      assert.is_nil(hooked)
      assert.equal(0, b:usage().instructions) -- nothing counted: no count hook ran
    end)

  it("stops a spin in a coroutine resumed with core.resume inside the call", function()
    local inner = coroutine.create(spin) -- made before the call: no hook of its own
    local b, _, ok, _, reason = run({ run = 0.05 }, function()
      return core.resume(inner)
    end)
    assert.same({ false, "run" }, { ok, reason })
    assert.equal("run", b:stopped())
  end)

  it("gives the count hook to a call that makes a coroutine (which inherits it)", function()
    local inner_hooked
    local b = core.budget { run = 1 }
    assert.same({ true, "made" }, { b:resume(coroutine.create(function()
      coroutine.wrap(function() inner_hooked = debug.gethook() ~= nil end)()
      return "made"
    end)) })
    assert.is_true(inner_hooked)
  end)

  it("starts over with b:start and b:reset", function()
    local b = core.budget { instructions = 100000 }
    local _, _, reason = b:resume(coroutine.create(spin))
    assert.equal("instructions", reason)
    assert.same({ true, "again" }, { b:start(coroutine.create(function() return "again" end)) })
    assert.is_nil(b:stopped())
    assert.equal(1, b:usage().resumes)
    b:stop("why")
    assert.equal("why", b:stopped())
    assert.equal(b, b:reset())
    assert.is_nil(b:stopped())
    assert.same({ instructions = 0, memory = 0, resumes = 0 }, b:usage())
    local ok, err = pcall(b.start, {}, coroutine.create(spin))
    assert.is_false(ok)
    assert.matches("claude.Budget expected", err)
  end)

  it("refuses b:reset from inside its own call", function()
    local b = core.budget { run = 1 }
    local ok, err = b:resume(coroutine.create(function() return b:reset() end))
    assert.is_false(ok)
    assert.matches("cannot reset while it runs a coroutine", err)
  end)

  it("takes false and nil as no limit", function()
    local b = core.budget { run = false, instructions = nil, memory = false }
    local co = coroutine.create(function()
      local n = 0
      for i = 1, 3000000 do n = n + i end
      return n
    end)
    assert.same({ true, 4500001500000 }, { b:resume(co) })
    assert.matches("^claude.Budget %(run 0", tostring(b))
  end)
end)

describe("core.resume", function()
  before_each(harness.before)
  after_each(harness.after)

  it("works like coroutine.resume", function()
    local co = coroutine.create(function(a, b)
      local c = coroutine.yield(a + b, "x")
      error({ code = c })
    end)
    assert.same({ true, 3, "x" }, { core.resume(co, 1, 2) })
    local ok, err = core.resume(co, 7)
    assert.is_false(ok)
    assert.same({ code = 7 }, err)
    assert.same({ false, "cannot resume dead coroutine" }, { core.resume(co) })
    local self
    self = coroutine.create(function() return core.resume(self) end)
    assert.same({ true, false, "cannot resume non-suspended coroutine" },
      { core.resume(self) })
    assert.has_error(function() core.resume(function() end) end)
  end)
end)

describe("budgets in both hosts", function()
  local script = [[
    local core = require "claude.core"
    local b = core.budget { run = 0.05, memory = 16 * 1024 * 1024 }
    local ok, msg, why = b:resume(coroutine.create(function()
      while true do pcall(function() while true do end end) end
    end))
    local m = core.budget { memory = 8 * 1024 * 1024 }
    local _, _, mwhy = m:resume(coroutine.create(function()
      local t = {}
      while true do t[#t + 1] = string.rep("x", 65536) .. #t end
    end))
    collectgarbage()
    print(ok, why, mwhy, #string.rep("y", 1 << 24), (core.budget_current()))
  ]]
  local expected = "false\trun\tmemory\t16777216\t0\n"

  it("works in the claudelua host", function()
    local code, out, err = harness.sh(harness.claudelua .. " -e " .. harness.quote(script))
    assert.equal("", err)
    assert.equal(0, code)
    assert.equal(expected, out)
  end)

  it("works in stock lua5.4 with require 'claude'", function()
    local code, out, err = harness.sh(harness.lua_preload
      .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
      .. harness.quote(harness.build .. "/?.so;;") .. " lua5.4 -e " .. harness.quote(script))
    assert.equal("", err)
    assert.equal(0, code)
    assert.equal(expected, out)
  end)
end)

-- Lua turns hooks off in two places: while a `__gc` metamethod runs, and while a hook runs
-- (an error raised by the hook calls the xpcall message handler there). What a budget does
-- about each, in a child process: before the fix each of these spun forever.
describe("budgets where Lua turns hooks off", function()
  local function host(script, timeout)
    return harness.sh("timeout -s KILL " .. (timeout or 20) .. " " .. harness.claudelua
      .. " -e " .. harness.quote(script))
  end

  local PRELUDE = [[
    local core = require "claude.core"
    local function report(ok, msg, why)
      print(tostring(ok), tostring(why), tostring(msg):match("^budget exceeded: %a+"))
    end
  ]]

  -- { description, body (a statement list), expected line }
  local rows = {
    { "an xpcall message handler that spins", [[
      return xpcall(function() error("x") end, function() while true do end end)
    ]] },
    { "a spin where it cannot yield, under an xpcall whose handler spins", [[
      return xpcall(function()
        table.sort({ 3, 2, 1 }, function() while true do end end)
      end, function() while true do end end)
    ]] },
    { "a __gc that spins and allocates, run by the call's collectgarbage()", [[
      setmetatable({}, { __gc = function()
        local t = {}
        while true do t[#t % 64 + 1] = { "garbage" } end
      end })
      collectgarbage()
      return "survived"
    ]] },
    { "a __gc that spins and allocates, run while the call allocates", [[
      setmetatable({}, { __gc = function()
        local s = ""
        while true do s = ("x"):rep(#s % 1000 + 1) end
      end })
      local keep = {}
      while true do keep[#keep % 1000 + 1] = {} end
    ]] },
    -- no hook of its own: the watchdog finds the hook it set never ran
    { "a spin that allocates in a coroutine made before the call", [[
      return coroutine.resume(INNER)
    ]] },
    { "a spin that takes the hook off again and again", [[
      while true do debug.sethook() end
    ]] },
    -- what the emergency collection of a refused allocation frees must not let it through
    { "a __gc that spins and allocates now and then, under a memory budget too", [[
      setmetatable({}, { __gc = function()
        local t, i = {}, 0
        while true do
          i = i + 1
          if i % 100000 == 0 then t[#t % 64 + 1] = { "garbage" } end
        end
      end })
      collectgarbage()
      return "survived"
    ]], "{ run = 0.05, memory = 256 * 1024 * 1024 }" },
  }
  for _, row in ipairs(rows) do
    it("stops " .. row[1], function()
      local code, out, err = host(PRELUDE .. [[
        local INNER = coroutine.create(function()
          local t = {}
          while true do t[#t % 64 + 1] = {} end
        end)
        local b = core.budget ]] .. (row[3] or "{ run = 0.05 }") .. [[

        report(b:resume(coroutine.create(function() ]] .. row[2] .. [[ end)))
        -- the state goes on: another call runs, and nothing is left current (a budget
        -- a loaded machine cannot exceed by descheduling six instructions)
        local ok, v = core.budget({ run = 30 }):resume(coroutine.create(function()
          return 6 * 7
        end))
        print(ok, v, (core.budget_current()))
      ]])
      assert.equal("", err)
      assert.equal(0, code)
      assert.equal("false\trun\tbudget exceeded: run\ntrue\t42\t0\n", out)
    end)
  end

  it("lets a message handler that returns see the error of a call that is stopped", function()
    local code, out = host(PRELUDE .. [[
      local seen
      local b = core.budget { run = 0.05 }
      report(b:resume(coroutine.create(function()
        return xpcall(function() while true do end end, function(e) seen = e return e end)
      end)))
      print(seen) -- a yield ended the call: the handler never ran
      local ok = pcall(function() error("plain") end)
      print(ok)
    ]])
    assert.equal(0, code)
    assert.equal("false\trun\tbudget exceeded: run\nnil\nfalse\n", out)
  end)

  it("ends the process when a __gc spins where nothing can stop it (core.stuck_exit)",
    function()
      local code, out, err = host(PRELUDE .. [[
        core.stuck_exit(0.3, "spec")
        local b = core.budget { run = 0.05 }
        print("started")
        io.stdout:flush()
        report(b:resume(coroutine.create(function()
          setmetatable({}, { __gc = function() while true do end end })
          collectgarbage()
        end)))
      ]])
      assert.equal(70, code)
      assert.equal("started\n", out)
      assert.matches("^spec: a budgeted call held the loop [%d.]+ s past its run budget", err)
    end)

  it("ends the process when a coroutine made before the call spins without allocating",
    function()
      local code, out, err = host(PRELUDE .. [[
        core.stuck_exit(0.3, "spec")
        local inner = coroutine.create(function() while true do end end)
        report(core.budget({ run = 0.05 }):resume(coroutine.create(function()
          return coroutine.resume(inner)
        end)))
      ]])
      assert.equal(70, code)
      assert.equal("", out)
      assert.matches("^spec: a budgeted call held the loop", err)
    end)

  it("leaves the process alone while the call is blocked in a C function, not busy",
    function()
      local code, out = host(PRELUDE .. [[
        core.stuck_exit(0.2, "spec")
        local b = core.budget { run = 0.05 }
        report(b:resume(coroutine.create(function()
          os.execute("sleep 1") -- blocked in a C function: the CPU is idle
          return "slept"
        end)))
      ]])
      assert.equal(0, code)
      assert.equal("false\trun\tbudget exceeded: run\n", out)
    end)

  it("rejects a bad argument to core.stuck_exit", function()
    assert.has_error(function() core.stuck_exit(-1) end)
    assert.has_error(function() core.stuck_exit("x") end)
    core.stuck_exit(false)
  end)
end)
