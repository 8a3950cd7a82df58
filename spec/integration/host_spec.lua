local process = require "claude.process"
local harness = require "support.harness"

local host, q = harness.claudelua, harness.quote

local function run(args, stdin)
  if stdin then
    local path = harness.tempfile(stdin)
    args = args .. " < " .. path
  end
  return harness.sh(host .. " " .. args)
end

local function script(text)
  return harness.tempfile(text, ".lua")
end

describe("the claudelua host", function()
  before_each(harness.before)
  after_each(harness.after)

  it("runs -e chunks", function()
    local code, out = run("-e 'print(1)'")
    assert.equal(0, code)
    assert.equal("1\n", out)
  end)

  it("exits 1 with a traceback on stderr when a chunk fails", function()
    local code, out, err = run("-e 'error(\"x\")'")
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("%(command line%):1: x", err)
    assert.matches("stack traceback:", err)
  end)

  it("keeps the files and lines of its own modules (their bytecode has its debug information)",
    function()
      local code, out = run([[-e 'local i = debug.getinfo(require("claude.errors").public, "S")
        print(i.source, i.linedefined > 0)']])
      assert.equal(0, code)
      assert.equal("=claude/errors.lua\ttrue\n", out)
    end)

  it("passes arguments as ... and in arg, with negative indices for options", function()
    local path = script([[
      local a, b = ...
      print(a, b, #arg, arg[0] == ]] .. string.format("%q", "SCRIPT") .. [[ or arg[0], arg[-1])
    ]])
    local code, out = run(path .. " one two")
    assert.equal(0, code)
    assert.equal("one\ttwo\t2\t" .. path .. "\t" .. host .. "\n", out)
    os.remove(path)
  end)

  it("reports a script error with its file and line and exits 1", function()
    local path = script("local x = nil\nlocal y = x.field\n")
    local code, _, err = run(path)
    assert.equal(1, code)
    assert.matches(path:gsub("%p", "%%%0") .. ":2: attempt to index a nil value", err)
    os.remove(path)
  end)

  it("reports a syntax error", function()
    local path = script("this is not lua")
    local code, _, err = run(path)
    assert.equal(1, code)
    assert.matches("syntax error", err)
    os.remove(path)
  end)

  it("reports a missing script", function()
    local code, _, err = run("/nonexistent/script.lua")
    assert.equal(1, code)
    assert.matches("cannot open /nonexistent/script.lua", err)
  end)

  it("lets the top level wait: the script runs in a task", function()
    local code, out = run("-e " .. q([[
      local claude = require "claude"
      local t = claude.spawn(function() claude.sleep(0.01) return "task" end)
      claude.sleep(0.01)
      print(t:wait(), claude.current() ~= nil)
    ]]))
    assert.equal(0, code)
    assert.equal("task\ttrue\n", out)
  end)

  it("requires a module whose main chunk waits, from the script and from a task", function()
    local dir = harness.tempdir()
    local f = assert(io.open(dir .. "/slow.lua", "w"))
    f:write('local claude = require "claude"\nclaude.sleep(0.01)\nreturn { loaded = "yes" }\n')
    f:close()
    local code, out, err = run("-e " .. q([[
      package.path = ]] .. string.format("%q", dir .. "/?.lua;") .. [[ .. package.path
      local claude = require "claude"
      local t = claude.spawn(function() return require("slow").loaded end)
      print(require("slow").loaded, t:wait(), package.loaded.slow == require "slow")
    ]]))
    os.remove(dir .. "/slow.lua")
    os.remove(dir)
    assert.equal("", err)
    assert.equal(0, code)
    assert.equal("yes\tyes\ttrue\n", out)
  end)

  it("says what to do when a wait is inside a function that C called", function()
    local code, _, err = run("-e " .. q([[
      local claude = require "claude"
      table.sort({ 3, 2, 1 }, function(a, b) claude.sleep(0) return a < b end)
    ]]))
    assert.equal(1, code)
    assert.matches("attempt to yield across a C%-call boundary %(a claude wait inside a "
      .. "function that C code called", err)
    assert.matches("claude.require", err, 1, true)
  end)

  it("waits for the tasks a script leaves running", function()
    local code, out = run("-e " .. q([[
      local claude = require "claude"
      claude.spawn(function() claude.sleep(0.05) print("late") end)
      print("main done")
    ]]))
    assert.equal(0, code)
    assert.equal("main done\nlate\n", out)
  end)

  it("requires a library with -l", function()
    local code, out = run("-l claude -e 'print(type(claude.spawn))'")
    assert.equal(0, code)
    assert.equal("function\n", out)
  end)

  it("prints its version with -v", function()
    local code, out = run("-v")
    assert.equal(0, code)
    assert.matches("^claudelua %d+%.%d+%.%d+ %(Lua 5%.4", out)
  end)

  it("runs stdin with -", function()
    local code, out = run("- a b", "local a, b = ...; print(a, b, arg[0])")
    assert.equal(0, code)
    assert.equal("a\tb\t-\n", out)
  end)

  it("stops handling options at --", function()
    local path = script("print(...)")
    local code, out = run("-- " .. path .. " -v")
    assert.equal(0, code)
    assert.equal("-v\n", out)
    os.remove(path)
  end)

  it("rejects an unknown option with usage", function()
    local code, _, err = run("-Z")
    assert.equal(1, code)
    assert.matches("unrecognized option '%-Z'", err)
    assert.matches("usage:", err)
  end)

  it("suggests the long option meant", function()
    local code, _, err = run("--dmeo x.lua")
    assert.equal(1, code)
    assert.matches("unrecognized option '%-%-dmeo' %(did you mean '%-%-demo'%?%)", err)
  end)

  it("stops cleanly on SIGINT: the script unwinds and the host exits 130", function()
    local path = script([[
      local claude = require "claude"
      local _ <close> = setmetatable({}, { __close = function() print("closed") end })
      print("ready")
      io.stdout:flush()
      claude.sleep(30)
    ]])
    local p <close> = assert(process.spawn { host, args = { path } })
    assert.equal("ready", p:read_line(10))
    assert.is_true(p:signal("int"))
    assert.equal("closed", p:read_line(10))
    assert.same({ 130, 0 }, { p:wait(10) })
    assert.matches("interrupted", p:stderr())
    os.remove(path)
  end)

  it("finds its Lua files without environment variables", function()
    local code, out = harness.sh("env -i " .. host .. " -e 'print(require(\"claude\")._VERSION)'")
    assert.equal(0, code)
    assert.matches("^claude %d", out)
  end)
end)

describe("require 'claude' from stock lua5.4", function()
  it("runs a task that sleeps", function()
    local code, out = harness.sh(harness.lua_preload
      .. "LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH=" .. q(harness.build .. "/?.so;;")
      .. " lua5.4 -e " .. q([[
        local claude = require "claude"
        local t = claude.spawn(function(x) claude.sleep(0.01) return x * 2 end, 21)
        print(t:wait(), claude.current())
      ]]))
    assert.equal(0, code)
    assert.equal("42\tnil\n", out)
  end)
end)
