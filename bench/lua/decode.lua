-- decode.lua -- the cost of decoding one stream_flood 64 B message (~605 bytes): lua-cjson
-- (for reference) and claude.json (src/json_decode.c). The floor under every small-message
-- figure. Run: build/claudelua bench/lua/decode.lua
local cjson = require "cjson"
local json = require "claude.json"

local text = string.rep("x", 63) .. "\\n"
local line = '{"type":"assistant","message":{"id":"msg_01Stream0000000000000001",'
  .. '"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":'
  .. '"text","text":"' .. text .. '"}],"stop_reason":null,"stop_sequence":null,"usage":'
  .. '{"input_tokens":25434,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
  .. '"output_tokens":1,"service_tier":"standard"},"context_management":null},'
  .. '"parent_tool_use_id":null,"session_id":"0f3c2a9e-1111-4222-8333-444455556666",'
  .. '"uuid":"0f3c2a9e-3333-4000-8000-000000000001","request_id":"req_011Stream0000000000000001"}'

local N = 200000
local function bench(name, decode)
  collectgarbage()
  local t0 = os.clock()
  for _ = 1, N do decode(line) end
  local per = (os.clock() - t0) / N
  print(string.format("%-26s %.2f us  %9.0f/s", name, per * 1e6, 1 / per))
end

print(string.format("one %d-byte message, %d times", #line, N))
bench("cjson.decode", cjson.decode)
bench("claude.json.decode", json.decode)
