--- The client credentials grant (RFC 6749 section 4.4): a machine with its own
-- credentials, no person.
-- @module claude.oauth.grants.client_credentials
local errors = require "claude.errors"
local token = require "claude.oauth.token"

local M = { name = "client_credentials", interactive = false,
  registration = { grant_types = { "client_credentials" } } }

--- The credentials a machine client needs: a client id and a way to authenticate.
function M.check(o, fname)
  if o.client_id == nil or (o.client_secret == nil and o.client_assertion == nil
      and o.private_key == nil) then
    errors.bad_field("auth", fname, "the %s grant needs 'auth.client_id' and "
      .. "'auth.client_secret', 'auth.private_key' or 'auth.client_assertion'", o.grant)
  end
end

--- Asks the token endpoint with `fields` as `client` and keeps the tokens: the last step
-- of every grant without a person.
function M.request(provider, d, client, fields, what, scope)
  local tokens, err, kind = token.request(d, client, fields, what, provider:proofs(d))
  if not tokens then return nil, err, kind end
  provider:keep(d, client, tokens, scope)
  return true
end

function M.obtain(provider, d, scope)
  local client, err, kind = provider:client(d, scope)
  if not client then return nil, err, kind end
  return M.request(provider, d, client, { grant_type = "client_credentials", scope = scope },
    "the client credentials request", scope)
end

return M
