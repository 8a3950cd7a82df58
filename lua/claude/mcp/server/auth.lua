--- OAuth bearer checks of the Streamable HTTP transport: the resource server's half of MCP
-- authorization (specification 2025-06-18 and 2025-11-25; RFC 6750, RFC 9728, RFC 7662,
-- RFC 8707).
--
--     claude.server("notes", tools, { auth = {
--       verify = function(token, request) return claims | nil, err end,
--       authorization_servers = { "https://as.example" },
--       required_scopes = { "notes:read" },
--     } })
--
-- A server (or the whole transport: `claude.mcp.server.http.listen(servers, { auth = ... })`, the
-- `--introspection-url`/`--jwks-url` flags of `claudelua mcp`) given `auth` serves only
-- requests that carry `Authorization: Bearer TOKEN` with a token its verifier accepts:
--
-- * `verify(token, request)`: a function (it may wait: it runs in a task of the request) that
--   returns the token's claims, or `nil, err [, kind]` (kinds `unavailable`, `timeout`,
--   `connection`, `tls`, `http` mean "cannot tell now": 503; any other: 401);
-- * `introspection_url` (+ `client_id`, `client_secret`): RFC 7662 token introspection
--   at the authorization server (`claude.oauth.introspection`);
-- * `jwks_url` (+ `issuer`, `audience`, `algorithms`): a signed JWT checked against the
--   authorization server's keys (`claude.oauth.jwks`).
--
-- Then the transport checks what every verifier leaves to it: `exp` (an expired token is
-- refused even inside a live session), `nbf`, the audience (`aud` must name this resource
-- or a resource above it: RFC 8707), and `required_scopes` (403 `insufficient_scope`).
-- Each refusal is a `WWW-Authenticate: Bearer` challenge naming the protected resource
-- metadata (RFC 9728), which is served at `/.well-known/oauth-protected-resource<path>`.
--
-- The token itself is never written anywhere: not in an answer, not in a log line, not in
-- `ctx.auth` (MCP forbids passing it on); a verifier's error text is searched for it and
-- the token replaced before that text is used. See docs/oauth.md.
-- @module claude.mcp.server.auth
local async = require "claude.async"
local json = require "claude.json"
local errors = require "claude.errors"
local urls = require "claude.url"
local introspection = require "claude.oauth.introspection"
local resource_option = require "claude.oauth.resource"

local M = {}

local type, fmt, concat = type, string.format, table.concat
local misuse, typename = errors.misuse, errors.typename

--- The well-known prefix of the protected resource metadata (RFC 9728 section 3).
M.WELL_KNOWN = "/.well-known/oauth-protected-resource"

--- The longest `Authorization` header accepted (bytes): a larger one gets 431.
M.MAX_AUTHORIZATION = 16384

--- Seconds a verifier may take before the request gets 503.
M.VERIFY_TIMEOUT = 30

-- Seconds a token may be used before its `nbf` (clocks differ a little); none after `exp`.
local NBF_LEEWAY = 60

-- The kinds of a verifier's failure that mean "cannot tell now" (503), not "bad token".
local UNAVAILABLE = { unavailable = true, timeout = true, connection = true, tls = true,
  http = true, ENOSYS = true }

-- The option's shape: claude.oauth.resource (the DSL checks it too, without this transport).
M.problem, M.check = resource_option.problem, resource_option.check

-- The origin of an absolute URL as written (its case and port kept: a token's `aud` is
-- compared with the text the metadata gave), and the parsed URL; nil when not one.
local function origin_of(uri)
  local u = urls.parse(uri)
  if not u then return nil end
  return uri:sub(1, #uri - #u.tail), u
end


--- A verifier that asks the authorization server about each token (RFC 7662 token
-- introspection): `claude.oauth.introspection.verifier`, which the `introspection_url`
-- option builds.
-- @function introspection
M.introspection = introspection.verifier

---------------------------------------------------------------------------------------------
-- Verifiers, compiled once per `auth` table
---------------------------------------------------------------------------------------------

local compiled = setmetatable({}, { __mode = "k" })

-- The audiences a JWT may name for `resource`: the resource and each resource above it on
-- its origin, with and without a trailing slash (the rule audience_ok applies to other
-- verifiers' claims; a JWT access token must carry `aud`, RFC 9068).
local function audiences_of(resource)
  local origin, u = origin_of(resource)
  if not origin then return { resource } end
  local list = { origin, origin .. "/" }
  local prefix = origin
  for segment in u.path:gmatch("[^/]+") do
    prefix = prefix .. "/" .. segment
    list[#list + 1] = prefix
    list[#list + 1] = prefix .. "/"
  end
  return list
end

-- One verifier per option and resource (an introspection cache, a fetched key set).
local function verifier_of(spec, resource)
  local per_resource = compiled[spec]
  if not per_resource then
    per_resource = {}
    compiled[spec] = per_resource
  end
  local v = per_resource[resource]
  if v then return v end
  if spec.verify then
    v = spec.verify
  elseif spec.introspection_url then
    v = introspection.verifier { introspection_url = spec.introspection_url,
      client_id = spec.client_id, client_secret = spec.client_secret,
      client_auth = spec.client_auth, timeout = spec.timeout, cache = spec.cache }
  else
    local jwks = require "claude.oauth.jwks"
    v = jwks.verifier { jwks_url = spec.jwks_url, issuer = spec.issuer,
      audience = spec.audience or audiences_of(resource), algorithms = spec.algorithms }
  end
  per_resource[resource] = v
  return v
end

---------------------------------------------------------------------------------------------
-- Resources
---------------------------------------------------------------------------------------------

-- A resource identifier as compared: scheme and host lower-cased, the default port left
-- out (claude.url.canonical), and neither a fragment nor one trailing slash counted
-- ("HTTPS://H:443/a/b/#x" -> "https://h/a/b"); true when it is an absolute URL. An
-- audience that is not a URL (a URN, a name) is compared as written, its fragment and
-- trailing slash aside.
local function normalized(uri)
  local u = urls.parse_canonical(uri)
  if not u then return (uri:gsub("#.*$", ""):gsub("/$", "")), false end
  return (urls.canonical(u):gsub("/$", "")), true
end

--- The URL of the protected resource metadata of `resource` (RFC 9728 section 3.1: the
-- well-known prefix between the host and the path).
-- @tparam string resource
-- @treturn string
function M.metadata_url(resource)
  local origin, u = origin_of(resource)
  if not origin then misuse("bad argument #1 to 'metadata_url' (an absolute URL expected)") end
  return origin .. M.WELL_KNOWN .. u.path:gsub("/$", "")
end

-- Whether the token's audience (a string or a list) names the endpoint's resource: one of
-- the option's `audience` when it gives them (`ep.accepted`, a set), else the resource or a
-- resource above it (a token for https://h/mcp serves https://h/mcp/files too).
local function audience_ok(aud, ep)
  if ep.accepted == false or aud == nil then return true end
  local want = ep.canonical
  for _, a in ipairs(type(aud) == "table" and aud or { aud }) do
    if type(a) == "string" then
      if ep.accepted then
        if ep.accepted[a] then return true end
      else
        local n, is_url = normalized(a)
        if n == want or (is_url and want:sub(1, #n + 1) == n .. "/") then return true end
      end
    end
  end
  return false
end

local function quoted(s)
  -- the characters RFC 6750 allows in an auth-param value: no quote, no backslash, no
  -- control character
  return (s:gsub("[^ !#-Z%[%]^-~]", "?"))
end

-- A JSON array of the strings of `t`, a copy (json.array marks the table it is given, and
-- `t` is the user's).
local function json_list(t)
  return json.array(table.move(t, 1, #t, 1, {}))
end

--- What an endpoint serves for its `auth`: the verifier and the fixed parts of its answers.
-- @tparam table spec the checked `auth` option
-- @tparam string resource the endpoint's resource identifier (its public URL)
-- @treturn table
function M.endpoint(spec, resource)
  local required = spec.required_scopes or {}
  local supported = spec.scopes_supported
  if not supported and #required > 0 then supported = required end
  local challenge_scope = #required > 0 and concat(required, " ")
    or supported and concat(supported, " ") or nil
  local doc = {
    resource = resource,
    authorization_servers = json_list(spec.authorization_servers or { spec.issuer }),
    scopes_supported = supported and json_list(supported) or nil,
    bearer_methods_supported = json.array { "header" },
    resource_name = spec.resource_name,
    resource_documentation = spec.resource_documentation,
  }
  local prm = M.metadata_url(resource)
  local scope = challenge_scope and fmt(', scope="%s"', quoted(challenge_scope)) or ""
  local accepted = spec.audience
  if accepted then
    accepted = {}
    for _, a in ipairs(type(spec.audience) == "table" and spec.audience or { spec.audience }) do
      accepted[a] = true
    end
  end
  return {
    spec = spec, resource = resource, verify = verifier_of(spec, resource), required = required,
    metadata = json.encode(doc), metadata_url = prm, canonical = normalized(resource),
    accepted = accepted, timeout = spec.timeout or M.VERIFY_TIMEOUT,
    -- the challenges' fixed parts: the one without an error, and what follows an error's
    challenge = fmt('Bearer resource_metadata="%s"%s', prm, scope),
    challenge_tail = fmt('%s, resource_metadata="%s"', scope, prm),
  }
end

---------------------------------------------------------------------------------------------
-- Checking a request
---------------------------------------------------------------------------------------------

--- `text` with every occurrence of `token` replaced by `[token]`: for a verifier's error
-- text, which may quote what it was given.
-- @tparam string text
-- @tparam[opt] string token
-- @treturn string
function M.redact(text, token)
  text = tostring(text)
  if not token or #token < 4 then return text end
  return (text:gsub(token:gsub("%p", "%%%0"), "[token]")) -- the token as plain text
end

-- `WWW-Authenticate` for a refusal: the MCP specification's examples, in their order.
local function challenge(ep, err, description)
  if not err then return ep.challenge end
  return fmt('Bearer error="%s", error_description="%s"%s', err, quoted(description),
    ep.challenge_tail)
end

-- A refusal: status, WWW-Authenticate (or nil), message of the JSON-RPC error body.
local function refuse(status, ep, err, description, message)
  return nil, status, ep and challenge(ep, err, description), message
end

-- The scopes of a token's claims: `scope` (RFC 7662, RFC 9068: space-separated), `scp`
-- (a list or a string, as some servers send), or `scopes` (a list a verify function made).
local function scopes_of(claims)
  local s = claims.scopes or claims.scope or claims.scp
  local list = {}
  if type(s) == "string" then
    for item in s:gmatch("%S+") do list[#list + 1] = item end
  elseif type(s) == "table" then
    for _, item in ipairs(s) do
      if type(item) == "string" then list[#list + 1] = item end
    end
  end
  return list
end

local AuthInfo = { __name = "claude.mcp.AuthInfo" }
AuthInfo.__index = {
  --- Whether the token was granted `scope`.
  has_scope = function(self, scope)
    for _, s in ipairs(self.scopes) do
      if s == scope then return true end
    end
    return false
  end,
}
AuthInfo.__tostring = function(a)
  return fmt("claude.mcp.AuthInfo (%s, %s)", tostring(a.subject or a.client_id),
    concat(a.scopes, " "))
end

local function string_or_nil(v)
  return type(v) == "string" and v or nil
end

-- claims -> what ctx.auth holds (no token: MCP forbids passing it on)
local function auth_info(claims, resource)
  return setmetatable({
    subject = string_or_nil(claims.sub),
    client_id = string_or_nil(claims.client_id) or string_or_nil(claims.azp)
      or string_or_nil(claims.cid),
    scopes = scopes_of(claims),
    expires_at = type(claims.exp) == "number" and claims.exp or nil,
    issuer = string_or_nil(claims.iss),
    resource = resource,
    claims = claims,
  }, AuthInfo)
end

-- Who a session belongs to: the subject (or the client, for a token of no user) at its
-- issuer. nil: the token says nobody, and the session cannot be bound.
local function principal(info)
  local who = info.subject and "sub:" .. info.subject
    or info.client_id and "client:" .. info.client_id
  if not who then return nil end
  return (info.issuer or "") .. "\n" .. who
end

-- The token of `Authorization: Bearer TOKEN` | nil, why (no header, another scheme) |
-- false, description (a malformed header)
local function bearer(value)
  if value == nil then return nil, "no Authorization header" end
  local scheme, rest = value:match("^%s*(%S+)%s*(.-)%s*$")
  if not scheme or scheme:lower() ~= "bearer" then
    return nil, "the Authorization header is not a Bearer token"
  end
  -- RFC 6750 section 2.1: b68token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
  if rest == "" or not rest:find("^[%w%-%._~%+/]+=*$") then
    return false, "the Authorization header is not 'Bearer' and one token"
  end
  return rest
end

-- Runs the verifier in a task of its own, bounded by `ep.timeout`.
-- -> true, claims, err, kind | false, error (raised, or timed out)
local function run_verify(ep, token, request)
  local task = async.spawn_observed(ep.verify, token, request)
  local ok, claims, err, kind = task:join(ep.timeout > 0 and ep.timeout or nil)
  if not ok and not task:done() then task:cancel("the request ended") end
  return ok, claims, err, kind
end

--- Check a request's bearer token (inside the request's task: the verifier may wait).
-- @tparam table ep from `endpoint`
-- @tparam table req the HTTP request (`headers`, `query`, `method`, `path`, ...)
-- @tparam function log gets a line for what the operator must see (never the token)
-- @return the request's `ctx.auth` (a `claude.mcp.AuthInfo`) and its principal, or nil,
--   status, WWW-Authenticate (or nil), message
function M.authenticate(ep, req, log)
  local value = req.headers.authorization
  if value and #value > M.MAX_AUTHORIZATION then
    return refuse(431, nil, nil, nil, fmt("Request Header Fields Too Large: the Authorization "
      .. "header is over %d bytes", M.MAX_AUTHORIZATION))
  end
  local q = req.query
  if q and (("&" .. q):find("&access_token=", 1, true)) then
    -- MCP: tokens only in the header (a URL ends up in logs and histories)
    return refuse(400, ep, "invalid_request", "access tokens are not accepted in the URL",
      "Bad Request: an access token in the query string is refused; send it in the "
      .. "Authorization header")
  end
  local token, why = bearer(value)
  if token == false then
    return refuse(400, ep, "invalid_request", why, "Bad Request: " .. why)
  end
  if not token then
    return refuse(401, ep, nil, nil, "Unauthorized: " .. why .. " (this server needs "
      .. "an OAuth access token: Authorization: Bearer TOKEN)")
  end
  local request = { method = req.method, path = req.path, headers = req.headers,
    remote_address = req.remote_address, resource = ep.resource }
  local ok, claims, err, kind = run_verify(ep, token, request)
  if not ok then
    if errors.is(claims, "timeout") then
      log(fmt("auth: verifying a token took over %g s", ep.timeout))
      return refuse(503, nil, nil, nil, "Service Unavailable: the access token could not be "
        .. "verified in time")
    end
    log("auth: the token verifier raised an error: " .. M.redact(errors.message(claims), token))
    return refuse(500, nil, nil, nil, "Internal Server Error: the access token could not be "
      .. "verified")
  end
  if claims == nil or claims == false then
    local text = M.redact(errors.message(err == nil and "the access token is not valid"
      or err), token)
    kind = kind or (errors.is(err) and err.kind)
    if UNAVAILABLE[kind] then
      log("auth: cannot verify tokens now: " .. text)
      return refuse(503, nil, nil, nil, "Service Unavailable: the access token cannot be "
        .. "verified now")
    end
    text = text:sub(1, 200)
    return refuse(401, ep, "invalid_token", text, "Unauthorized: " .. text)
  end
  if type(claims) ~= "table" then
    log(fmt("auth: the token verifier returned a %s (a table of claims expected)",
      typename(claims)))
    return refuse(500, nil, nil, nil, "Internal Server Error: the access token could not be "
      .. "verified")
  end
  local now = os.time()
  if type(claims.exp) == "number" and claims.exp <= now then
    return refuse(401, ep, "invalid_token", "the access token expired",
      "Unauthorized: the access token expired")
  end
  if type(claims.nbf) == "number" and claims.nbf > now + NBF_LEEWAY then
    return refuse(401, ep, "invalid_token", "the access token is not valid yet",
      "Unauthorized: the access token is not valid yet")
  end
  if not audience_ok(claims.aud, ep) then
    return refuse(401, ep, "invalid_token", "the access token was not issued for this resource",
      "Unauthorized: the access token was not issued for this resource (" .. ep.resource .. ")")
  end
  local info = auth_info(claims, ep.resource)
  local missing = {}
  for _, s in ipairs(ep.required) do
    if not info:has_scope(s) then missing[#missing + 1] = s end
  end
  if #missing > 0 then
    return refuse(403, ep, "insufficient_scope", "the access token lacks scope "
      .. concat(missing, " "), "Forbidden: the access token lacks the scope "
      .. concat(missing, " "))
  end
  return info, principal(info)
end

--- Serve the protected resource metadata document (RFC 9728): GET (and a CORS preflight,
-- so that browser clients can read it); no token needed.
-- @tparam table ep from `endpoint`
-- @param res the HTTP response
-- @tparam string method the request's method
function M.serve_metadata(ep, res, method)
  if method == "GET" or method == "HEAD" then
    return res:respond(200, { ["content-type"] = "application/json",
      ["access-control-allow-origin"] = "*", ["cache-control"] = "max-age=3600" }, ep.metadata)
  end
  if method == "OPTIONS" then
    return res:respond(204, { ["access-control-allow-origin"] = "*",
      ["access-control-allow-methods"] = "GET, OPTIONS",
      ["access-control-allow-headers"] = "mcp-protocol-version", allow = "GET, OPTIONS" })
  end
  res:respond(405, { allow = "GET, OPTIONS", ["content-type"] = "application/json" },
    json.encode { error = "method_not_allowed", error_description = "GET the metadata" })
end

M.AuthInfo = AuthInfo
return M
