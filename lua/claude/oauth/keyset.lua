--- A set of JWS keys, chosen by a token's header (`kid`, `alg`): the local half of a key
-- set, and the key sources every JOSE module reads (PEM, DER, JWK, `claude.core.Key`).
-- A set made from a table lives here; a set fetched from a `jwks_uri` is the same class,
-- made and refreshed by claude.oauth.jwks (which adds the fetching methods). Both
-- claude.oauth.jwt (a `keys` list given to verify) and claude.oauth.jwks use it.
-- @module claude.oauth.keyset
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

local type, ipairs, tostring = type, ipairs, tostring
local misuse, typename = errors.misuse, errors.typename

local KEY_MT = "claude.core.Key"

-- nil, err, "auth" with err.reason, the check that failed (every JOSE module's).
local function auth(reason, message)
  return errors.fail("auth", message, { reason = reason })
end
M.auth = auth

-- A value of the token quoted in a message only when it is short and
-- plain (a kid, an alg): a token is attacker's text.
local function quoted(v)
  if type(v) == "string" and #v <= 40 and v:match("^[%w%-_.:+/]+$") then
    return "'" .. v .. "'"
  end
  return nil
end
M.quoted = quoted

local function is_key(v)
  return typename(v) == KEY_MT
end

-- Keys read from PEM text given to sign and verify, by the text, for as long
-- as they live: OpenSSL's decoders take some 0.5 ms, ten times a signature
-- check. (Keys `key` returns are the caller's, who may close them: not here.)
local pem_keys = setmetatable({}, { __mode = "v" })

-- source -> Key | nil, err, "key". `strings`: "pem" (PEM or DER) or
-- "secret" (PEM when it contains -----BEGIN, else an HMAC secret).
local function to_key(source, strings, passphrase)
  if is_key(source) then return source end
  local k, msg, kind
  if type(source) == "string" then
    if strings == "secret" and not source:find("-----BEGIN ", 1, true) then
      if source == "" then return errors.fail("key", "an empty HMAC secret") end
      k, msg, kind = core.key_from_secret(source)
    elseif strings == "secret" then
      k = pem_keys[source]
      if not k then
        k, msg, kind = core.key_from_pem(source)
        pem_keys[source] = k
      end
    else
      k, msg, kind = core.key_from_pem(source, passphrase)
    end
  elseif type(source) == "table" then
    k, msg, kind = core.key_from_jwk(source)
  else
    misuse("a key (PEM text, JWK table or claude.core.Key) expected, got %s", typename(source))
  end
  if not k then return errors.fail(kind, msg) end
  return k
end
M.to_key = to_key

local KeySet = {}
KeySet.__index = KeySet
KeySet.__name = "claude.oauth.KeySet"

function KeySet:__tostring()
  if self.url then
    return string.format("claude.oauth.KeySet (%s, %s)", self.url,
      self.entries and (#self.entries .. " keys") or "not fetched")
  end
  return string.format("claude.oauth.KeySet (%d keys)", #self.entries)
end

-- The metadata members of a JWK the set uses for choosing (RFC 7517 4).
local function metadata(e, jwk)
  if type(jwk.kid) == "string" then e.kid = jwk.kid end
  if type(jwk.alg) == "string" then e.alg = jwk.alg end
  if type(jwk.use) == "string" then e.use = jwk.use end
  if type(jwk.key_ops) == "table" then
    e.ops = {}
    for _, op in ipairs(jwk.key_ops) do e.ops[op] = true end
  end
  return e
end

-- One member of a key set -> entry, or nil, message, kind.
local function entry_of(item)
  if typename(item) == "claude.core.Key" then return { key = item } end
  if type(item) ~= "table" then
    return nil, "a JWK table or a claude.core.Key expected, got " .. typename(item), "key"
  end
  local key, err, kind = core.key_from_jwk(item)
  if not key then return nil, err, kind end
  return metadata({ key = key }, item)
end

-- The entries of a list of JWKs. `lenient` (a fetched set): keys that
-- cannot be used are left out, their reasons kept by kid; else the first
-- such key fails the whole set, but for keys that are not for signatures.
local function entries_of(list, lenient)
  local entries, skipped = {}, {}
  for i, item in ipairs(list) do
    local use = type(item) == "table" and item.use or nil -- a claude.core.Key has none
    if use == nil or use == "sig" then
      local e, err, kind = entry_of(item)
      if e then
        entries[#entries + 1] = e
      else
        local kid = type(item) == "table" and type(item.kid) == "string" and item.kid
        if lenient or err:match("^unsupported") then
          if kid then skipped[kid] = err end
        else
          local name = quoted(kid)
          return nil, errors.new(kind, "key #" .. i .. (name and " (kid " .. name .. ")" or "")
            .. ": " .. err), kind
        end
      end
    end
  end
  return entries, skipped
end

-- A list from a JWKS `{ keys = {...} }`, a list of keys, or one JWK.
local function members(source)
  if type(source) == "table" and source.kty ~= nil then return { source } end
  if typename(source) == "claude.core.Key" then return { source } end
  if type(source) ~= "table" then return nil end
  local list = source.keys
  if list == nil then list = source end
  if type(list) ~= "table" or (next(list) ~= nil and list[1] == nil) then return nil end
  return list
end

local function new_local(source)
  local list = members(source)
  if not list then
    misuse("a JWK set { keys = {...} }, a list of keys or a JWK expected, got %s", typename(source))
  end
  local entries, skipped, kind = entries_of(list, false)
  if not entries then return nil, skipped, kind end
  return setmetatable({ entries = entries, skipped = skipped }, KeySet)
end

--- A key set from a table: a JWKS `{ keys = { jwk, ... } }`, a list of
-- JWKs and `claude.core.Key`s, or one JWK. Keys marked for encryption
-- (`use = "enc"`) and key types JWS has no use for are left out; any other
-- key that cannot be read fails the set.
-- @tparam table source
-- @return a key set, or nil, err, "key"
function M.new(source)
  return new_local(source)
end

local function usable(e, alg)
  if e.use ~= nil and e.use ~= "sig" then return false end
  if e.ops ~= nil and not e.ops.verify then return false end
  if e.alg ~= nil and e.alg ~= alg then return false end
  return (e.key:supports(alg))
end

-- The entries that may verify a token with this header, and whether one
-- had its kid.
local function choose(entries, header)
  local found, kid_seen = {}, false
  local kid, alg = header.kid, header.alg
  for _, e in ipairs(entries) do
    if kid == nil or e.kid == kid then
      kid_seen = kid_seen or kid ~= nil
      if usable(e, alg) then found[#found + 1] = e.key end
    end
  end
  return found, kid_seen
end

--- The keys that may have signed a token with this (decoded, unverified)
-- header: those with its `kid` (any, when it has none) that allow its `alg`.
-- A fetched set is fetched first when needed (see the module).
-- @tparam table header
-- @return a list of `claude.core.Key` (maybe empty), or nil, err, kind
function KeySet:select(header)
  if type(header) ~= "table" then
    errors.argerror(1, "select", "table expected, got %s", typename(header))
  end
  if self.url then
    local ok, err, kind = self:_ensure(false)
    if not ok and not self.entries then return nil, err, kind end
  end
  local found, kid_seen = choose(self.entries, header)
  local kid = header.kid
  if self.url and #found == 0 and type(kid) == "string" and not kid_seen
    and not self.skipped[kid] then
    local ok, err, kind = self:_ensure(true) -- a key rotated in since the last fetch?
    if not ok then return nil, err, kind end
    found = choose(self.entries, header)
  end
  if #found > 0 then return found end
  if kid_seen then
    local name = quoted(kid)
    return auth("key", "the key with the token's kid " .. (name and name .. " " or "")
      .. "cannot verify " .. tostring(header.alg))
  end
  local why = type(kid) == "string" and self.skipped[kid]
  if why then
    return auth("key", "the key set's key " .. (quoted(kid) or "with the token's kid")
      .. " cannot be used: " .. why)
  end
  return {}
end

--- Adds a key to the set (a local set or a fetched one's current keys).
-- @param key a `claude.core.Key`, PEM text or JWK table
-- @tparam[opt] table meta `{ kid =, alg =, use = }`
-- @return the set, or nil, err, "key"
function KeySet:add(key, meta)
  if meta ~= nil and type(meta) ~= "table" then
    errors.argerror(2, "add", "table expected, got %s", typename(meta))
  end
  local k, err, kind = to_key(key, "pem")
  if not k then return nil, err, kind end
  local e = { key = k }
  if type(key) == "table" then metadata(e, key) end
  if meta then metadata(e, meta) end
  self.entries = self.entries or {}
  self.entries[#self.entries + 1] = e
  return self
end

--- The keys of the set: `{ key = Key, kid =, alg =, use = }` each (a
-- fetched set: as last fetched, nothing before the first fetch).
-- @treturn table
function KeySet:keys()
  local out = {}
  for i, e in ipairs(self.entries or {}) do
    out[i] = { key = e.key, kid = e.kid, alg = e.alg, use = e.use }
  end
  return out
end

--- The public JWK set document of the set's asymmetric keys (with their
-- kid, alg and use), for serving as a `jwks_uri` or a client's `jwks`.
-- @treturn table `{ keys = { jwk, ... } }`
function KeySet:jwks()
  local keys = json.array()
  for _, e in ipairs(self.entries or {}) do
    if e.key:info().kty ~= "oct" then
      local j = e.key:jwk()
      j.kid, j.alg, j.use = e.kid, e.alg, e.use
      keys[#keys + 1] = j
    end
  end
  return { keys = keys }
end

for _, name in ipairs { "select", "add", "keys", "jwks" } do
  KeySet[name] = errors.public(KeySet[name])
end
M.new = errors.public(M.new)

M.KeySet = KeySet
M.entries_of = entries_of -- for a fetched set (claude.oauth.jwks)

return M
