--- The authorization code grant with PKCE (RFC 6749 section 4.1, RFC 7636): a person
-- signs in at the authorization server; `auth.on_authorize` takes them there and brings
-- back the redirect. `state`, the resource indicator (RFC 8707) and the issuer of the
-- answer (RFC 9207) are checked before the code is redeemed.
-- @module claude.oauth.grants.authorization_code
local errors = require "claude.errors"
local url = require "claude.url"
local pkce = require "claude.oauth.pkce"
local redirect = require "claude.oauth.redirect"
local token = require "claude.oauth.token"

local M = { name = "authorization_code", interactive = true,
  registration = { grant_types = { "authorization_code", "refresh_token" },
    response_types = { "code" } } }

local fail = errors.fail

local function includes(list, v)
  if type(list) ~= "table" then return false end
  for _, x in ipairs(list) do
    if x == v then return true end
  end
  return false
end

--- A person's grant needs the way to them and back.
function M.check(o, fname)
  for _, k in ipairs { "on_authorize", "redirect_uri" } do
    if o[k] == nil then
      errors.bad_field("auth", fname, "'auth.%s' is needed for the authorization_code "
        .. "grant; claude.oauth.loopback() makes both", k)
    end
  end
  if not o.redirect_uri:find("^%a[%w+.-]*:[^%s]+$") or o.redirect_uri:find("#", 1, true) then
    errors.bad_field("auth.redirect_uri", fname, "an absolute URI without a fragment "
      .. "expected, got '%s'", o.redirect_uri)
  end
end

-- Before a person is sent anywhere: metadata that promises what the flow relies on.
local function usable(d)
  local meta = d.meta
  if meta.defaults then return true end
  -- without metadata that promises S256 the MCP specification forbids going on
  if not includes(meta.code_challenge_methods_supported, "S256") then
    return fail("auth", string.format("the authorization server '%s' does not list S256 "
      .. "in code_challenge_methods_supported: PKCE cannot be relied on, so no "
      .. "authorization is attempted", d.issuer))
  end
  if type(meta.authorization_endpoint) ~= "string" then
    return fail("auth", string.format("the authorization server '%s' names no "
      .. "authorization_endpoint", d.issuer))
  end
  return true
end

function M.obtain(provider, d, scope)
  local ok, err, kind = usable(d)
  if not ok then return nil, err, kind end
  local meta = d.meta
  local client
  client, err, kind = provider:client(d, scope)
  if not client then return nil, err, kind end
  local verifier, state, challenge
  verifier, err, kind = pkce.verifier()
  if not verifier then return nil, err, kind end
  state, err, kind = pkce.state()
  if not state then return nil, err, kind end
  challenge, err, kind = pkce.challenge(verifier)
  if not challenge then return nil, err, kind end
  local a = provider.auth
  local fields = { response_type = "code", client_id = client.client_id,
    redirect_uri = a.redirect_uri, code_challenge = challenge, code_challenge_method = "S256",
    state = state, scope = scope, resource = d.resource }
  -- OpenID providers grant offline_access only with consent asked for
  for w in (scope or ""):gmatch("%S+") do
    if w == "offline_access" then fields.prompt = "consent" end
  end
  local target = url.with_query(meta.authorization_endpoint, fields)
  local called, answer, why = pcall(a.on_authorize, target)
  if not called then
    if errors.is(answer, "cancelled") then error(answer, 0) end
    return fail("auth", "auth.on_authorize raised: " .. errors.message(answer))
  end
  if answer == nil then
    return fail("auth", "auth.on_authorize gave no code" .. (why ~= nil
      and (": " .. errors.message(why)) or ""))
  end
  local code
  code, err, kind = redirect.code(answer, { state = state, redirect_uri = a.redirect_uri,
    issuer = not meta.defaults and meta.issuer or nil,
    iss_required = meta.authorization_response_iss_parameter_supported == true })
  if not code then return nil, err, kind end
  local tokens
  tokens, err, kind = token.request(d, client, { grant_type = "authorization_code",
    code = code, redirect_uri = a.redirect_uri, code_verifier = verifier },
    "the authorization code exchange", provider:proofs(d))
  if not tokens then
    if err.oauth_error == "invalid_client" and client.registered then
      provider:forget_client(d.issuer) -- registered again next time
    end
    return nil, err, kind
  end
  provider:keep(d, client, tokens, scope)
  return true
end

return M
