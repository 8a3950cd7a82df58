local harness = require "support.harness"

-- examples/foreign_loop.lua under stock lua5.4 (the module from the build)
-- or under claudelua (luv from the system's cpath).
local function foreign_loop(args, host)
  local cmd
  if host then
    cmd = "LUA_CPATH='/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;/usr/lib/lua/5.4/?.so;;' "
      .. "timeout 60 " .. harness.quote(harness.claudelua)
  else
    cmd = harness.lua_preload .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
      .. harness.quote(harness.build .. "/?.so;;") .. " timeout 60 lua5.4"
  end
  return harness.sh(cmd .. " examples/foreign_loop.lua " .. (args or ""))
end

local EXPECTED = "task 1, task 2, task 3\nthe query answered: You said: hello from luv\n"
  .. "the application's timer ticked: true\n"

describe("embedding", function()
  it("runs two lua_States on an application's own libuv loop", function()
    local code, out, err = harness.sh(harness.build .. "/embed_host")
    assert.equal(0, code, err)
    assert.equal("second woke after 0.01 s\nfirst woke after 0.25 s\n"
      .. "state finished: first\nstate finished: second\nloop close: ok\n", out)
  end)

  -- pollfd must become readable whenever claude gains work outside step:
  -- tasks started after the driver, a query started from a luv callback
  it("lets luv drive claude through pollfd/timeout/step, work started after the driver",
    function()
      local code, out, err = foreign_loop()
      assert.equal(0, code, err)
      assert.equal(EXPECTED, out)
    end)

  it("lets luv drive claude, tasks started before the driver", function()
    local code, out, err = foreign_loop("--tasks-first")
    assert.equal(0, code, err)
    assert.equal(EXPECTED, out)
  end)

  it("lets luv drive claude inside the claudelua host", function()
    local code, out, err = foreign_loop(nil, true)
    assert.equal(0, code, err)
    assert.equal(EXPECTED, out)
  end)

  it("wakes pollfd for a process and a timer started from a luv callback alone", function()
    -- nothing else scheduled: only the wake can make the descriptor readable
    local script = harness.tempfile([[
      local uv, claude = require "luv", require "claude"
      local poll = uv.new_poll(claude.pollfd())
      local wakes = 0
      local timer = uv.new_timer()
      local function rearm()
        timer:stop()
        local t = claude.timeout()
        if t and t > 0 then timer:start(math.ceil(t * 1000), 0, function()
          claude.step(0); rearm()
        end) end
      end
      poll:start("r", function() wakes = wakes + 1; claude.step(0); rearm() end)
      local line, slept
      local kick = uv.new_timer()
      kick:start(1, 0, function()
        kick:close()
        claude.spawn(function()
          local p <close> = assert(claude.process.spawn { "sh", args = { "-c", "echo hi" } })
          line = p:read_line()
          p:wait()
          claude.sleep(0.01)
          slept = true
          poll:close(); timer:close()
        end)
      end)
      uv.run()
      print(line, slept, wakes > 0)
    ]], ".lua")
    local code, out, err = harness.sh(harness.lua_preload
      .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
      .. harness.quote(harness.build .. "/?.so;;") .. " timeout 30 lua5.4 " .. script)
    os.remove(script)
    assert.equal(0, code, err)
    assert.equal("hi\ttrue\ttrue\n", out)
  end)

  -- issue 34, item 17: the demo's scripted API listens unreferenced, so an application's own
  -- loop ends when its work does (CLAUDELUA_CLI: any executable will do, nothing runs it)
  local DEMO = [[
    local claude = require "claude"
    assert(require("claude.testing.demo").start { quiet = true })
    claude.spawn(function() claude.sleep(0.01); print("task done") end)
  ]]

  it("lets an application's uv_run return with the demo started (claude_set_loop)", function()
    local script = harness.tempfile(DEMO, ".lua")
    local code, out, err = harness.sh("CLAUDELUA_CLI=/bin/true timeout 30 "
      .. harness.quote(harness.build .. "/embed_host") .. " " .. script)
    os.remove(script)
    assert.equal(0, code, err)
    assert.equal("task done\nuv_run returned\nloop close: ok\n", out)
  end)

  it("lets claude.step say the loop is done with the demo started (stock lua5.4)", function()
    local script = harness.tempfile(DEMO .. [[
      local steps = 0
      while claude.step(0.05) and steps < 200 do steps = steps + 1 end
      print(steps < 200 and "ended" or "still alive")
    ]], ".lua")
    local code, out, err = harness.sh(harness.lua_preload
      .. "CLAUDELUA_CLI=/bin/true LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH="
      .. harness.quote(harness.build .. "/?.so;;") .. " timeout 60 lua5.4 " .. script)
    os.remove(script)
    assert.equal(0, code, err)
    assert.equal("task done\nended\n", out)
  end)
end)
