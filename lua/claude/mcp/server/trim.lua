--- Memory back to the system after a load went, for a long-running server (the HTTP
-- transport): a full collection and the allocators' free pages (`core.memory_trim`;
-- docs/performance.md, "Memory after a load").
--
-- A look every `EVERY` seconds decides, from what the server saw and its RSS: it trims when
-- the RSS grew by `GROWTH` since the last trim and the load went (no request since the last
-- look, or none in flight), so that what abandoned streams or a burst left behind comes back
-- within seconds even while sessions stay alive and a client keeps talking (issue 34, item
-- 5); and, where the RSS cannot be read, when no request came since the last look. Trims
-- are `MIN_GAP` apart at least: the collection costs about a millisecond per MiB alive.
-- @module claude.mcp.server.trim
local core = require "claude.core"

local M = {}

M.EVERY, M.GROWTH, M.MIN_GAP = 2, 8 * 1024 * 1024, 5

-- The process's resident bytes (Linux), or nil.
local function rss()
  local f = io.open("/proc/self/status", "r")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  local kb = text and tonumber(text:match("VmRSS:%s*(%d+) kB"))
  return kb and kb * 1024
end
M.rss = rss

--- The state of the looks of one server.
-- @treturn table
function M.new()
  return { seen = 0, trimmed_at = 0, last = core.now(), base = rss() }
end

--- One look: trims when it is worth it.
-- @tparam table st what `new` made
-- @tparam integer requests requests seen by the server so far
-- @tparam integer inflight requests in flight now
-- @treturn boolean true when it trimmed
function M.look(st, requests, inflight)
  local quiet = requests == st.seen
  st.seen = requests
  local now = core.now()
  if requests == st.trimmed_at or now - st.last < M.MIN_GAP then return false end
  local r, base = rss(), st.base
  local worth
  if r and base then
    worth = r - base >= M.GROWTH and (quiet or inflight == 0)
  else
    worth = quiet
  end
  if not worth then return false end
  core.memory_trim()
  st.trimmed_at, st.last, st.base = requests, core.now(), rss()
  return true
end

return M
