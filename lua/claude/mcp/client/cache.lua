--- The client's cache of list and read results (modern era): a server says in each
-- cacheable result how long it stays valid (`ttlMs`; 0, the default, means not at all)
-- and for whom (`cacheScope`: `private` to this user, or `public`; one client is one user,
-- so both are kept). The list-changed notifications and `notifications/resources/updated`
-- drop what they make stale; a new connection starts empty. `cache = false` (connect) turns
-- it off, `{ cache = false }` (a call) skips it once.
-- @module claude.mcp.client.cache
local core = require "claude.core"

local M = {}

-- What each notification makes stale.
local STALE = {
  ["notifications/tools/list_changed"] = { "tools/list" },
  ["notifications/prompts/list_changed"] = { "prompts/list" },
  ["notifications/resources/list_changed"] = { "resources/list", "resources/templates/list" },
}

local Cache = {}
Cache.__index = Cache

--- A cache; `enabled` false makes one that keeps nothing.
function M.new(enabled)
  return setmetatable({ enabled = enabled ~= false, entries = {} }, Cache)
end

local function shallow(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return setmetatable(c, getmetatable(t))
end

--- The result kept for `method` and `key` (a cursor, a URI, or "" for none), or nil.
function Cache:get(method, key)
  local per = self.entries[method]
  local e = per and per[key or ""]
  if not e then return nil end
  if core.now() >= e.expires then
    per[key or ""] = nil
    return nil
  end
  return shallow(e.value) -- the caller may change its copy
end

--- Keeps `result` as long as its `ttlMs` says.
function Cache:put(method, key, result)
  if not self.enabled or type(result) ~= "table" then return end
  local ttl = result.ttlMs
  if math.type(ttl) ~= "integer" and not (type(ttl) == "number" and ttl == ttl) then return end
  if ttl <= 0 then return end
  local per = self.entries[method]
  if not per then
    per = {}
    self.entries[method] = per
  end
  per[key or ""] = { value = shallow(result), expires = core.now() + ttl / 1000 }
end

--- Drops what a notification makes stale.
function Cache:notified(method, params)
  if method == "notifications/resources/updated" then
    local uri = type(params) == "table" and params.uri
    local per = self.entries["resources/read"]
    if per and type(uri) == "string" then per[uri] = nil end
    return
  end
  for _, m in ipairs(STALE[method] or {}) do self.entries[m] = nil end
end

--- Drops everything.
function Cache:clear()
  self.entries = {}
end

return M
