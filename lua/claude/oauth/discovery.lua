--- Finding an MCP server's authorization server, as the MCP specification
-- (2025-06-18, 2025-11-25) orders it:
--
-- 1. the `resource_metadata` URL of the 401's `WWW-Authenticate` challenge,
--    else the protected resource metadata (RFC 9728) at the path-aware
--    well-known URL of the server, then at the root;
-- 2. the first of its `authorization_servers`, whose metadata is read from
--    RFC 8414's well-known URL, then OpenID Connect discovery's (for an issuer
--    with a path: path inserted, then OIDC with the path inserted, then OIDC
--    with the path appended);
-- 3. without any protected resource metadata (a 2025-03-26 server), the
--    server's origin is the authorization server, and without metadata there
--    its default endpoints `/authorize`, `/token`, `/register`.
--
-- Every document is checked before it is believed: the resource metadata
-- must be for this server (same origin, a path prefix), the authorization
-- server metadata must name the issuer it was fetched for, and every
-- authorization server URL must be HTTPS unless its host is loopback.
-- @module claude.oauth.discovery
local errors = require "claude.errors"
local url = require "claude.url"
local fetch = require "claude.oauth.fetch"

local M = {}

local fail = errors.fail

---------------------------------------------------------------------------------------------
-- WWW-Authenticate (RFC 9110 section 11.6.1)
---------------------------------------------------------------------------------------------

local TOKEN = "^[%w!#%$%%&'%*%+%-%.%^_`|~]+"

--- Parses a `WWW-Authenticate` value into its challenges.
-- @tparam string header
-- @treturn table a list of `{ scheme = lower-case name, params = { lower-case
--   name = value }, token68 = string|nil }`; what cannot be parsed ends the list
function M.challenges(header)
  local list = {}
  if type(header) ~= "string" then return list end
  local i, n = 1, #header
  local function skip(set) i = header:find("[^" .. set .. "]", i) or n + 1 end
  local function token()
    local s, e = header:find(TOKEN, i)
    if not s then return nil end
    i = e + 1
    return header:sub(s, e)
  end
  local function quoted() -- at the opening quote
    local out = {}
    i = i + 1
    while i <= n do
      local c = header:sub(i, i)
      if c == "\\" then
        out[#out + 1] = header:sub(i + 1, i + 1)
        i = i + 2
      elseif c == '"' then
        i = i + 1
        return table.concat(out)
      else
        out[#out + 1] = c
        i = i + 1
      end
    end
    return nil -- no closing quote
  end
  local current
  while true do
    skip(" \t,")
    if i > n then break end
    local name = token()
    if not name then break end
    skip(" \t")
    if current and header:sub(i, i) == "=" then
      i = i + 1
      skip(" \t")
      local value
      if header:sub(i, i) == '"' then value = quoted() else value = token() or "" end
      if value == nil then break end
      local key = name:lower()
      if current.params[key] == nil then current.params[key] = value end -- the first counts
    else
      current = { scheme = name:lower(), params = {} }
      list[#list + 1] = current
      -- a token68 (`Basic dXNlcjpw`), told from a parameter by what follows it
      local s, e = header:find("^[%w%-%._~%+/]+=*[ \t]*", i)
      if s and (e == n or header:sub(e + 1, e + 1) == ",") then
        current.token68 = header:sub(s, e):gsub("[ \t]+$", "")
        i = e + 1
      end
    end
  end
  return list
end

--- The parameters of the `Bearer` challenge of a `WWW-Authenticate` value
-- (`resource_metadata`, `scope`, `error`, ...), else of its `DPoP` challenge (RFC 9449
-- section 7.1: a server that takes DPoP tokens only), or an empty table.
function M.bearer(header)
  local dpop
  for _, c in ipairs(M.challenges(header)) do
    if c.scheme == "bearer" then return c.params end
    if c.scheme == "dpop" then dpop = dpop or c.params end
  end
  return dpop or {}
end

---------------------------------------------------------------------------------------------
-- Well-known URLs
---------------------------------------------------------------------------------------------

local function trimmed_path(u)
  return (u.path:gsub("/$", ""))
end

--- The protected resource metadata URLs of an MCP server (RFC 9728 section
-- 3.1), in the order they are tried: path-aware, then at the root.
-- @tparam table server a parsed URL
-- @treturn table a list of URLs
function M.resource_metadata_urls(server)
  local origin, path = url.origin(server), trimmed_path(server)
  local root = origin .. "/.well-known/oauth-protected-resource"
  if path == "" then return { root } end
  return { root .. path .. (server.query and ("?" .. server.query) or ""), root }
end

--- The metadata URLs of an authorization server (RFC 8414 section 3.1, then
-- OpenID Connect discovery), in the order the MCP specification gives.
-- @tparam table issuer a parsed URL
-- @treturn table a list of `{ url, kind = "oauth"|"oidc" }`
function M.server_metadata_urls(issuer)
  local origin, path = url.origin(issuer), trimmed_path(issuer)
  if path == "" then
    return { { url = origin .. "/.well-known/oauth-authorization-server", kind = "oauth" },
      { url = origin .. "/.well-known/openid-configuration", kind = "oidc" } }
  end
  return { { url = origin .. "/.well-known/oauth-authorization-server" .. path, kind = "oauth" },
    { url = origin .. "/.well-known/openid-configuration" .. path, kind = "oidc" },
    { url = origin .. path .. "/.well-known/openid-configuration", kind = "oidc" } }
end

---------------------------------------------------------------------------------------------
-- Checks
---------------------------------------------------------------------------------------------

--- Is `resource` (from protected resource metadata) this server's? Same
-- origin, and the server's path within the resource's (RFC 9728 section 3.3,
-- with the path prefix the MCP SDKs allow).
-- @tparam table server a parsed URL
-- @tparam string resource
function M.resource_allowed(server, resource)
  local r = url.parse_canonical(resource)
  if not r or r.fragment then return false end
  if url.origin(r) ~= url.origin(server) then return false end
  local want = trimmed_path(r) .. "/"
  local have = trimmed_path(server) .. "/"
  return have:sub(1, #want) == want
end

--- Does metadata naming issuer `named` describe the issuer `expected` it was fetched for?
-- The same string (RFC 8414 section 3.3), or `expected` with one trailing slash more (the
-- way resource metadata often lists an issuer); nothing else is normalized.
function M.issuer_matches(named, expected)
  return named == expected or (expected:sub(-1) == "/" and named == expected:sub(1, -2))
end

--- Checks that an authorization server URL is HTTPS, or plain HTTP on a
-- loopback host (decided from the URL alone, before connecting).
-- @return the parsed URL | nil, err, "auth"
function M.check_secure(s, what)
  local u, why = url.parse_canonical(s)
  if not u then
    return fail("auth", string.format("%s '%s' is not a usable URL: %s", what, tostring(s), why))
  end
  if u.scheme == "https" then return u end
  if u.scheme == "http" and url.is_loopback(u.host) then return u end
  return fail("auth", string.format("%s '%s' is not HTTPS (plain HTTP is allowed only on "
    .. "a loopback host)", what, s), { url = s })
end

local ENDPOINTS = { "authorization_endpoint", "token_endpoint", "registration_endpoint" }

-- Checks a metadata document's endpoints: strings, and HTTPS or loopback.
local function check_endpoints(meta, where)
  for _, field in ipairs(ENDPOINTS) do
    local v = meta[field]
    if v ~= nil then
      if type(v) ~= "string" then
        return fail("auth", string.format("%s: '%s' is not a string", where, field))
      end
      local ok, err, kind = M.check_secure(v, "the authorization server's " .. field)
      if not ok then return nil, err, kind end
    end
  end
  if type(meta.token_endpoint) ~= "string" then
    return fail("auth", where .. " names no token_endpoint")
  end
  return true
end

---------------------------------------------------------------------------------------------
-- Fetching
---------------------------------------------------------------------------------------------

-- GETs a metadata document: the object | false (not there: 3xx or 4xx) |
-- nil, err (unreachable, 5xx, not a JSON object).
local function get(u, what, headers)
  local resp, err, kind = fetch.send { url = u, headers = headers, what = what }
  if not resp then return nil, err, kind end
  if resp.status >= 500 then
    return fail("auth", string.format("%s at %s: HTTP %d", what, u, resp.status),
      { status = resp.status })
  end
  if resp.status < 200 or resp.status >= 300 then return false end
  local obj, why = fetch.object(resp)
  if not obj then return fail("auth", string.format("%s at %s is %s", what, u, why)) end
  return obj
end

-- The authorization server's metadata, checked: `strict` (the issuer came
-- from resource metadata) wants `issuer` to name it; otherwise (a
-- 2025-03-26 server's own origin) it must be on that origin.
-- @return meta, url | false (none found) | nil, err
local function server_metadata(issuer, issuer_u, strict, headers)
  for _, c in ipairs(M.server_metadata_urls(issuer_u)) do
    local what = c.kind == "oauth" and "the authorization server metadata"
      or "the OpenID provider metadata"
    local meta, err, kind = get(c.url, what, headers)
    if meta == nil then return nil, err, kind end
    if meta then
      local where = what .. " at " .. c.url
      if type(meta.issuer) ~= "string" then
        return fail("auth", where .. " names no issuer")
      end
      if strict and not M.issuer_matches(meta.issuer, issuer) then
        return fail("auth", string.format("%s is for issuer '%s', not for '%s' (a metadata "
          .. "document must describe the server it was fetched for)", where, meta.issuer,
          issuer), { issuer = meta.issuer })
      end
      if not strict then
        local iu = url.parse_canonical(meta.issuer)
        if not iu or url.origin(iu) ~= url.origin(issuer_u) then
          return fail("auth", string.format("%s names issuer '%s', on another origin than "
            .. "%s", where, meta.issuer, url.origin(issuer_u)), { issuer = meta.issuer })
        end
      end
      local ok, eerr, ekind = check_endpoints(meta, where)
      if not ok then return nil, eerr, ekind end
      meta.kind = c.kind
      return meta, c.url
    end
  end
  return false
end

--- Discovers the authorization server of an MCP server.
-- @tparam table server the MCP server's URL, parsed
-- @tparam table hint the parameters of the 401's Bearer challenge (may be empty)
-- @tparam table headers sent with every metadata request (`MCP-Protocol-Version`)
-- @return `{ resource = the resource indicator to send, scopes_supported =
--   the resource's (or nil), issuer = the authorization server, meta = its
--   metadata (defaults for a 2025-03-26 server without any), legacy = true
--   without resource metadata, resource_metadata_url = where it was found }`
--   | nil, err, "auth"
function M.discover(server, hint, headers)
  headers = headers or {}
  headers.Accept = "application/json"
  local seen = {}
  local candidates = {}
  if type(hint.resource_metadata) == "string" and hint.resource_metadata ~= "" then
    candidates[1] = hint.resource_metadata
  end
  for _, u in ipairs(M.resource_metadata_urls(server)) do candidates[#candidates + 1] = u end
  local prm, prm_url
  for _, u in ipairs(candidates) do
    if not seen[u] then
      seen[u] = true
      local doc, err, kind = get(u, "the protected resource metadata", headers)
      if doc == nil then return nil, err, kind end
      if doc then
        prm, prm_url = doc, u
        break
      end
    end
  end
  if prm then
    local where = "the protected resource metadata at " .. prm_url
    if type(prm.resource) ~= "string" then return fail("auth", where .. " names no resource") end
    if not M.resource_allowed(server, prm.resource) then
      return fail("auth", string.format("%s is for resource '%s', not for this server (%s): "
        .. "a metadata document that points elsewhere is not followed", where, prm.resource,
        url.canonical(server)), { resource = prm.resource })
    end
    local servers = prm.authorization_servers
    if type(servers) ~= "table" or type(servers[1]) ~= "string" then
      return fail("auth", where .. " names no authorization server")
    end
    local issuer = servers[1]
    local issuer_u, err, kind = M.check_secure(issuer, "the authorization server")
    if not issuer_u then return nil, err, kind end
    local meta, murl_or_err, mkind = server_metadata(issuer, issuer_u, true, headers)
    if meta == nil then return nil, murl_or_err, mkind end
    if not meta then
      return fail("auth", string.format("the authorization server '%s' publishes no metadata "
        .. "(RFC 8414 or OpenID Connect discovery)", issuer))
    end
    local scopes = prm.scopes_supported
    return { resource = prm.resource, issuer = issuer, meta = meta,
      scopes_supported = type(scopes) == "table" and scopes or nil,
      resource_metadata_url = prm_url, metadata_url = murl_or_err }
  end
  -- a 2025-03-26 server: its origin is the authorization server
  local origin = url.origin(server)
  local origin_u, err, kind = M.check_secure(origin, "the authorization server")
  if not origin_u then return nil, err, kind end
  local meta, murl_or_err, mkind = server_metadata(origin, origin_u, false, headers)
  if meta == nil then return nil, murl_or_err, mkind end
  if not meta then
    meta = { issuer = origin, authorization_endpoint = origin .. "/authorize",
      token_endpoint = origin .. "/token", registration_endpoint = origin .. "/register",
      defaults = true }
  end
  return { resource = url.canonical(server), issuer = meta.issuer, meta = meta, legacy = true,
    metadata_url = meta.defaults and nil or murl_or_err }
end

return M
