--- The ready-made middleware `rate_limit`: a token bucket per principal. Each request takes
-- a token; a principal's bucket holds `burst` tokens and gains `rate` a second. A request
-- that finds it empty is refused at once with a JSON-RPC error (-32000, "Rate limit
-- exceeded: retry in 0.4 s", `data = { retryAfterMs = 400 }`), or, with `tool_error = true`,
-- a call gets a tool error result saying the same (the model reads it and may wait).
--
-- The principal is `ctx.principal` (the request's verified OAuth token: its subject or
-- client at its issuer); requests without one share one bucket, unless `key(req, ctx)` says
-- otherwise (a string; nil: not limited).
-- @module claude.mcp.middleware.rate_limit
local core = require "claude.core"
local errors = require "claude.errors"
local content = require "claude.mcp.content"

local M = {}

local now, fmt, type, ceil, min = core.now, string.format, type, math.ceil, math.min

--- The error code of a refusal.
M.CODE = -32000

local FIELDS = { rate = true, burst = true, key = true, on = true, tool_error = true,
  max_keys = true }
local KINDS = { request = true, call = true, read = true, get = true, complete = true,
  list = true }

local function positive(opts, field, default)
  local v = opts[field]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
    errors.bad_field(field, "rate_limit", "positive number expected, got %s",
      type(v) == "number" and tostring(v) or errors.typename(v))
  end
  return v
end

local function default_key(_, ctx)
  return ctx.principal or ""
end

--- A middleware that limits each principal's requests.
-- @tparam table opts `rate` (tokens a second), `burst` (the bucket's size; default
--   `rate`, at least 1), `key = function(req, ctx)` (default: the principal), `on` (the
--   kind it wraps: "request", every one, by default; "call", "read", "get", "complete",
--   "list"), `tool_error` (a call refused answers with a tool error result),
--   `max_keys` (buckets kept, default 10000: past it the full ones are forgotten)
-- @treturn table the middleware
-- @function new
M.new = errors.public(function(opts)
  errors.check(opts, 1, "rate_limit", "table")
  errors.check_fields(opts, FIELDS, "rate_limit")
  local rate = positive(opts, "rate")
  if rate == nil then errors.bad_field("rate", "rate_limit", "number expected, got nil") end
  local burst = positive(opts, "burst", math.max(rate, 1))
  local max_keys = positive(opts, "max_keys", 10000)
  local key = opts.key or default_key
  errors.check_field(key, "key", "rate_limit", "function")
  local on = opts.on or "request"
  if not KINDS[on] then
    errors.bad_field("on", "rate_limit", "request, call, read, get, complete or list "
      .. "expected, got %s", type(on) == "string" and "'" .. on .. "'" or errors.typename(on))
  end
  local tool_error = opts.tool_error
  errors.check_field(tool_error, "tool_error", "rate_limit", "boolean", true)

  local buckets, count = {}, 0 -- key -> { tokens =, at = }

  -- drops the buckets that are full again (no different from none)
  local function sweep(t)
    for k, b in pairs(buckets) do
      if b.tokens + (t - b.at) * rate >= burst then
        buckets[k] = nil
        count = count - 1
      end
    end
  end

  -- takes a token of `k`'s bucket: nil, or the seconds until one is there
  local function take(k)
    local t = now()
    local b = buckets[k]
    if not b then
      if count >= max_keys then sweep(t) end
      b = { tokens = burst, at = t }
      buckets[k] = b
      count = count + 1
    else
      b.tokens = min(burst, b.tokens + (t - b.at) * rate)
      b.at = t
    end
    if b.tokens >= 1 then
      b.tokens = b.tokens - 1
      return nil
    end
    return (1 - b.tokens) / rate
  end

  local function limited(req, ctx, next)
    local k = key(req, ctx)
    if k == nil then return next() end
    local wait = take(k)
    if not wait then return next() end
    local ms = ceil(wait * 1000)
    local text = fmt("Rate limit exceeded: retry in %.1f s", ms / 1000)
    if tool_error and req.method == "tools/call" then return content.error(text) end
    return nil, errors.new("rpc", text, { code = M.CODE, data = { retryAfterMs = ms } })
  end
  return { [on] = limited }
end)

return M
