--- A small agent, the code under test of the record and replay specs: an in-process tool
-- behind a PreToolUse hook and can_use_tool, a streamed turn it interrupts, and a last
-- turn. spec/e2e/record_spec.lua records it against the real CLI (the scripted turns are
-- `M.TURNS`); spec/integration/replay_spec.lua replays that recording
-- (spec/fixtures/recordings/agent.jsonl) against the same code, and against changed code.
local claude = require "claude"
local testing = require "claude.testing"

local M = {}

local function text(t) return { type = "text", text = t } end

--- The scripted Messages API turns of the recording.
M.TURNS = {
  { content = { text("Adding."), { type = "tool_use", name = "mcp__calc__add",
    input = { a = 2, b = 3 } } } },
  { content = { text("sum: {{last_tool_result}}") } },
  { content = { text("Once upon a time, slowly, a long story.") }, chunks = 40,
    chunk_delay_ms = 100 },
  { content = { text("after: {{last_user_text}}") } },
}

--- The options of the agent's session, over `base` (the real CLI's, or a replay's).
-- `change` alters the agent: `{ decision = "deny" }`, `{ model = ... }`, `{ hook = ... }`.
function M.options(base, change)
  change = change or {}
  local seen = { hooks = {}, asked = {} }
  local calc = claude.server("calc", {
    claude.tool("add", "Add two numbers", { a = "number", b = "number" },
      function(a) return a.a + a.b end),
  })
  local opts = testing.merge(base, {
    model = change.model or "claude-sonnet-4-5",
    setting_sources = {},
    include_partial_messages = true,
    mcp_servers = { calc = calc },
    can_use_tool = function(name)
      seen.asked[#seen.asked + 1] = name
      if change.decision == "deny" then return claude.deny("not today") end
      return claude.allow()
    end,
    hooks = { PreToolUse = { { matcher = "mcp__calc__add", hooks = {
      function(input)
        seen.hooks[#seen.hooks + 1] = input.tool_name
        return { hook_specific_output = { additional_context = change.hook or "calc is safe" } }
      end } } } },
  })
  return opts, seen
end

--- Runs the agent's three turns on a session made with `opts`; returns the results' texts
-- (and subtypes). Raises when the session fails (a replay that found a difference).
function M.run(opts, T)
  T = T or 30
  local s <close> = assert(claude.connect(opts))
  local out = {}
  local function turn(prompt, on_msg)
    assert(s:send(prompt))
    for msg in s:receive(T) do
      if on_msg then on_msg(msg) end
      if msg.type == "result" then
        out[#out + 1] = { subtype = msg.subtype, result = msg.result }
      end
    end
  end
  turn("Please add 2 and 3")
  local interrupted = false
  turn("Tell me a story", function(msg)
    if not interrupted and msg.type == "stream_event" and msg.event.type == "content_block_delta"
    then
      interrupted = true
      assert(s:interrupt(T))
    end
  end)
  turn("again")
  s:close() -- now, on Lua 5.3 too (the replay checks a closed session)
  return out
end

return M
