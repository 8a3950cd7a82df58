--- How the client authenticates itself at the token endpoint: one function
-- per method, each adding its fields to the form or its header to the
-- request, so that a method is added by adding a function.
--
-- * `client_secret_basic`: HTTP Basic with the form-encoded client ID and
--   secret (RFC 6749 section 2.3.1);
-- * `client_secret_post`: `client_id` and `client_secret` in the form;
-- * `none`: `client_id` only (a public client, PKCE protects the code);
-- * `private_key_jwt`: a signed assertion (RFC 7523 section 2.2), signed
--   here with `auth.private_key` (claude.oauth.jwt's client_assertion, the
--   audience being the issuer, the algorithm `auth.private_key_alg` or one
--   the server lists and the key serves), or made by the application's
--   `auth.client_assertion(ctx)`, `ctx` being `{ client_id, audience (the
--   issuer), token_endpoint, algorithms (the server's
--   token_endpoint_auth_signing_alg_values_supported, or nil) }`.
-- @module claude.oauth.client_auth
local core = require "claude.core"
local errors = require "claude.errors"
local url = require "claude.url"
local jwt = require "claude.oauth.jwt"

local M = {}

M.ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

local function no_secret(method)
  return errors.fail("auth", method .. " needs a client secret, and the client has none")
end

-- A list's plain words for a message (a server's list is its text, not ours).
local function listed(list)
  local out = {}
  for _, v in ipairs(list) do
    if type(v) == "string" and v:match("^[%w%-_.+]+$") and #v <= 20 then out[#out + 1] = v end
  end
  return table.concat(out, ", ")
end

--- The algorithm to sign a client assertion with: `wanted` when given (the
-- server must list it, when it lists any); else the first the server lists
-- that the key serves; else, when the server lists none, the key's first
-- (RS256, ES256/384/512 by curve, EdDSA). Decided before anything is sent.
-- @param key a claude.core.Key
-- @tparam[opt] string wanted `auth.private_key_alg`
-- @tparam[opt] table supported the server's token_endpoint_auth_signing_alg_values_supported
-- @tparam string issuer for messages
-- @return the algorithm | nil, err, "auth"
function M.signing_alg(key, wanted, supported, issuer)
  if type(supported) ~= "table" or supported[1] == nil then supported = nil end
  if wanted then
    if supported then
      for _, a in ipairs(supported) do if a == wanted then return wanted end end
      return errors.fail("auth", string.format("the authorization server '%s' takes client "
        .. "assertions signed with %s, not with %s (auth.private_key_alg)", issuer,
        listed(supported), wanted))
    end
    return wanted
  end
  local can = key:algorithms()
  if not supported then return can[1] end
  for _, a in ipairs(supported) do
    if a ~= "none" and key:supports(a) then return a end
  end
  local info = key:info()
  return errors.fail("auth", string.format("the private key (%s%s) signs with %s; the "
    .. "authorization server '%s' takes client assertions signed with %s only "
    .. "(token_endpoint_auth_signing_alg_values_supported)", info.kty,
    info.crv and (" " .. info.crv) or (info.bits and (" " .. info.bits .. " bits") or ""),
    table.concat(can, ", "), issuer, listed(supported)))
end

-- The assertion of a client with a private key: signed here, for the issuer.
local function signed(client, ctx)
  local alg, err, kind = M.signing_alg(client.private_key, client.private_key_alg,
    ctx.algorithms, ctx.audience)
  if not alg then return nil, err, kind end
  local assertion
  assertion, err = jwt.client_assertion { client_id = client.client_id,
    audience = ctx.audience, key = client.private_key, alg = alg, kid = client.private_key_kid }
  if not assertion then
    return errors.fail("auth", "signing the client assertion with auth.private_key failed: "
      .. errors.message(err))
  end
  return assertion
end

--- Method name -> function(client, form, headers, ctx) -> true | nil, err, "auth".
M.methods = {
  client_secret_basic = function(client, _, headers)
    if not client.client_secret then return no_secret("client_secret_basic") end
    headers.Authorization = "Basic " .. core.base64_encode(url.encode(client.client_id) .. ":"
      .. url.encode(client.client_secret))
    return true
  end,
  client_secret_post = function(client, form)
    if not client.client_secret then return no_secret("client_secret_post") end
    form.client_id, form.client_secret = client.client_id, client.client_secret
    return true
  end,
  none = function(client, form)
    form.client_id = client.client_id
    return true
  end,
  private_key_jwt = function(client, form, _, ctx)
    if client.private_key then
      local assertion, err, kind = signed(client, ctx)
      if not assertion then return nil, err, kind end
      form.client_id = client.client_id
      form.client_assertion_type = M.ASSERTION_TYPE
      form.client_assertion = assertion
      return true
    end
    if not client.assertion then
      return errors.fail("auth", "private_key_jwt needs auth.private_key or "
        .. "auth.client_assertion, and the client has neither")
    end
    local ok, assertion, why = pcall(client.assertion, ctx)
    if not ok or type(assertion) ~= "string" or assertion == "" then
      -- the reason, not the value: an assertion is a credential
      return errors.fail("auth", "auth.client_assertion gave no assertion: "
        .. tostring(ok and (why or "it returned " .. type(assertion)) or errors.message(assertion)))
    end
    form.client_id = client.client_id
    form.client_assertion_type = M.ASSERTION_TYPE
    form.client_assertion = assertion
    return true
  end,
}

local function includes(list, v)
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

--- Chooses the method for a client at a server: an assertion function means
-- `private_key_jwt`; else the method the client was registered with (or
-- was told to use) when the server takes it; else the safest the server
-- lists that the client can do. A server that lists nothing takes
-- `client_secret_basic` (RFC 8414's default).
-- @tparam table client `client_id`, `client_secret`, `token_endpoint_auth_method`,
--   `assertion`, `private_key`
-- @tparam table meta the authorization server's metadata
-- @treturn string the method's name
function M.select(client, meta)
  if client.assertion or client.private_key then return "private_key_jwt" end
  local supported = meta.token_endpoint_auth_methods_supported
  if type(supported) ~= "table" or supported[1] == nil then supported = nil end
  local given = client.token_endpoint_auth_method
  if given and M.methods[given] and (supported == nil or includes(supported, given)) then
    return given
  end
  local secret = client.client_secret ~= nil
  if supported == nil then return secret and "client_secret_basic" or "none" end
  if secret and includes(supported, "client_secret_basic") then return "client_secret_basic" end
  if secret and includes(supported, "client_secret_post") then return "client_secret_post" end
  if includes(supported, "none") then return "none" end
  return secret and "client_secret_post" or "none"
end

--- Adds the client's authentication to a token request.
-- @tparam table client
-- @tparam table meta the authorization server's metadata
-- @tparam table form the request's fields (changed)
-- @tparam table headers the request's headers (changed)
-- @tparam table ctx for an assertion function
-- @return true | nil, err, "auth"
function M.apply(client, meta, form, headers, ctx)
  local method = M.select(client, meta)
  return M.methods[method](client, form, headers, ctx)
end

return M
