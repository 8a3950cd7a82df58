--- The JWT bearer grant (RFC 7523 section 2.1): an assertion the application gets
-- elsewhere (an ID-JAG from the enterprise's identity provider, `claude.oauth.id_jag`; a
-- workload's identity token) is exchanged for tokens. No person.
-- @module claude.oauth.grants.jwt_bearer
local errors = require "claude.errors"
local client_credentials = require "claude.oauth.grants.client_credentials"

local M = { name = "jwt_bearer", interactive = false,
  registration = { grant_types = { "client_credentials" } } }

M.GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"

--- A client id; the client may authenticate (a secret, a key, an assertion of its own) or
-- not: a public client (`none`), whose assertion alone speaks for it (workload identity
-- federation, SEP-1933).
function M.check(o, fname)
  if o.client_id == nil then
    errors.bad_field("auth", fname, "the jwt_bearer grant needs 'auth.client_id'")
  end
end

function M.obtain(provider, d, scope)
  local client, err, kind = provider:client(d, scope)
  if not client then return nil, err, kind end
  -- the issuer as its metadata spells it: an ID-JAG's audience must be exactly that
  local ok, assertion, why = pcall(provider.auth.assertion, { client_id = client.client_id,
    issuer = d.meta.issuer or d.issuer, resource = d.resource,
    token_endpoint = d.meta.token_endpoint, scope = scope })
  if not ok or type(assertion) ~= "string" or assertion == "" then
    if not ok and errors.is(assertion, "cancelled") then error(assertion, 0) end
    local cause = ok and why or assertion
    -- the reason, never the value; an OAuth error code of a step behind it is kept
    return errors.fail("auth", "auth.assertion gave no assertion: " .. tostring(ok
      and (why ~= nil and errors.message(why) or ("it returned " .. type(assertion)))
      or errors.message(assertion)), errors.is(cause) and { oauth_error = cause.oauth_error }
      or nil)
  end
  return client_credentials.request(provider, d, client, { grant_type = M.GRANT_TYPE,
    assertion = assertion, scope = scope }, "the JWT bearer grant", scope)
end

return M
