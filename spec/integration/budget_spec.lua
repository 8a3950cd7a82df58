-- Tool budgets end to end against the fake CLI: a tool that spins, one that allocates
-- without end, one that runs too many instructions and one that sleeps past its time are
-- each answered with an isError result naming the budget, while other calls go on; the
-- levels (tool, server, session) and `false`.
-- Run: busted spec/integration/budget_spec.lua
local claude = require "claude"
local core = require "claude.core"
local testing = require "claude.testing"
local harness = require "support.harness"

local T = 30 -- seconds; only a guard against hangs

local function converse(script, options)
  local opts, fake = testing.fake_cli(script)
  local s <close> = assert(claude.connect(testing.merge(opts, options)))
  assert(s:send("go"))
  local msgs = harness.collect(s:receive(T))
  s:close()
  return msgs, fake:read_log()
end

local function tools(server_opts)
  return claude.server("b", {
    claude.tool("spin", "Spins", function() while true do end end, { budget = { run = 0.2 } }),
    claude.tool("alloc", "Allocates", function()
      local t = {}
      while true do t[#t + 1] = string.rep("x", 1000) .. #t end
    end, { budget = { memory = 8 * 1024 * 1024 } }),
    claude.tool("count", "Counts", function()
      local n = 0
      for i = 1, 1e12 do n = n + i end
      return n
    end, { budget = { instructions = 1e6 } }),
    claude.tool("nap", "Sleeps", function()
      claude.sleep(60)
      return "woke"
    end, { budget = { seconds = 0.3 } }),
    claude.tool("add", "Adds", { a = "number", b = "number" },
      function(a) return a.a + a.b end),
  }, server_opts)
end

-- A script that calls `names` in order on server b and reports the texts.
local CALLS = [[
  cli:expect_initialize()
  cli:expect_user()
  cli:system_init()
  cli:mcp_connect("b")
  local out = {}
  for _, name in ipairs({ %s }) do
    local args = name == "add" and { a = 1, b = 2 } or {}
    local r = assert(cli:call_tool("b", name, args))
    out[#out + 1] = name .. "=" .. (r.isError and "error:" or "") .. r.content[1].text
  end
  cli:reply(table.concat(out, "\n"))
]]

describe("tool budgets against the fake CLI", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  it("stop a spinning, an allocating, a counting and a sleeping tool; others go on",
    function()
      local msgs = converse(string.format(CALLS,
        '"add", "spin", "add", "alloc", "add", "count", "add", "nap", "add"'),
        { mcp_servers = { b = tools() } })
      local lines = {}
      for l in msgs[#msgs].result:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal(9, #lines)
      for _, i in ipairs({ 1, 3, 5, 7, 9 }) do assert.equal("add=3", lines[i]) end
      assert.matches("^spin=error:Tool 'spin' was stopped: .*budget 'run' exceeded", lines[2])
      assert.matches("^alloc=error:Tool 'alloc' was stopped: .*budget 'memory' exceeded",
        lines[4])
      assert.matches("^count=error:Tool 'count' was stopped: .*budget 'instructions' exceeded",
        lines[6])
      assert.matches("^nap=error:Tool 'nap' was stopped: .*budget 'seconds' exceeded",
        lines[8])
      assert.equal(0, core.budget_current())
    end)

  it("while a tool sleeps toward its time budget, other calls are answered", function()
    local msgs = converse([[
      cli:expect_initialize()
      cli:expect_user()
      cli:system_init()
      cli:mcp_connect("b")
      local id = cli:send_request("mcp_message", { server_name = "b", message = {
        jsonrpc = "2.0", id = 50, method = "tools/call",
        params = { name = "nap", arguments = {} } } })
      local r = assert(cli:call_tool("b", "add", { a = 2, b = 3 }))
      local body = assert(cli:await_response(id))
      cli:reply(r.content[1].text .. " then " .. body.mcp_response.result.content[1].text)
    ]], { mcp_servers = { b = tools() } })
    assert.matches("^5 then Tool 'nap' was stopped", msgs[#msgs].result)
  end)

  it("take each field from the tool, then the server, then the session; false is off",
    function()
      local server = claude.server("b", {
        claude.tool("spin", "Spins", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end),
        claude.tool("free", "Free", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end, { budget = { instructions = false } }),
      }, { budget = { instructions = 1e6 } })
      local msgs = converse(string.format(CALLS, '"spin", "free"'),
        { mcp_servers = { b = server }, tool_budget = { instructions = 1e9 } })
      local text = msgs[#msgs].result
      assert.matches("spin=error:Tool 'spin' was stopped: .*'instructions'", text)
      assert.matches("free=done", text, 1, true)
      -- the session's level alone
      msgs = converse(string.format(CALLS, '"spin"'), { mcp_servers = { b = claude.server("b", {
        claude.tool("spin", "Spins", function()
          local n = 0
          for i = 1, 3e6 do n = n + i end
          return "done"
        end) }) }, tool_budget = { instructions = 1e6 } })
      assert.matches("'instructions'", msgs[#msgs].result)
    end)

  it("refuses a malformed budget at the caller's line", function()
    for _, b in ipairs({ { run = 0 }, { run = "1" }, { wall = 1 }, 5 }) do
      local ok, err = pcall(function()
        local t = claude.tool("t", "d", function() end, { budget = b })
        return t
      end)
      assert.is_false(ok)
      assert.matches("budget_spec%.lua:%d+: bad budget for tool 't'", err)
    end
    local ok, err = pcall(function()
      local s = claude.server("s", {}, { budget = { memory = -1 } })
      return s
    end)
    assert.is_false(ok)
    assert.matches("bad budget for server 's'", err)
  end)
end)

describe("a spinning tool in the claudelua host", function()
  it("two SIGINTs still stop the host (a run budget frees the loop)", function()
    local process = require "claude.process"
    local path = harness.tempfile([[
      local claude = require "claude"
      local testing = require "claude.testing"
      local opts = testing.fake_cli([=[
        cli:expect_initialize()
        cli:expect_user()
        cli:system_init()
        cli:mcp_connect("b")
        cli:call_tool("b", "spin", {})
        cli:sleep(60)
      ]=])
      opts.mcp_servers = { b = claude.server("b", {
        claude.tool("spin", "Spins", function()
          print("spinning")
          io.stdout:flush()
          while true do end
        end) }) }
      opts.tool_budget = { run = 1 }
      for _ in claude.query("go", opts) do end
    ]], ".lua")
    local p <close> = assert(process.spawn { harness.claudelua, args = { path } })
    assert.equal("spinning", p:read_line(T))
    assert.is_true(p:signal("int"))
    assert.is_true(p:signal("int"))
    assert.same({ 130, 0 }, { p:wait(T) })
    os.remove(path)
  end)
end)
