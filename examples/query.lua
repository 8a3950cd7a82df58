-- query.lua -- one question, one answer, and what it cost.
--
--   claudelua examples/query.lua ["your question"]        # your real Claude Code setup
--   CLAUDELUA_DEMO=1 claudelua examples/query.lua          # offline, scripted answers
--   claudelua --demo examples/query.lua
package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
local claude = require "claude"
local demo = require "demo"

local prompt = arg[1] or "What is 15 + 27? Answer in one short sentence."

local options = demo.setup({ turns = {
  { content = { { type = "text", text = "15 + 27 = 42." } } },
} }, { max_turns = 1 })

-- The loop ends after the result; breaking out early closes the session too.
local failed
for msg in claude.query(prompt, options) do
  if msg.type == "system" and msg.subtype == "init" then
    print(string.format("[model %s, session %s]", msg.model, msg.session_id))
  elseif msg.type == "assistant" and not msg.is_api_error_message then
    local text = claude.text(msg)
    if text then print(text) end
  elseif msg.type == "result" then
    -- subtype says how the CLI's loop ended: "success" also when an API error (no login,
    -- say) ended the turn; is_error says whether the query failed, and the result says why
    if msg.is_error then
      failed = claude.text(msg) or msg.api_error or msg.subtype
    else
      print(string.format("[%s in %d ms, %d turn(s), %s]", msg.subtype,
        msg.duration_ms or 0, msg.num_turns or 0, demo.cost(msg)))
    end
  end
end
if failed then
  io.stderr:write("the query failed: ", failed, "\n")
  os.exit(1)
end
