-- What a user meets when a turn is cut short, against the REAL claude CLI
-- (pinned in package.json) and the scripted Messages API: interrupts mid-tool,
-- stdin closing mid-turn and with a permission pending, SIGTERM and SIGINT
-- mid-turn, an API error that repeats. Each spec pins the CLI's own words.
-- Run: busted spec/e2e/fidelity_spec.lua
local claude = require "claude"
local errors = require "claude.errors"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local use = e2e.use

local function last(msgs, type_)
  for i = #msgs, 1, -1 do
    if msgs[i].type == type_ then return msgs[i] end
  end
end

local STOPPED_TOOL = "The user doesn't want to proceed with this tool use."

describe("turns cut short, on the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("an interrupt while an in-process tool runs cancels it and ends the turn", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__slow__wait", {}) } },
      { content = { text("next: {{last_user_text}}") } },
    } }
    local running, cancelled = false, false
    local srv = claude.server("slow", { claude.tool("wait", "Waits", {}, function(_, ctx)
      running = true
      local ok = pcall(claude.sleep, 20)
      cancelled = not ok or ctx.cancelled
      return "done"
    end) })
    local s <close> = assert(claude.connect(mock:options { mcp_servers = { slow = srv },
      allowed_tools = { "mcp__slow__wait" } }))
    assert(s:send("go"))
    local msgs = {}
    for msg in s:receive(T) do
      msgs[#msgs + 1] = msg
      if msg.type == "assistant" then
        claude.spawn(function()
          while not running do claude.sleep(0.05) end
          assert(s:interrupt(T))
        end)
      end
    end
    local result = last(msgs, "result")
    assert.equal("error_during_execution", result.subtype)
    assert.equal("aborted_tools", result.terminal_reason)
    assert.equal("[Request interrupted by user for tool use]", claude.text(last(msgs, "user")))
    assert.is_true(cancelled)
    -- the next turn: the model is told the call was stopped while running
    assert(s:send("again"))
    assert.equal("next: again", last(harness.collect(s:receive(T)), "result").result)
    local tr = mock:requests()[2].tool_results[1]
    assert.is_true(tr.is_error)
    assert.matches(STOPPED_TOOL, tr.text, 1, true)
    assert.matches("this call was stopped while running, not refused before it ran", tr.text, 1,
      true)
  end)

  it("stdin closing mid-turn: the CLI finishes the turn, then exits 0", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("a long story told slowly") }, chunks = 10, chunk_delay_ms = 100 },
    } }
    local s <close> = assert(claude.connect(mock:options { include_partial_messages = true }))
    assert(s:send("go"))
    local result
    for msg in s:messages(T) do
      if msg.type == "stream_event" and not s.stdin_closed then s:end_input() end
      if msg.type == "result" then result = msg end
    end
    assert.equal("success", result.subtype)
    assert.equal("a long story told slowly", result.result)
    assert.same({ 0, 0 }, { s:wait(T) })
  end)

  it("stdin closing with a permission pending: the call fails, the turn goes on", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 1, b = 2 }) } },
      { content = { text("after {{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", { claude.tool("add", "Add", { a = "number", b = "number" },
      function(a) return a.a + a.b end) })
    local s
    s = assert(claude.connect(mock:options { mcp_servers = { calc = calc },
      can_use_tool = function()
        s:end_input()
        claude.sleep(0.5)
        return true -- too late: nobody reads it
      end }))
    assert(s:send("go"))
    local result = last(harness.collect(s:messages(T)), "result")
    local words = "Tool permission request failed: AbortError: Tool permission stream closed "
      .. "before response received"
    assert.equal("success", result.subtype)
    assert.equal("after ERROR: " .. words, result.result)
    assert.same({ 0, 0 }, { s:wait(T) })
    s:close()
  end)

  it("SIGINT mid-turn is an interrupt: the turn ends, the CLI exits 0", function()
    local mock <close> = e2e.start { turns = {
      { delay_ms = 5000, content = { text("late") } },
    } }
    local s <close> = assert(claude.connect(mock:options()))
    assert(s:send("go"))
    assert.equal("system", assert(s:next_message(T)).type)
    assert(s:signal("int"))
    local msgs = harness.collect(s:messages(T))
    local result = last(msgs, "result")
    assert.equal("error_during_execution", result.subtype)
    assert.equal("aborted_streaming", result.terminal_reason)
    assert.equal("[Request interrupted by user]", claude.text(last(msgs, "user")))
    assert.same({ 0, 0 }, { s:wait(T) })
  end)

  it("SIGTERM mid-turn: the CLI exits 143 at once, a process error", function()
    local mock <close> = e2e.start { turns = {
      { delay_ms = 5000, content = { text("late") } },
    } }
    local s <close> = assert(claude.connect(mock:options()))
    assert(s:send("go"))
    assert.equal("system", assert(s:next_message(T)).type)
    assert(s:signal("term"))
    local ok, err = pcall(harness.collect, s:messages(T))
    assert.is_false(ok)
    assert.is_true(errors.is(err, "process"))
    assert.equal(143, err.exit_code)
    assert.same({ 143, 0 }, { s:wait(T) })
  end)

  it("an API 400: the CLI asks three times, then an error result", function()
    local bad = { status = 400, error_message = "bad thing" }
    local mock <close> = e2e.start { turns = { bad, bad, bad, bad } }
    local opts = mock:options()
    opts.env.CLAUDE_CODE_MAX_RETRIES = false -- the CLI's own default
    local msgs = harness.collect(claude.query("go", opts))
    local result = last(msgs, "result")
    assert.equal("success", result.subtype)
    assert.is_true(result.is_error)
    assert.equal(400, result.api_error_status)
    assert.equal("api_error", result.terminal_reason)
    assert.equal("API Error: 400 bad thing", result.result)
    assert.equal(3, #mock:requests())
  end)
end)
