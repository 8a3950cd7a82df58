-- session.lua -- one CLI process, several turns, and an interrupt.
--
-- Turn 1 asks a question; turn 2 asks for a long story, streams it, and
-- interrupts it after a few pieces; turn 3 shows the session goes on and
-- remembers the conversation.
--
--   claudelua examples/session.lua               # your real Claude Code setup
--   claudelua --demo examples/session.lua        # offline (or CLAUDELUA_DEMO=1)
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local demo = require "demo"

local options = demo.setup({ turns = {
  { content = { { type = "text", text = "Red, yellow and blue." } } },
  { content = { { type = "text", text = "Once upon a time, Red, Yellow and Blue lived in a "
    .. "paint box at the back of a drawer, and every morning they argued about which of "
    .. "them the painter would pick first, until one day the painter mixed them all." } },
    chunks = 60, chunk_delay_ms = 50 },
  { content = { { type = "text", text = "You first asked me to name the three primary "
    .. "colours." } } },
} }, {
  include_partial_messages = true, -- stream_event messages: the text as it is written
  max_turns = 1,
})

-- connect waits until the CLI is ready; <close> ends it (stdin closed, then
-- SIGTERM/SIGKILL if it does not exit in time).
local s <close> = assert(claude.connect(options))
print(string.format("[connected: pid %d]", s.pid))

-- One turn: prints streamed text; calls on_delta(n) after each text piece.
local function turn(prompt, on_delta)
  print("\n> " .. prompt)
  assert(s:send(prompt))
  local pieces = 0
  for msg in s:receive(120) do -- at most 120 s between two messages
    if msg.type == "stream_event" then
      local ev = msg.event
      if ev.type == "content_block_delta" and ev.delta.type == "text_delta" then
        io.write(ev.delta.text)
        io.flush()
        pieces = pieces + 1
        if on_delta then on_delta(pieces) end
      end
    elseif msg.type == "result" then
      print(string.format("\n[%s, %s]", msg.subtype, demo.cost(msg, "total cost so far")))
      return msg
    end
  end
end

turn("Name the three primary colours, in one line.")

local interrupted = false
local story = turn("Now tell me a long story about them.", function(pieces)
  if pieces == 8 and not interrupted then
    interrupted = true
    -- the CLI answers at once, then ends the turn with an error result
    assert(s:interrupt(30))
    io.write(" [interrupted]")
  end
end)
assert(story.subtype == "error_during_execution" or not interrupted,
  "an interrupted turn ends with error_during_execution")

local last = turn("Sorry, too long. What did I first ask you? One line.")
print(string.format("[session %s: %s]", s.session_id, last.subtype))
