--- The ready-made middleware `cache`: the server keeps the results of its cacheable requests
-- (the lists and `resources/read`) as long as their caching hints of protocol 2026-07-28
-- say, and answers the same request from its copy meanwhile, in either era.
--
-- What the specification says of a cached result (server/utilities/caching), held here:
-- * the hints are the result's own `ttlMs` and `cacheScope` when its handler set them, else
--   the resource's `cache`, else the server's (`{ ttl_ms =, scope = }`), else `ttlMs = 0`:
--   a result that is stale at once, never kept;
-- * a result is identified by its method and the params that make it (the `uri` of a read,
--   the `cursor` of a list page: every param but `_meta`);
-- * `private` results are kept per authorization context (`ctx.principal`; requests without
--   a token are one context), `public` ones for everyone;
-- * a retry of the multi round-trip requests (`inputResponses`, `requestState`) is neither
--   answered from the cache nor kept, nor is an `input_required` result or an error;
-- * the list-changed notifications drop the lists they name, `server:resource_updated(uri)`
--   the reads of `uri` (caching is complementary to them);
-- * an answer from the cache says in the modern era how long it stays fresh: `ttlMs` is
--   what is left of the hint, not the hint again.
-- @module claude.mcp.middleware.cache
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local now, type, pairs, tostring, fmt, concat = core.now, type, pairs, tostring,
  string.format, table.concat

-- What each list change makes stale (claude.mcp.tool's list names).
local STALE = { tools = "tools/list", prompts = "prompts/list", resources = "resources/list",
  resource_templates = "resources/templates/list" }

-- The params as a key: every value but the top `_meta`, keys sorted.
local function canon(v, top)
  local t = type(v)
  if t == "string" then return fmt("%q", v) end
  if t ~= "table" then return tostring(v) end
  local keys = {}
  for k in pairs(v) do
    if not (top and k == "_meta") then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = canon(k) .. "=" .. canon(v[k]) end
  return "{" .. concat(parts, ",") .. "}"
end

-- A copy of a result without its caching hints and era stamps (they are made anew).
local function kept(r)
  local c = {}
  for k, v in pairs(r) do c[k] = v end
  c.ttlMs, c.cacheScope, c.resultType = nil, nil, nil
  return setmetatable(c, getmetatable(r))
end

-- The hints of result `r`: ttl (ms), scope.
local function hints_of(r, ctx)
  local ttl, scope = r.ttlMs, r.cacheScope
  local hint = rawget(ctx, "_cache_hint")
  if math.type(ttl) ~= "integer" or ttl < 0 then ttl = hint and hint.ttl_ms or 0 end
  if scope ~= "public" and scope ~= "private" then scope = hint and hint.scope or "private" end
  return ttl, scope
end

--- A middleware that keeps cacheable results as their hints say.
-- @tparam[opt] table opts `max_entries` (default 1000: past it, the expired results go,
--   then the oldest)
-- @treturn table the middleware
-- @function new
M.new = errors.public(function(opts)
  errors.check(opts, 1, "cache", "table", true)
  opts = opts or {}
  errors.check_fields(opts, { max_entries = true }, "cache")
  local max = opts.max_entries or 1000
  if math.type(max) ~= "integer" or max < 1 then
    errors.bad_field("max_entries", "cache", "positive integer expected, got %s",
      type(max) == "number" and tostring(max) or errors.typename(max))
  end

  -- per server: { entries = { [method] = { [key] = entry } }, order = {keys...}, head, n }
  local stores = setmetatable({}, { __mode = "k" })

  local function drop(store, method, key)
    local per = store.entries[method]
    if per and per[key] then
      per[key] = nil
      store.n = store.n - 1
    end
  end

  local function store_of(server)
    local store = stores[server]
    if store then return store end
    store = { entries = {}, order = {}, head = 1, n = 0 }
    stores[server] = store
    -- (weak keys: the server forgets these with the store)
    server._watchers[store] = function(_, what)
      local method = STALE[what]
      if method and store.entries[method] then
        for _ in pairs(store.entries[method]) do store.n = store.n - 1 end
        store.entries[method] = nil
      end
    end
    server._subscribers[store] = function(uri)
      local per = store.entries["resources/read"]
      for key, e in pairs(per or {}) do
        if e.uri == uri then drop(store, "resources/read", key) end
      end
    end
    return store
  end

  -- room for one more: the expired go, then the oldest
  local function make_room(store, t)
    if store.n < max then return end
    for method, per in pairs(store.entries) do
      for key, e in pairs(per) do
        if e.expires <= t then drop(store, method, key) end
      end
    end
    local order = store.order
    while store.n >= max and store.head <= #order do
      local o = order[store.head]
      order[store.head] = false
      store.head = store.head + 1
      if store.entries[o[1]] and store.entries[o[1]][o[2]] == o[3] then
        drop(store, o[1], o[2])
      end
    end
    if store.head > #order then store.order, store.head = {}, 1 end
  end

  local function cached(req, ctx, next)
    local params = req.params
    local server = rawget(ctx, "_server")
    if type(params) ~= "table" or params.inputResponses ~= nil or params.requestState ~= nil
        or not server then
      return next()
    end
    local store, method = store_of(server), req.method
    local key = canon(params, true)
    local who = "\0" .. (ctx.principal or "")
    local per = store.entries[method]
    local t = now()
    local e = per and (per[key] or per[key .. who])
    if e and e.expires > t then
      local r = kept(e.value)
      if ctx.era == "modern" then
        r.ttlMs, r.cacheScope = math.floor((e.expires - t) * 1000), e.scope
      end
      return r
    end
    local r, err = next()
    if r == nil or (r.resultType ~= nil and r.resultType ~= "complete") then return r, err end
    local ttl, scope = hints_of(r, ctx)
    if ttl > 0 then
      make_room(store, t)
      if not per then
        per = {}
        store.entries[method] = per
      end
      local k = scope == "public" and key or key .. who
      if not per[k] then store.n = store.n + 1 end
      e = { value = kept(r), expires = t + ttl / 1000, scope = scope,
        uri = type(params.uri) == "string" and params.uri or nil }
      per[k] = e
      store.order[#store.order + 1] = { method, k, e }
    end
    return r, err
  end
  return { list = cached, read = cached }
end)

return M
