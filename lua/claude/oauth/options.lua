--- The `auth` option of `claude.mcp.connect`: names, types, and the
-- combinations that make sense. A mistake is a misuse, raised at the
-- caller's line and naming the field (`auth.redirect_uri`).
-- @module claude.oauth.options
local errors = require "claude.errors"
local client_auth = require "claude.oauth.client_auth"
local jwt = require "claude.oauth.jwt"
local grants = require "claude.oauth.grants"

local M = {}

local misuse = errors.misuse

local TYPES = {
  client_name = "string", redirect_uri = "string", on_authorize = "function",
  client_id = "string", client_secret = "string", client_metadata_url = "string",
  grant = "string", scope = "string", store = "table", application_type = "string",
  dpop = "boolean",
  -- private_key_jwt: a function that returns a signed client assertion, or the key the
  -- library signs one with (PEM text, a JWK table or a claude.core.Key)
  client_assertion = "function", token_endpoint_auth_method = "string",
  private_key = "key", private_key_alg = "string", private_key_kid = "string",
  -- the jwt_bearer grant (RFC 7523 section 2.1): a function that returns the grant
  assertion = "function",
}
M.TYPES = TYPES

--- Checks `auth.private_key` and its companions, and reads the key once:
-- `o.private_key` becomes a claude.core.Key; a JWK's `kid` and `alg` stand
-- for `private_key_kid` and `private_key_alg` when those are not given. A key
-- that cannot be read, a public key, an HMAC secret (that would be
-- client_secret_jwt) and an algorithm the key cannot sign with are misuses.
-- @tparam table o the copy being checked (changed)
-- @tparam string fname
function M.check_private_key(o, fname)
  for _, k in ipairs { "client_secret", "client_assertion" } do
    if o[k] ~= nil then
      misuse("bad field 'auth' to '%s' ('auth.private_key' and 'auth.%s' exclude each other)",
        fname, k)
    end
  end
  local m = o.token_endpoint_auth_method
  if m ~= nil and m ~= "private_key_jwt" then
    misuse("bad field 'auth.token_endpoint_auth_method' to '%s' ('private_key_jwt' with "
      .. "'auth.private_key', got '%s')", fname, m)
  end
  local source = o.private_key
  -- the unwrapped reader: a misuse here must blame the caller of connect
  local key, err = jwt._to_key(source, "pem")
  if not key then
    misuse("bad field 'auth.private_key' to '%s' (%s)", fname, errors.message(err))
  end
  local info = key:info()
  if info.kty == "oct" then
    misuse("bad field 'auth.private_key' to '%s' (an HMAC secret: client_secret_jwt is not "
      .. "done here; give 'auth.client_assertion')", fname)
  end
  if not info.private then
    misuse("bad field 'auth.private_key' to '%s' (a public key: signing needs the private "
      .. "one)", fname)
  end
  local alg, field = o.private_key_alg, "auth.private_key_alg"
  if alg == nil and type(source) == "table" and type(source.alg) == "string" then
    -- a JWK that names its algorithm is meant for that one alone (RFC 7517 section 4.4)
    alg, field = source.alg, "auth.private_key"
    o.private_key_alg = alg
  end
  if alg ~= nil then
    local fits, why = false, "unknown algorithm"
    for _, a in ipairs(jwt.algorithms) do
      if a == alg then fits, why = key:supports(alg) end
    end
    if not fits then
      misuse("bad field '%s' to '%s' (%s%s)", field, fname,
        field == "auth.private_key" and "its JWK's alg: " or "", why)
    end
  end
  if o.private_key_kid == nil and type(source) == "table" and type(source.kid) == "string" then
    o.private_key_kid = source.kid
  end
  o.private_key = key
end

--- Checks an `auth` table; returns a copy with `grant` filled in.
-- @tparam table auth
-- @tparam string fname the public function, for messages
function M.check(auth, fname)
  if type(auth) ~= "table" then
    misuse("bad field 'auth' to '%s' (table expected, got %s)", fname, errors.typename(auth))
  end
  local o = {}
  for k, v in pairs(auth) do
    local want = type(k) == "string" and TYPES[k]
    if not want then errors.unknown_field(k, TYPES, fname, "auth") end
    if want == "key" then
      if type(v) ~= "string" and type(v) ~= "table" and errors.typename(v) ~= "claude.core.Key"
      then
        misuse("bad field 'auth.%s' to '%s' (PEM text, a JWK table or a claude.core.Key "
          .. "expected, got %s)", k, fname, errors.typename(v))
      end
    elseif type(v) ~= want then
      misuse("bad field 'auth.%s' to '%s' (%s expected, got %s)", k, fname, want,
        errors.typename(v))
    end
    o[k] = v
  end
  o.grant = o.grant or "authorization_code"
  local grant = grants.get(o.grant)
  if not grant then
    errors.bad_field("auth.grant", fname, "%s expected, got '%s'", grants.names(), o.grant)
  end
  grant.check(o, fname)
  if (o.grant == "jwt_bearer") ~= (o.assertion ~= nil) then
    misuse("bad field 'auth' to '%s' ('auth.assertion' goes with the jwt_bearer grant, "
      .. "and only with it)", fname)
  end
  for _, k in ipairs { "client_secret", "client_assertion", "private_key",
    "token_endpoint_auth_method" } do
    if o[k] ~= nil and o.client_id == nil then
      misuse("bad field 'auth.%s' to '%s' (only with 'auth.client_id')", k, fname)
    end
  end
  local m = o.token_endpoint_auth_method
  if m ~= nil and not client_auth.methods[m] then
    misuse("bad field 'auth.token_endpoint_auth_method' to '%s' (unknown method '%s')", fname, m)
  end
  if o.private_key ~= nil then M.check_private_key(o, fname) end
  for _, k in ipairs { "private_key_alg", "private_key_kid" } do
    if o[k] ~= nil and o.private_key == nil then
      misuse("bad field 'auth.%s' to '%s' (only with 'auth.private_key')", k, fname)
    end
  end
  if o.application_type ~= nil and o.application_type ~= "native"
    and o.application_type ~= "web" then
    misuse("bad field 'auth.application_type' to '%s' ('native' or 'web' expected, got '%s')",
      fname, o.application_type)
  end
  local doc = o.client_metadata_url
  if doc ~= nil and not doc:find("^https://[^/?#]+/[^?#]") then
    misuse("bad field 'auth.client_metadata_url' to '%s' (an https:// URL with a path "
      .. "expected, got '%s')", fname, doc)
  end
  if o.store ~= nil and (type(o.store.load) ~= "function" or type(o.store.save) ~= "function")
  then
    misuse("bad field 'auth.store' to '%s' ({ load = function(key), save = function(key, "
      .. "tokens) } expected)", fname)
  end
  return o
end

return M
