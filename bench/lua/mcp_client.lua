-- The claudelua MCP client under load: `build/claudelua bench/lua/mcp_client.lua SERVER
-- [INFLIGHT] [CALLS]` connects to the stdio server SERVER, makes CALLS calls of `add` with
-- INFLIGHT outstanding (after a warm-up), checks every answer, and prints one JSON line:
-- calls/s and this process's peak RSS.
local claude = require "claude"

local server, inflight, calls = arg[1], tonumber(arg[2] or 1), tonumber(arg[3] or 20000)
local WARMUP = 1000

local function peak_rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmHWM:%s*(%d+)"))
end

local c <close> = assert(claude.mcp.connect { command = server, max_retries = 0 })

-- `n` calls spread over `inflight` tasks; every answer is checked.
local function load(n)
  local next_call = 0
  local workers = {}
  for w = 1, inflight do
    workers[w] = claude.spawn(function()
      while next_call < n do
        next_call = next_call + 1
        local i = next_call
        local r = assert(c:call_tool("add", { a = i, b = w }))
        assert(r.content[1].text == tostring(i + w), "wrong answer")
      end
    end)
  end
  for w = 1, inflight do workers[w]:wait() end
end

load(WARMUP)
local t0 = claude.core.now()
load(calls)
local seconds = claude.core.now() - t0
print(string.format('{"side":"lua","inflight":%d,"calls":%d,"seconds":%.4f,'
  .. '"calls_per_s":%.0f,"peak_rss_kb":%d}', inflight, calls, seconds, calls / seconds,
  peak_rss_kb()))
