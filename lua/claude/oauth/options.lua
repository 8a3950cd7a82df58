--- The `auth` option of `claude.mcp.connect`: names, types, and the
-- combinations that make sense. A mistake is a misuse, raised at the
-- caller's line and naming the field (`auth.redirect_uri`).
-- @module claude.oauth.options
local errors = require "claude.errors"
local client_auth = require "claude.oauth.client_auth"

local M = {}

local misuse = errors.misuse

local TYPES = {
  client_name = "string", redirect_uri = "string", on_authorize = "function",
  client_id = "string", client_secret = "string", client_metadata_url = "string",
  grant = "string", scope = "string", store = "table",
  -- private_key_jwt: a function that returns a signed client assertion
  client_assertion = "function", token_endpoint_auth_method = "string",
  -- the jwt_bearer grant (RFC 7523 section 2.1): a function that returns the grant
  assertion = "function",
}
M.TYPES = TYPES

local GRANTS = { authorization_code = true, client_credentials = true, jwt_bearer = true }

--- Checks an `auth` table; returns a copy with `grant` filled in.
-- @tparam table auth
-- @tparam string fname the public function, for messages
function M.check(auth, fname)
  if type(auth) ~= "table" then
    misuse("bad option 'auth' to '%s' (table expected, got %s)", fname, errors.typename(auth))
  end
  local o = {}
  for k, v in pairs(auth) do
    local want = type(k) == "string" and TYPES[k]
    if not want then
      misuse("unknown field 'auth.%s' to '%s'%s", tostring(k), fname,
        type(k) == "string" and errors.suggestion(k, TYPES) or "")
    end
    if type(v) ~= want then
      misuse("bad field 'auth.%s' to '%s' (%s expected, got %s)", k, fname, want,
        errors.typename(v))
    end
    o[k] = v
  end
  o.grant = o.grant or "authorization_code"
  if not GRANTS[o.grant] then
    misuse("bad field 'auth.grant' to '%s' ('authorization_code', 'client_credentials' or "
      .. "'jwt_bearer' expected, got '%s')", fname, o.grant)
  end
  if o.grant == "authorization_code" then
    for _, k in ipairs { "on_authorize", "redirect_uri" } do
      if o[k] == nil then
        misuse("bad option 'auth' to '%s' ('auth.%s' is needed for the authorization_code "
          .. "grant; claude.oauth.loopback() makes both)", fname, k)
      end
    end
    if not o.redirect_uri:find("^%a[%w+.-]*:[^%s]+$") or o.redirect_uri:find("#", 1, true) then
      misuse("bad field 'auth.redirect_uri' to '%s' (an absolute URI without a fragment "
        .. "expected, got '%s')", fname, o.redirect_uri)
    end
  else
    if o.client_id == nil or (o.client_secret == nil and o.client_assertion == nil) then
      misuse("bad option 'auth' to '%s' (the %s grant needs 'auth.client_id' and "
        .. "'auth.client_secret' or 'auth.client_assertion')", fname, o.grant)
    end
  end
  if (o.grant == "jwt_bearer") ~= (o.assertion ~= nil) then
    misuse("bad option 'auth' to '%s' ('auth.assertion' goes with the jwt_bearer grant, "
      .. "and only with it)", fname)
  end
  for _, k in ipairs { "client_secret", "client_assertion", "token_endpoint_auth_method" } do
    if o[k] ~= nil and o.client_id == nil then
      misuse("bad field 'auth.%s' to '%s' (only with 'auth.client_id')", k, fname)
    end
  end
  local m = o.token_endpoint_auth_method
  if m ~= nil and not client_auth.methods[m] then
    misuse("bad field 'auth.token_endpoint_auth_method' to '%s' (unknown method '%s')", fname, m)
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
