--- What a result carries on the wire beyond its payload, per era: in the modern era (2026-07-28
-- on) every result says its `resultType`, the cacheable ones (`era.CACHEABLE`) carry caching
-- hints (`ttlMs`, `cacheScope`) and the server names itself in `_meta`; the legacy era has
-- none of these. Pure and era-generic: both halves (the server stamps, the client reads) use
-- it, and the payloads (a CallToolResult, a list) stay the same in both eras.
-- @module claude.mcp.wire
local era = require "claude.mcp.era"
local errors = require "claude.errors"

local M = {}

local type, fmt = type, string.format
local SERVER_INFO, CACHEABLE = era.META.server_info, era.CACHEABLE

--- The caching hints of a server that sets none: the client may keep a result but must
-- check it again before using it (`ttlMs = 0`), and only for itself (`private`): a list or a
-- read may depend on who asks (the token of an OAuth server).
M.DEFAULT_CACHE = { ttl_ms = 0, scope = "private" }

local SCOPES = { public = true, private = true }
local CACHE_FIELDS = { ttl_ms = true, scope = true }

--- Check a `cache` option (`{ ttl_ms = integer >= 0, scope = "public" | "private" }`, both
-- optional), raising a misuse naming `field` of `fname`; nil stays nil.
-- @param v the option
-- @tparam string fname the function it was given to
-- @tparam[opt="cache"] string field
-- @treturn table|nil `{ ttl_ms =, scope = }`, the defaults filled in
function M.check_cache(v, fname, field)
  field = field or "cache"
  if v == nil then return nil end
  errors.check_field(v, field, fname, "table")
  errors.check_fields(v, CACHE_FIELDS, fname, field)
  local ttl, scope = v.ttl_ms, v.scope
  if ttl ~= nil and not (math.type(ttl) == "integer" and ttl >= 0) then
    errors.bad_field(field .. ".ttl_ms", fname, "non-negative integer expected, got %s",
      type(ttl) == "number" and tostring(ttl) or errors.typename(ttl))
  end
  if scope ~= nil and not SCOPES[scope] then
    errors.bad_field(field .. ".scope", fname, "'public' or 'private' expected, got %s",
      type(scope) == "string" and fmt("'%s'", scope) or errors.typename(scope))
  end
  return { ttl_ms = ttl or M.DEFAULT_CACHE.ttl_ms, scope = scope or M.DEFAULT_CACHE.scope }
end

--- The `_meta` a server puts in each of its results: `{ [serverInfo key] = {name, version} }`.
-- @tparam string name
-- @tparam string version
-- @treturn table
function M.server_meta(name, version)
  return { [SERVER_INFO] = { name = name, version = version } }
end

--- Stamp a result of `method` for the modern era, in place: `resultType` ("complete" unless
-- set), the caching hints of a cacheable result (those of `cache` unless set), and the
-- entries of `meta` in its `_meta` (a `_meta` of its own is copied, not changed).
-- @tparam string method
-- @tparam table result
-- @tparam table meta from `server_meta`
-- @tparam[opt] table cache `{ ttl_ms =, scope = }` (default `DEFAULT_CACHE`)
-- @treturn table result
function M.stamp(method, result, meta, cache)
  if result.resultType == nil then result.resultType = "complete" end
  if CACHEABLE[method] then
    cache = cache or M.DEFAULT_CACHE
    if result.ttlMs == nil then result.ttlMs = cache.ttl_ms end
    if result.cacheScope == nil then result.cacheScope = cache.scope end
  end
  local own = result._meta
  if own == nil then
    result._meta = meta
  elseif type(own) == "table" and own ~= meta then
    local m = {}
    for k, v in pairs(own) do m[k] = v end
    for k, v in pairs(meta) do if m[k] == nil then m[k] = v end end
    result._meta = m
  end
  return result
end

--- The kind of a result read from a peer: its `resultType`, "complete" when absent (a
-- legacy peer's, or a modern one that left it out).
-- @tparam table result
-- @treturn string
function M.result_type(result)
  local t = type(result) == "table" and result.resultType
  return type(t) == "string" and t or "complete"
end

return M
