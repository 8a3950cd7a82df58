-- `claudelua -i`: the REPL as `lua -i` has it, with the loop running and top-level waits.
local harness = require "support.harness"

local host, q = harness.claudelua, harness.quote

-- stdout and stderr of `claudelua ARGS` with `input` on stdin (a pipe)
local function pipe(args, input)
  local path = harness.tempfile(input)
  local code, out, err = harness.sh("timeout 20 " .. host .. " " .. args .. " < " .. path)
  os.remove(path)
  return code, out, err
end

-- what a terminal shows when `lines` are typed at the prompts of `claudelua ARGS`
local function tty(args, lines)
  local path = harness.tempfile(table.concat(lines, "\n") .. "\n")
  local code, out = harness.sh("python3 spec/support/pty_run.py 30 '> ' " .. host .. " " .. args
    .. " < " .. path)
  os.remove(path)
  return code, out
end

local function has(out, text)
  assert(out:find(text, 1, true), "expected " .. string.format("%q", text) .. " in:\n" .. out)
end

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

    it("is what claudelua with no script starts", function()
      local code, out = tty("", { "print(6 * 7)", "<C-d>" })
      assert.equal(0, code, out)
      assert.matches("^claudelua [^\n]*\n> print%(6 %* 7%)\n42\n", out)
    end)
  end)
end)
