-- `claudelua -i`: the REPL as `lua -i` has it, with the loop running and top-level waits.
local harness = require "support.harness"

local claude = require "claude"

local host, q = harness.claudelua, harness.quote

-- stdout and stderr of `claudelua ARGS` with `input` on stdin (a pipe)
local function pipe(args, input)
  local path = harness.tempfile(input)
  local code, out, err = harness.sh("timeout 20 " .. host .. " " .. args .. " < " .. path)
  os.remove(path)
  return code, out, err
end

-- what a terminal shows when `lines` are typed at the prompts of `claudelua ARGS`; the
-- history goes to `state` (XDG_STATE_HOME; default: a directory of its own, removed)
local function tty(args, lines, state)
  local path = harness.tempfile(table.concat(lines, "\n") .. "\n")
  local dir = state or harness.tempdir()
  local code, out = harness.sh("XDG_STATE_HOME=" .. q(dir)
    .. " python3 spec/support/pty_run.py 30 '> ' " .. host .. " " .. args .. " < " .. path)
  os.remove(path)
  if not state then os.execute("rm -rf " .. q(dir)) end
  return code, out
end

local function has(out, text)
  assert(out:find(text, 1, true), "expected " .. string.format("%q", text) .. " in:\n" .. out)
end

describe("claude.repl.complete", function()
  local complete = require("claude.repl").complete
  it("completes globals and keywords, fields, methods and strings' methods", function()
    local env = { print = print, pairs = pairs, t = { alpha = 1, beta = { gamma = 2 } },
      s = "text", obj = setmetatable({}, { __index = { method = function() end } }) }
    assert.same({ "pairs", "print" }, complete("p", env))
    assert.same({ "return", "repeat" }, (function()
      local r = complete("re", env)
      table.sort(r, function(a, b) return a > b end)
      return r
    end)())
    assert.same({ "t.alpha" }, complete("t.al", env))
    assert.same({ "t.beta.gamma" }, complete("t.beta.", env))
    assert.same({ "obj:method" }, complete("obj:me", env))
    assert.same({ "s:upper" }, complete("s:upp", env))
    assert.same({}, complete("t.nothing.x", env))
    assert.same({}, complete("1 +", env))
  end)

  it("lists the claude module's fields loaded on first use, calling no other __index", function()
    local found = complete("claude.mc", { claude = claude })
    assert.same({ "claude.mcp" }, found)
    local called = false
    local env = { o = setmetatable({}, { __index = function() called = true end }) }
    assert.same({}, complete("o.x.", env))
    assert.is_false(called)
  end)
end)

describe("claudelua -i", function()
  before_each(harness.before)
  after_each(harness.after)

  it("runs piped lines: echo 'print(1+1)' | claudelua -i prints 2", function()
    local code, out = pipe("-i", "print(1+1)\n")
    assert.equal(0, code)
    assert.matches("^claudelua [^\n]*\n2\n$", out)
  end)

  it("prints expressions' values, takes =expr, and continues incomplete chunks", function()
    local code, out = pipe("-i", table.concat({
      "1 + 1", "=2 * 3", "'a', nil, true", "function f(a)", "  return a * 2", "end", "f(21)",
      "x = 5", "x", "local y = 1", "y",
    }, "\n") .. "\n")
    assert.equal(0, code)
    assert.equal("2\n6\na\tnil\ttrue\n42\n5\nnil\n", out:gsub("^claudelua[^\n]*\n", ""))
  end)

  it("reports an error and goes on", function()
    local code, out, err = pipe("-i", "error('boom')\nprint('still here')\nfoo bar\nprint('yes')\n")
    assert.equal(0, code)
    has(out, "still here\nyes\n")
    has(err, "stdin:1: boom")
    has(err, "stdin:1: syntax error near 'bar'")
    assert.is_nil(err:find("repl.lua", 1, true))
  end)

  it("lets a line wait, runs tasks between prompts, and has the module as `claude`", function()
    local code, out = pipe("-i", table.concat({
      "claude.sleep(0.05) print('slept')",
      "t = claude.spawn(function() claude.sleep(0.05) return 7 end)",
      "claude.sleep(0.2)",
      "t.status",
      "t:wait()",
    }, "\n") .. "\n")
    assert.equal(0, code)
    assert.equal("slept\ndone\n7\n", out:gsub("^claudelua[^\n]*\n", ""))
  end)

  it("runs the script first, then the prompt (as lua -i)", function()
    local script = harness.tempfile("greeting = 'hi from the script'\n", ".lua")
    local code, out = pipe("-i " .. q(script), "print(greeting)\n")
    os.remove(script)
    assert.equal(0, code)
    has(out, "hi from the script\n")
  end)

  describe("on a terminal", function()
    it("shows prompts, stops a spinning line and a wait with Ctrl-C, ends at Ctrl-D",
      function()
        local code, out = tty("-i", {
          "x = 20", "=x + 1", "while true do end", "<C-c>", "claude.sleep(30)", "<C-c>",
          "print('after')", "half a line", "<C-c>", "print('again')", "<C-d>",
        })
        assert.equal(0, code, out)
        has(out, "> =x + 1\n21\n")
        has(out, "> while true do end\n^Cinterrupted\n> claude.sleep(30)\n^Cinterrupted\n")
        has(out, "after\n")
        has(out, "again\n")
      end)

    it("Tab completes Lua names: globals, fields, methods, the claude module's", function()
      local code, out = tty("-i", {
        "=claude.mc<Tab> == claude.mcp", "=tostr<Tab>(5)", "s = 'x'", "=s:up<Tab>()",
        "=claude.mcp.conn<Tab> == claude.mcp.connect", "<C-d>",
      })
      assert.equal(0, code, out)
      has(out, "> =claude.mcp == claude.mcp\ntrue\n")
      has(out, "> =tostring(5)\n5\n")
      has(out, "> =s:upper()\nX\n")
      has(out, "> =claude.mcp.connect == claude.mcp.connect\ntrue\n")
    end)

    it("prints a task's output above the prompt, then the prompt again with what was typed",
      function()
        local code, out = tty("-i", {
          "claude.spawn(function() claude.sleep(0.5) print('tick') io.write('tock') end)",
          "=20 +<no-enter>", "<sleep 1.5>", " 22", "<C-d>",
        })
        assert.equal(0, code, out)
        -- the line typed so far is cleared (TERM=dumb: with blanks), the output printed from
        -- the start of the line (a newline added to what ends none), and the prompt drawn
        -- again with the line, each time
        assert.matches("\n> =20 %+\r *\rtick\n> =20 %+\r *\rtock\n> =20 %+ 22\n42\n", out)
      end)

    it("keeps the history across sessions, in $XDG_STATE_HOME/claudelua/history", function()
      local state = harness.tempdir()
      local code, out = tty("-i", { "x = 1", "=x + 1", "<C-d>" }, state)
      assert.equal(0, code, out)
      local f = assert(io.open(state .. "/claudelua/history", "rb"))
      assert.equal("x = 1\n=x + 1\n", f:read("a"))
      f:close()
      assert.equal(tonumber("600", 8), claude.core.stat(state .. "/claudelua/history").mode)
      -- the next session recalls it: Up, Up, Enter runs `x = 1` again (Up: ESC [ A)
      code, out = tty("-i", { "\27[A\27[A", "=x", "<C-d>" }, state)
      os.execute("rm -rf " .. q(state))
      assert.equal(0, code, out)
      has(out, "> =x\n1\n")
    end)

    it("is what claudelua with no script starts", function()
      local code, out = tty("", { "print(6 * 7)", "<C-d>" })
      assert.equal(0, code, out)
      assert.matches("^claudelua [^\n]*\n> print%(6 %* 7%)\n42\n", out)
    end)
  end)
end)
