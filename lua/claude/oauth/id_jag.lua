--- Cross-app access (SEP-990, Enterprise-Managed Authorization; the IETF's
-- Identity Assertion JWT Authorization Grant): the enterprise's identity
-- provider exchanges the user's ID token for an ID-JAG (RFC 8693 token
-- exchange), a JWT the client then presents to the MCP server's
-- authorization server with the JWT bearer grant (RFC 7523 section 2.1).
--
-- `new(opts)` returns the function `auth.assertion` takes: the provider
-- calls it, once it has discovered the authorization server, with `{
-- issuer, resource, scope, ... }`, and each call is one exchange:
--
--     POST idp_token_endpoint
--       grant_type=urn:ietf:params:oauth:grant-type:token-exchange
--       requested_token_type=urn:ietf:params:oauth:token-type:id-jag
--       subject_token=<the ID token>
--       subject_token_type=urn:ietf:params:oauth:token-type:id_token
--       audience=<the authorization server's issuer>
--       resource=<the MCP server's resource>  scope=<the scope, if any>
--
-- with the client's credentials at the identity provider. The answer must
-- say `issued_token_type` id-jag and hold a JWT of `typ` oauth-id-jag+jwt:
-- anything else is not sent on. No message quotes the ID token, the ID-JAG,
-- the secret or the identity provider's answer (its OAuth error code and
-- description only).
-- @module claude.oauth.id_jag
local errors = require "claude.errors"
local url = require "claude.url"
local fetch = require "claude.oauth.fetch"
local client_auth = require "claude.oauth.client_auth"
local discovery = require "claude.oauth.discovery"
local jwt = require "claude.oauth.jwt"

local M = {}

local fail, misuse = errors.fail, errors.misuse

M.TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
M.ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
M.ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
M.TYP = "oauth-id-jag+jwt"

local FIELDS = { idp_token_endpoint = "string", id_token = "string or function",
  client_id = "string", client_secret = "string", token_endpoint_auth_method = "string" }
local METHODS = { client_secret_basic = true, client_secret_post = true, none = true }

-- A value of the identity provider's quoted only when short and plain.
local function quoted(v)
  if v == nil then return "(none given)" end
  if type(v) == "string" and #v <= 60 and v:match("^[%w%-_.:+/]+$") then
    return "'" .. v .. "'"
  end
  return "(not shown)"
end

-- Checks the options (misuse at the caller's line); returns a copy.
local function check(opts, fname)
  errors.check(opts, 1, fname, "table")
  errors.check_fields(opts, FIELDS, fname)
  local o = {}
  for k, v in pairs(opts) do
    local want = FIELDS[k]
    if not want:find(type(v), 1, true) then
      misuse("bad field '%s' to '%s' (%s expected, got %s)", k, fname, want, errors.typename(v))
    end
    o[k] = v
  end
  for _, k in ipairs { "idp_token_endpoint", "id_token", "client_id" } do
    if o[k] == nil or o[k] == "" then
      misuse("bad argument #1 to '%s' (field '%s' is needed)", fname, k)
    end
  end
  local _, err = discovery.check_secure(o.idp_token_endpoint,
    "the identity provider's token endpoint")
  if err then misuse("bad field 'idp_token_endpoint' to '%s' (%s)", fname, err.message) end
  local m = o.token_endpoint_auth_method
  if m == nil then
    o.token_endpoint_auth_method = o.client_secret and "client_secret_basic" or "none"
  elseif not METHODS[m] then
    misuse("bad field 'token_endpoint_auth_method' to '%s' ('client_secret_basic', "
      .. "'client_secret_post' or 'none' expected, got '%s')", fname, m)
  elseif m ~= "none" and not o.client_secret then
    misuse("bad field 'token_endpoint_auth_method' to '%s' ('%s' needs 'client_secret')", fname,
      m)
  end
  return o
end

-- The ID token: the string, or what the function gives now.
local function id_token(o)
  if type(o.id_token) == "string" then return o.id_token end
  local ok, t, why = pcall(o.id_token)
  if ok and type(t) == "string" and t ~= "" then return t end
  if not ok and errors.is(t, "cancelled") then error(t, 0) end
  return fail("auth", "the id_token function gave no ID token: " .. (ok
    and (why ~= nil and errors.message(why) or ("it returned " .. type(t)))
    or errors.message(t)))
end

-- One exchange: the ID-JAG for the authorization server `ctx.issuer` and
-- the resource `ctx.resource`.
local function exchange(o, ctx)
  local subject, err, kind = id_token(o)
  if not subject then return nil, err, kind end
  local form = { grant_type = M.TOKEN_EXCHANGE, requested_token_type = M.ID_JAG,
    subject_token = subject, subject_token_type = M.ID_TOKEN, audience = ctx.issuer,
    resource = ctx.resource, scope = ctx.scope }
  local headers = { ["Content-Type"] = "application/x-www-form-urlencoded",
    Accept = "application/json" }
  local ok
  ok, err, kind = client_auth.methods[o.token_endpoint_auth_method](
    { client_id = o.client_id, client_secret = o.client_secret }, form, headers)
  if not ok then return nil, err, kind end
  local where = "the identity provider's token endpoint " .. o.idp_token_endpoint
  local resp
  resp, err, kind = fetch.send { method = "POST", url = o.idp_token_endpoint,
    headers = headers, body = url.form(form), what = "the token exchange at " .. where }
  if not resp then return nil, err, kind end
  if resp.status ~= 200 then
    local text, code = fetch.oauth_error(resp)
    return fail("auth", string.format("%s refused the token exchange (ID token for ID-JAG): %s",
      where, text), { oauth_error = code, status = resp.status })
  end
  local t, why = fetch.object(resp)
  if not t then return fail("auth", "the answer of " .. where .. " is " .. why) end
  if t.issued_token_type ~= M.ID_JAG then
    return fail("auth", string.format("%s issued a token of type %s, not an ID-JAG (%s): it "
      .. "is not sent on", where, quoted(t.issued_token_type), M.ID_JAG))
  end
  local jag = t.access_token
  if type(jag) ~= "string" or jag == "" then
    return fail("auth", "the answer of " .. where .. " holds no access_token (the ID-JAG)")
  end
  local header = jwt.decode(jag)
  if type(header) ~= "table" then
    return fail("auth", "the ID-JAG " .. where .. " issued is not a JWT")
  end
  -- typ is a media type: case does not count, and "application/" may lead
  local typ = type(header.typ) == "string" and header.typ:lower():gsub("^application/", "")
  if typ ~= M.TYP then
    return fail("auth", string.format("the ID-JAG %s issued has typ %s, not '%s': it is not "
      .. "sent on", where, quoted(header.typ), M.TYP))
  end
  return jag
end

--- Makes the `auth.assertion` function of cross-app access.
-- @tparam table opts `idp_token_endpoint` (the identity provider's token
--   endpoint, HTTPS or loopback HTTP), `id_token` (the user's ID token from
--   that identity provider: a string, or a function returning one, called
--   for each exchange, so that it may renew it), `client_id` and
--   `client_secret` (this client at the identity provider; no secret: a
--   public client), `token_endpoint_auth_method` (`client_secret_basic`,
--   the default with a secret; `client_secret_post`; `none`)
-- @tparam string fname the public function, for messages
-- @return `function(ctx) -> ID-JAG | nil, err, "auth"`, `ctx` being `{
--   issuer, resource, scope }` (the provider's)
function M.new(opts, fname)
  local o = check(opts, fname)
  return errors.public(function(ctx)
    if type(ctx) ~= "table" or type(ctx.issuer) ~= "string" or type(ctx.resource) ~= "string"
    then
      misuse("bad argument #1 to the ID-JAG function ({ issuer = ..., resource = ... } "
        .. "expected)")
    end
    return exchange(o, ctx)
  end)
end

return M
