--- Requests to the token endpoint: the authorization code exchange, a
-- refresh, the client credentials grant, or any other grant a caller
-- builds. Each carries the resource indicator (RFC 8707) and the client's
-- authentication (claude.oauth.client_auth); the answer becomes the tokens
-- the provider keeps. No error quotes a token, a code or a secret.
-- @module claude.oauth.token
local errors = require "claude.errors"
local url = require "claude.url"
local fetch = require "claude.oauth.fetch"
local client_auth = require "claude.oauth.client_auth"

local M = {}

local fail = errors.fail

--- Sends a token request.
-- @tparam table d the discovery (`meta`, `issuer`, `resource`)
-- @tparam table client `client_id`, `client_secret`, `token_endpoint_auth_method`, `assertion`
-- @tparam table fields the grant's fields (`grant_type`, `code`, ...)
-- @tparam string what the request, for messages ("the token refresh")
-- @param[opt] dpop a claude.oauth.dpop key holder: the request carries a proof (and is
--   made again once with the nonce a `use_dpop_nonce` answer brings), and a `DPoP` token
--   is taken
-- @return `{ access_token, token_type ("Bearer" or "DPoP"), refresh_token, expires_at
--   (os.time() seconds, or nil), scope (or nil: the server did not say) }` | nil, err,
--   "auth" (with `oauth_error`, `status` when the server answered)
function M.request(d, client, fields, what, dpop)
  local endpoint = d.meta.token_endpoint
  local resp
  for round = 1, 2 do
    local form = {}
    for k, v in pairs(fields) do form[k] = v end
    form.resource = d.resource
    local headers = { ["Content-Type"] = "application/x-www-form-urlencoded",
      Accept = "application/json" }
    -- each round authenticates anew: an assertion's jti is used once
    local ok, err, kind = client_auth.apply(client, d.meta, form, headers, {
      client_id = client.client_id, audience = d.meta.issuer or d.issuer,
      token_endpoint = endpoint,
      algorithms = d.meta.token_endpoint_auth_signing_alg_values_supported })
    if not ok then return nil, err, kind end
    if dpop then
      local proof, perr, pkind = dpop:proof("POST", endpoint)
      if not proof then return nil, perr, pkind end
      headers.DPoP = proof
    end
    local ferr, fkind
    resp, ferr, fkind = fetch.send { method = "POST", url = endpoint, headers = headers,
      body = url.form(form), what = what }
    if not resp then return nil, ferr, fkind end
    if dpop then
      local fresh = dpop:nonce_from(endpoint, resp.headers)
      local _, code = fetch.oauth_error(resp)
      if not (round == 1 and resp.status == 400 and code == "use_dpop_nonce" and fresh) then
        break
      end
    else
      break
    end
  end
  if resp.status ~= 200 then
    local text, code = fetch.oauth_error(resp)
    return fail("auth", string.format("the authorization server '%s' refused %s: %s",
      d.issuer, what, text), { oauth_error = code, status = resp.status })
  end
  local t, why = fetch.object(resp)
  if not t then return fail("auth", string.format("the answer to %s is %s", what, why)) end
  if type(t.access_token) ~= "string" or t.access_token == "" then
    return fail("auth", "the answer to " .. what .. " holds no access_token")
  end
  local token_type = type(t.token_type) == "string" and t.token_type:lower() or nil
  if t.token_type ~= nil and token_type ~= "bearer" and not (dpop and token_type == "dpop") then
    return fail("auth", string.format("the answer to %s holds a token of type '%s'; only "
      .. "Bearer tokens%s are supported", what, tostring(t.token_type):sub(1, 40),
      dpop and " and DPoP ones" or ""))
  end
  local expires_in = tonumber(t.expires_in)
  return { access_token = t.access_token, token_type = token_type == "dpop" and "DPoP"
    or "Bearer",
    refresh_token = type(t.refresh_token) == "string" and t.refresh_token ~= ""
      and t.refresh_token or nil,
    expires_at = expires_in and (os.time() + math.floor(expires_in)) or nil,
    scope = type(t.scope) == "string" and t.scope or nil }
end

return M
