-- The claudelua MCP client under load: `build/claudelua bench/lua/mcp_client.lua SERVER
-- [INFLIGHT] [CALLS] [ERA]` connects to the stdio server SERVER (`SERVER modern` for the
-- modern era: the client negotiates it; `legacy`, the default, pins the client to the legacy
-- era), makes CALLS calls of `add` with INFLIGHT outstanding (after a warm-up), checks every
-- answer, and prints one JSON line: calls/s, CPU time per call and this process's peak RSS.
local claude = require "claude"

local server, inflight, calls = arg[1], tonumber(arg[2] or 1), tonumber(arg[3] or 20000)
local era = arg[4] or "legacy"
local WARMUP = 1000

local function peak_rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmHWM:%s*(%d+)"))
end

local c <close> = assert(claude.mcp.connect { command = server, max_retries = 0,
  args = era == "modern" and { "modern" } or nil,
  protocol = era == "legacy" and "legacy" or nil })
assert(c.era == era, "negotiated " .. tostring(c.era) .. ", not " .. era)

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
        -- (compared as numbers: tostring would be a fifth of what a call costs the client)
        assert(tonumber(r.content[1].text) == i + w, "wrong answer")
      end
    end)
  end
  for w = 1, inflight do workers[w]:wait() end
end

load(WARMUP)
local t0, cpu0 = claude.core.now(), os.clock()
load(calls)
local seconds, cpu = claude.core.now() - t0, os.clock() - cpu0
-- CPU time per call (user + system, this process) is what a loaded machine disturbs least
print(string.format('{"side":"lua","era":"%s","inflight":%d,"calls":%d,"seconds":%.4f,'
  .. '"calls_per_s":%.0f,"cpu_us_per_call":%.1f,"peak_rss_kb":%d}', era, inflight, calls,
  seconds, calls / seconds, cpu / calls * 1e6, peak_rss_kb()))
