-- decode.lua -- the cost of decoding one stream_flood 64 B message (~605 bytes): lua-cjson
-- (for reference) and claude.json (src/json_decode.c). The floor under every small-message
-- figure. Like the fake's, every message has its own ids, so each decode makes new strings.
-- Run: build/claudelua bench/lua/decode.lua
local cjson = require "cjson"
local json = require "claude.json"

local text = string.rep("x", 63) .. "\\n"
local function line(m)
  return string.format('{"type":"assistant","message":{"id":"msg_01Stream%016x",'
    .. '"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":'
    .. '"text","text":"%s"}],"stop_reason":null,"stop_sequence":null,"usage":'
    .. '{"input_tokens":25434,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
    .. '"output_tokens":1,"service_tier":"standard"},"context_management":null},'
    .. '"parent_tool_use_id":null,"session_id":"0f3c2a9e-1111-4222-8333-444455556666",'
    .. '"uuid":"0f3c2a9e-3333-4000-8000-%012x","request_id":"req_011Stream%016x"}', m, text, m, m)
end

local N, BATCH = 200000, 1000

-- lines are made a batch at a time, outside the timed part
local function bench(name, decode)
  local lines, spent, m = {}, 0, 0
  collectgarbage()
  for _ = 1, N // BATCH do
    for i = 1, BATCH do lines[i] = line(m + i) end
    m = m + BATCH
    local t0 = os.clock()
    for i = 1, BATCH do decode(lines[i]) end
    spent = spent + os.clock() - t0
  end
  local per = spent / N
  print(string.format("%-26s %.2f us  %9.0f/s", name, per * 1e6, 1 / per))
end

print(string.format("%d messages of %d bytes, each with its own ids", N, #line(1)))
bench("cjson.decode", cjson.decode)
bench("claude.json.decode", json.decode)
