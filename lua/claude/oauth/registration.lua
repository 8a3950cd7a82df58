--- How the client makes itself known to an authorization server it has no
-- credentials for: a client ID metadata document (the client ID is the
-- document's HTTPS URL, for servers that say
-- `client_id_metadata_document_supported`), or dynamic client registration
-- (RFC 7591) at the server's `registration_endpoint`.
-- @module claude.oauth.registration
local json = require "claude.json"
local errors = require "claude.errors"
local url = require "claude.url"
local fetch = require "claude.oauth.fetch"

local M = {}

local fail = errors.fail

--- The client of a client ID metadata document, when the authorization
-- server takes one and the application has one.
-- @tparam table meta the authorization server's metadata
-- @tparam[opt] string document_url `auth.client_metadata_url`
-- @return `{ client_id = document_url, metadata_document = true }` or nil
function M.metadata_document(meta, document_url)
  if document_url and meta.client_id_metadata_document_supported == true then
    return { client_id = document_url, metadata_document = true }
  end
  return nil
end

local function includes(list, v)
  if type(list) ~= "table" then return false end
  for _, x in ipairs(list) do if x == v then return true end end
  return false
end

-- The token endpoint authentication method to ask for: none (a public
-- client: nothing to keep secret) when the server takes it, else a secret.
local function wanted_method(meta, grant)
  local supported = meta.token_endpoint_auth_methods_supported
  if type(supported) ~= "table" then return nil end -- the server's default (RFC 7591)
  local order = not grant.interactive
    and { "client_secret_basic", "client_secret_post" }
    or { "none", "client_secret_basic", "client_secret_post" }
  for _, m in ipairs(order) do
    if includes(supported, m) then return m end
  end
  return nil
end

-- The OpenID `application_type` a registration declares (SEP-837): `native` for a redirect
-- to a loopback host or to a scheme of its own (RFC 8252), `web` otherwise (a client
-- without a person has no redirect: `web`, OpenID's default).
function M.application_type(redirect_uri)
  if not redirect_uri then return "web" end
  local scheme = (redirect_uri:match("^(%a[%w+.-]*):") or ""):lower()
  if scheme ~= "http" and scheme ~= "https" then return "native" end
  local u = url.parse(redirect_uri)
  if not u then return "web" end
  if u.host and url.is_loopback(u.host) then return "native" end
  return "web"
end

--- Registers a client (RFC 7591).
-- @tparam table d the discovery (`meta`, `issuer`)
-- @tparam table o `client_name`, `redirect_uri`, `grant` (claude.oauth.grants), `scope`,
--   `application_type` (default: from the redirect URI)
-- @return `{ client_id, client_secret, client_secret_expires_at,
--   token_endpoint_auth_method, registered = true }` | nil, err, "auth"
function M.register(d, o)
  local endpoint = d.meta.registration_endpoint
  if type(endpoint) ~= "string" then
    return fail("auth", string.format("the authorization server '%s' offers no dynamic "
      .. "client registration and no client ID metadata document was usable: give "
      .. "auth.client_id (a pre-registered client)%s", d.issuer,
      d.meta.client_id_metadata_document_supported == true
        and " or auth.client_metadata_url" or ""))
  end
  local interactive = o.grant.interactive
  local body = {
    client_name = o.client_name or "claudelua",
    grant_types = o.grant.registration.grant_types,
    response_types = o.grant.registration.response_types,
    redirect_uris = interactive and { o.redirect_uri } or nil,
    token_endpoint_auth_method = wanted_method(d.meta, o.grant),
    scope = o.scope,
    application_type = o.application_type
      or M.application_type(interactive and o.redirect_uri or nil),
  }
  local resp, err, kind = fetch.send { method = "POST", url = endpoint, what = "the client "
    .. "registration", body = json.encode(body), headers = { ["Content-Type"] =
      "application/json", Accept = "application/json" } }
  if not resp then return nil, err, kind end
  if resp.status ~= 200 and resp.status ~= 201 then
    local text, code = fetch.oauth_error(resp)
    return fail("auth", string.format("the authorization server '%s' refused the client "
      .. "registration: %s", d.issuer, text), { oauth_error = code, status = resp.status })
  end
  local info, why = fetch.object(resp)
  if not info or type(info.client_id) ~= "string" or info.client_id == "" then
    return fail("auth", string.format("the client registration at %s answered without a "
      .. "client_id%s", endpoint, why and (" (" .. why .. ")") or ""))
  end
  local secret = info.client_secret
  return { client_id = info.client_id,
    client_secret = type(secret) == "string" and secret ~= "" and secret or nil,
    client_secret_expires_at = math.type(info.client_secret_expires_at) == "integer"
      and info.client_secret_expires_at or nil,
    token_endpoint_auth_method = type(info.token_endpoint_auth_method) == "string"
      and info.token_endpoint_auth_method or nil,
    registered = true }
end

return M
