--- Middleware of an MCP server: functions around its requests, in the order declared (the
-- first is outermost), the same in-process, over stdio and over HTTP, in both eras.
--
--     local mw = require "claude.mcp.middleware"
--     claude.server("calc", tools, { middleware = {
--       mw.log(),                                     -- a line per request
--       mw.rate_limit { rate = 5, burst = 10 },       -- per principal
--       function(req, ctx, next) return next(req) end, -- every request
--       { call = function(req, ctx, next) ... end },  -- tools/call only
--     } })
--
-- A middleware is a function `(req, ctx, next) -> result | nil, err`, which wraps every
-- request, or a table of them by kind (`request`: every one; `call`, `read`, `get`,
-- `complete`, `list`, `ping`) or by method (`["tools/list"]`); a table's `request` goes
-- around its kind's, which goes around its method's. `req` is `{ method =, params =, id = }`;
-- `next(req?)` runs the rest (with a changed request if given) and returns its result, or
-- nil and the error. See docs/middleware.md.
-- @module claude.mcp.middleware
local errors = require "claude.errors"

local M = {}

local type, pairs, ipairs = type, pairs, ipairs
local misuse, typename = errors.misuse, errors.typename

--- The kind of each request middleware can wrap (a middleware table's keys: the kind, or
-- the method itself; `request` wraps them all).
M.KIND = { ["tools/call"] = "call", ["resources/read"] = "read", ["prompts/get"] = "get",
  ["completion/complete"] = "complete", ["tools/list"] = "list", ["prompts/list"] = "list",
  ["resources/list"] = "list", ["resources/templates/list"] = "list", ping = "ping" }

-- The keys a middleware table may have: `request`, the kinds, the methods.
local KEYS = { request = true }
for method, kind in pairs(M.KIND) do KEYS[method], KEYS[kind] = true, true end

local function check_one(m, where)
  if type(m) == "function" then return m end
  if type(m) ~= "table" then
    misuse("bad %s (a function or a table of functions expected, got %s)", where, typename(m))
  end
  local any = false
  for k, f in pairs(m) do
    if not KEYS[k] then
      misuse("bad %s (unknown key '%s': request, call, read, get, complete, list, ping or a "
        .. "method such as 'tools/list' expected)", where, tostring(k))
    end
    if type(f) ~= "function" then
      misuse("bad %s (%s: function expected, got %s)", where, k, typename(f))
    end
    any = true
  end
  if not any then misuse("bad %s (an empty table)", where) end
  return m
end

--- Check a server's `middleware` option (a list of middleware), raising a misuse that
-- names it; returns a copy of the list, or nil for an empty one (a server without).
-- @param list
-- @treturn table|nil
function M.check(list)
  if type(list) ~= "table" then
    misuse("bad field 'middleware' to 'server' (a list of middleware expected, got %s)",
      typename(list))
  end
  local n = #list
  for k in pairs(list) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      misuse("bad field 'middleware' to 'server' (a list expected, found key '%s')",
        tostring(k))
    end
  end
  local copy = {}
  for i, m in ipairs(list) do
    copy[i] = check_one(m, "field 'middleware[" .. i .. "]' to 'server'")
  end
  return n > 0 and copy or nil
end

--- A new list: `list` (or none) with `m` after it, innermost (`server:use`).
-- @tparam[opt] table list
-- @param m a middleware
-- @treturn table
function M.append(list, m)
  check_one(m, "argument #1 to 'use'")
  local copy = {}
  for i, x in ipairs(list or {}) do copy[i] = x end
  copy[#copy + 1] = m
  return copy
end

-- The ready-made middleware, each in a file of its own, loaded on first use.
local READY = { log = "claude.mcp.middleware.log", rate_limit = "claude.mcp.middleware.rate_limit",
  cache = "claude.mcp.middleware.cache" }

return setmetatable(M, { __index = function(_, k)
  local name = READY[k]
  if name then return require(name).new end
end })
