local claude = require "claude"
local process = require "claude.process"
local harness = require "support.harness"

local function sh(script, opts)
  opts = opts or {}
  opts[1] = "sh"
  opts.args = { "-c", script }
  return assert(process.spawn(opts))
end

describe("a process's escalation ladder", function()
  before_each(harness.before)
  after_each(harness.after)

  it("ends at EOF when the child exits on it: no signal is sent", function()
    local p <close> = sh("cat >/dev/null; echo eof; exit 7")
    assert.is_true(p:stop { eof_grace = 5 })
    assert.same({ 7, 0 }, { p:wait(1) })
    assert.equal("eof", p:read_line(1))
  end)

  it("sends SIGTERM after the EOF grace to a child that ignores EOF", function()
    local p <close> = sh("echo ready; exec sleep 30")
    assert.equal("ready", p:read_line(5))
    assert.is_true(p:stop { eof_grace = 0.05, term_grace = 5 })
    assert.same({ 0, 15 }, { p:wait(1) })
  end)

  it("sends SIGKILL after the TERM grace to a child that ignores SIGTERM", function()
    local p <close> = sh("trap '' TERM; echo ready; while :; do sleep 1; done")
    assert.equal("ready", p:read_line(5))
    assert.is_true(p:stop { eof_grace = 0, term_grace = 0.05 })
    assert.same({ 0, 9 }, { p:wait(1) })
  end)

  it("goes on by itself when started from inside a callback", function()
    local p
    p = sh("trap '' TERM; echo ready; while :; do sleep 1; done", {
      on_stdout = function(line)
        if line == "ready" then
          -- no wait is possible here: stop returns at once, the timers go on
          local stopped = p:stop { eof_grace = 0, term_grace = 0.05 }
          assert(stopped == false)
        end
      end,
    })
    assert.same({ 0, 9 }, { p:wait(5) })
    p:close()
  end)

  it("calls on_exit before wait returns, and hands stdout to on_stdout", function()
    local seen, exit = {}, nil
    local p <close> = sh("echo one; echo two; exit 4", {
      on_stdout = function(line, err) seen[#seen + 1] = line or (err and "error") or "eof" end,
      on_exit = function(code, signal) exit = { code, signal, #seen } end,
    })
    assert.same({ 4, 0 }, { p:wait(5) })
    assert.same({ 4, 0, 3 }, exit)
    assert.same({ "one", "two", "eof" }, seen)
  end)

  it("raises at the caller's line for bad ladder options and callbacks", function()
    local p <close> = sh("exit 0")
    local cases = {
      { function() p:stop { eof_grace = -1 } end,
        "bad field 'eof_grace' to 'stop' %(non%-negative number expected, got %-1%)" },
      { function() p:stop "soon" end,
        "bad argument #1 to 'stop' %(number or table expected, got string%)" },
      { function() p:close { term_grace = "x" } end,
        "bad field 'term_grace' to 'close' %(non%-negative number expected, got x%)" },
      { function() process.spawn { "true", on_exit = 1 } end,
        "bad field 'on_exit' to 'spawn' %(function expected, got number%)" },
    }
    for _, case in ipairs(cases) do
      local ok, err = pcall(case[1])
      assert.is_false(ok)
      assert.matches("process_ladder_spec.lua:%d+: " .. case[2], err)
    end
    p:wait(5)
  end)

  it("has a name of its own in messages", function()
    local p <close> = sh("exit 0")
    assert.matches("^claude.Process %(pid %d+, ", tostring(p))
    assert.equal("claude.Process", getmetatable(p).__name)
    p:wait(5)
    claude.sleep(0)
  end)
end)
