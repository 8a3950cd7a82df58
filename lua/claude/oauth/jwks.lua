--- JWK sets (RFC 7517 section 5): keys chosen by a token's `kid` and `alg`,
-- given as a table or fetched from an authorization server's `jwks_uri`
-- and cached; and `verifier`, the token check an HTTP MCP server takes as
-- its `auth.verify` callback.
--
--     local jwks = require "claude.oauth.jwks"
--     local verify = jwks.verifier{ jwks_url = "https://auth.example/.well-known/jwks.json",
--       issuer = "https://auth.example", audience = "https://mcp.example/mcp" }
--     local claims, err, kind = verify(token)     -- kind "auth" or "connection"
--
-- A fetched set is fetched on first use, again once `cache_ttl` has passed,
-- and at once when a token names a `kid` the set lacks (a rotated key), but
-- not more often than once per `cooldown` seconds, so that tokens with
-- made-up kids cannot make the server hammer the authorization server.
-- Tasks that need the set while it is being fetched wait for that one fetch.
-- When a refetch fails the keys already fetched stay in use. Fetching waits
-- (in a task, other tasks run meanwhile).
--
-- Errors: `nil, err, "auth"` for tokens no key verifies and for a document
-- that is not a usable JWK set; `"connection"` when it could not be fetched
-- (refused, timeout, TLS, an HTTP error status); `"key"` for key material
-- given in a table that cannot be read.
-- @module claude.oauth.jwks
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local async = require "claude.async"
local jwt = require "claude.oauth.jwt"
local keyset = require "claude.oauth.keyset"
local urls = require "claude.url"

local M = {}

local type, ipairs, pairs = type, ipairs, pairs
local misuse, typename = errors.misuse, errors.typename

local MAX_KEYS = 100
local DEFAULTS = { cache_ttl = 300, cooldown = 30, timeout = 10, max_size = 256 * 1024 }

local auth, entries_of = keyset.auth, keyset.entries_of

local KeySet = keyset.KeySet
local new_local = keyset.new

--- A key set from a table: a JWKS `{ keys = { jwk, ... } }`, a list of
-- JWKs and `claude.core.Key`s, or one JWK (`claude.oauth.keyset.new`).
-- @tparam table source
-- @return a key set, or nil, err, "key"
function M.new(source)
  return new_local(source)
end

---------------------------------------------------------------------------------------------
-- Fetched sets
---------------------------------------------------------------------------------------------

-- `url` must be https, or http on a loopback host (decided from the URL
-- alone: nothing is resolved); `what` names it for the misuse message.
local function check_url(url, what, fname)
  if type(url) ~= "string" then
    misuse("bad %s to '%s' (a URL expected, got %s)", what, fname, typename(url))
  end
  local u, why = urls.parse_canonical(url)
  if not u then misuse("bad %s to '%s' (%s)", what, fname, why) end
  if u.scheme ~= "https" and not (u.scheme == "http" and urls.is_loopback(u.host)) then
    misuse("bad %s to '%s' (https required; http only for a loopback host)", what, fname)
  end
  return url
end

-- Downloads and reads the set: true, or nil, err, kind.
function KeySet:_download()
  local http = require "claude.http.client"
  local headers = { accept = "application/jwk-set+json, application/json" }
  for k, v in pairs(self.headers) do headers[k] = v end
  local resp, err = http.request { url = self.url, timeout = self.timeout, headers = headers,
    max_body = self.max_size }
  local where = "the JWK set " .. self.url
  if not resp then
    if err.kind == "overflow" then
      return auth("key", where .. " is larger than " .. self.max_size .. " bytes")
    end
    return errors.fail("connection", where .. " could not be fetched: " .. errors.message(err),
      { cause = err })
  end
  if resp.status ~= 200 then
    local redirect = resp.status >= 300 and resp.status < 400
    return errors.fail("connection", where .. " could not be fetched: HTTP " .. resp.status
      .. (redirect and " (redirects are not followed)" or ""))
  end
  local doc = json.decode(resp.body)
  local list = type(doc) == "table" and doc.keys
  if type(list) ~= "table" or (next(list) ~= nil and list[1] == nil) then
    return auth("key", where .. " is not a JWK set ({\"keys\": [...]})")
  end
  if #doc.keys > MAX_KEYS then
    return auth("key", where .. " has more than " .. MAX_KEYS .. " keys")
  end
  local entries, skipped = entries_of(doc.keys, true)
  self.entries, self.skipped, self.fetched_at = entries, skipped, core.now()
  return true
end

-- Fetches the set, or waits for the fetch under way: true, or nil, err, kind.
function KeySet:_fetch()
  local running = self.fetching
  if running then
    running.done:wait()
    return table.unpack(running.result, 1, 3)
  end
  running = { done = async.event() }
  self.fetching = running
  self.attempted_at = core.now()
  self.fetches = self.fetches + 1
  local ok, a, b, c = pcall(self._download, self)
  if not ok then -- cancelled while waiting: the waiters get a failure, the error goes on
    b = errors.new("connection", "the fetch of the JWK set " .. self.url .. " was cancelled")
    c = b.kind
  end
  running.result = { ok and a or nil, b, c }
  if not (ok and a) then self.failure = running.result end
  self.fetching = nil
  running.done:set()
  if not ok then error(a, 0) end
  return a, b, c
end

-- Fetches when the set is due: never fetched, older than cache_ttl, or
-- (`kid_miss`) lacking a token's kid; but not twice within cooldown.
-- true, or nil, err, kind.
function KeySet:_ensure(kid_miss)
  if self.fetching then return self:_fetch() end
  local now = core.now()
  if self.entries and not kid_miss and now - self.fetched_at < self.cache_ttl then return true end
  if now - self.attempted_at < self.cooldown then
    if self.entries then return true end
    return table.unpack(self.failure, 1, 3)
  end
  return self:_fetch()
end

--- Fetches the set now (waiting for a fetch already under way).
-- @return true, or nil, err, kind ("connection", "auth")
function KeySet:refresh()
  if not self.url then return true end
  return self:_fetch()
end

local REMOTE = { cache_ttl = true, cooldown = true, timeout = true, max_size = true,
  headers = true }

local function remote(url, what, opts, fname)
  check_url(url, what, fname)
  opts = opts or {}
  local self = setmetatable({ url = url, skipped = {}, fetched_at = -math.huge,
    attempted_at = -math.huge, fetches = 0, headers = {} }, KeySet)
  for k, default in pairs(DEFAULTS) do
    local v = opts[k]
    if v == nil then v = default end
    if type(v) ~= "number" or v < 0 then
      misuse("bad field '%s' to '%s' (a number >= 0 expected)", k, fname)
    end
    self[k] = v
  end
  if opts.headers ~= nil then
    if type(opts.headers) ~= "table" then
      misuse("bad field 'headers' to '%s' (table expected, got %s)", fname, typename(opts.headers))
    end
    self.headers = opts.headers
  end
  self.max_size = math.tointeger(self.max_size) or math.floor(self.max_size)
  return self
end

--- A key set fetched from `url` (https; http only for a loopback host) on
-- first use and cached (see the module).
-- @tparam string url the `jwks_uri`
-- @tparam[opt] table opts `{ cache_ttl = 300, cooldown = 30 (seconds between
--   refetches for an unknown kid), timeout = 10, max_size = 262144 (bytes),
--   headers = {} }`
-- @return a key set
function M.remote(url, opts)
  if opts ~= nil then
    errors.check(opts, 2, "remote", "table")
    errors.check_fields(opts, REMOTE, "remote")
  end
  return remote(url, "argument #1", opts, "remote")
end

-- verify's options but `keys` go to jwt.verify as they are (so that an option
-- verify gains is a verifier's too); the rest choose the key set.
local VERIFIER = { jwks_url = true, keys = true, cache_ttl = true, cooldown = true,
  timeout = true, jwks_max_size = true, headers = true }
local FOR_JWT = {}
for k in pairs(jwt._verify_options) do
  if k ~= "keys" then
    VERIFIER[k] = true
    FOR_JWT[#FOR_JWT + 1] = k
  end
end

--- A token check for an HTTP MCP server's `auth.verify`: `verify(token) ->
-- claims | nil, err, kind`. It may wait (fetching keys), so it runs in a task.
-- @tparam table opts `{ jwks_url = | keys = (a table, key or key set),
--   audience = (required: this server's resource URL or a list),
--   issuer =, algorithms =, leeway =, required_claims =, max_age =, typ =,
--   subject =, now =, max_size = (of a token) }` as for
--   `claude.oauth.jwt.verify`, and for a fetched set `cache_ttl`,
--   `cooldown`, `timeout`, `jwks_max_size`, `headers` (see `remote`)
-- @return the function `verify(token)`, and the key set it uses
function M.verifier(opts)
  errors.check(opts, 1, "verifier", "table")
  errors.check_fields(opts, VERIFIER, "verifier")
  if (opts.jwks_url == nil) == (opts.keys == nil) then
    misuse("bad argument #1 to 'verifier' (one of jwks_url and keys expected)")
  end
  if opts.audience == nil then
    -- RFC 8707 / MCP authorization: a server accepts only tokens meant for it
    misuse("bad field 'audience' to 'verifier' (the audience this server accepts is required)")
  end
  local set
  if opts.jwks_url ~= nil then
    set = remote(opts.jwks_url, "field 'jwks_url'", { cache_ttl = opts.cache_ttl,
      cooldown = opts.cooldown, timeout = opts.timeout, max_size = opts.jwks_max_size,
      headers = opts.headers }, "verifier")
  elseif type(opts.keys) == "table" and getmetatable(opts.keys) == KeySet then
    set = opts.keys
  else
    local err
    set, err = new_local(opts.keys)
    if not set then misuse("bad field 'keys' to 'verifier' (%s)", errors.message(err)) end
  end
  local jopts = { keys = set }
  for _, k in ipairs(FOR_JWT) do jopts[k] = opts[k] end
  local o = jwt._check_options(jopts, "verifier")
  local verify = jwt._verify
  return function(token)
    if type(token) ~= "string" or token == "" then return auth("malformed", "no bearer token") end
    local claims, err, kind = verify(token, o)
    if not claims then return nil, err, kind end
    return claims
  end, set
end

M.KeySet = KeySet

for name, f in pairs(M) do
  if type(f) == "function" and not name:match("^_") then M[name] = errors.public(f) end
end
KeySet.refresh = errors.public(KeySet.refresh)

return M
