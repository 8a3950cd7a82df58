--- Token introspection (RFC 7662): the verifier an HTTP MCP server takes as its
-- `auth.introspection_url`, which asks the authorization server about each token.
--
--     local introspection = require "claude.oauth.introspection"
--     local verify = introspection.verifier { introspection_url = "https://as.example/introspect",
--       client_id = "rs", client_secret = secret }
--     local claims, err, kind = verify(token)   -- kind "invalid_token" or "unavailable"
--
-- The server authenticates itself as the OAuth client does at a token endpoint
-- (claude.oauth.client_auth's `client_secret_basic` and `client_secret_post`). Public as
-- `claude.mcp.server.auth.introspection`; the transport's `auth` option builds one for
-- `introspection_url`.
-- @module claude.oauth.introspection
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local url = require "claude.url"
local client_auth = require "claude.oauth.client_auth"

local M = {}

-- Active answers kept at most (a flood of made-up tokens empties the cache, no more).
local MAX_CACHED = 10000

local METHOD = { basic = "client_secret_basic", post = "client_secret_post" }

local function unavailable(msg, ...)
  return errors.fail("unavailable", msg:format(...))
end

local function http_url(v)
  local u = url.parse_canonical(v)
  return u ~= nil and (u.scheme == "http" or u.scheme == "https")
end

--- A verifier that asks the authorization server about each token: `POST
-- introspection_url` with `token=...`, authenticated with `client_id`/`client_secret`
-- (HTTP Basic, or in the form with `client_auth = "post"`) when given. An `active: false`
-- answer is an invalid token (also when it comes with an error status, as the TypeScript
-- SDK's demo server sends it); anything else that is not an answer is `unavailable`. With
-- `cache = seconds`, an active answer is reused for that long (never past its `exp`):
-- fewer round trips, at the price of a revocation seen that much later.
-- @tparam table o `introspection_url`, `client_id`, `client_secret`, `client_auth`
--   (`"basic"`, the default, or `"post"`), `timeout` (seconds, default 10), `cache`
--   (seconds, default 0: ask every time)
-- @treturn function `verify(token) -> claims | nil, err, kind`
-- @function verifier
M.verifier = errors.public(function(o)
  errors.check(o, 1, "introspection", "table")
  if not http_url(o.introspection_url) then
    errors.misuse("bad field 'introspection_url' to 'introspection' (an http(s) URL "
      .. "expected, got %s)", errors.typename(o.introspection_url))
  end
  local endpoint, timeout, ttl = o.introspection_url, o.timeout or 10, o.cache or 0
  local headers = { ["content-type"] = "application/x-www-form-urlencoded",
    accept = "application/json" }
  -- the client's fields, the same for every token: Basic with an empty password for a
  -- client without a secret, or its id alone in the form
  local fields = {}
  if o.client_id then
    local method = METHOD[o.client_auth or "basic"]
    if method == "client_secret_post" and not o.client_secret then method = "none" end
    assert(client_auth.methods[method]({ client_id = o.client_id,
      client_secret = o.client_secret or "" }, fields, headers))
  end
  local cache, ncache = {}, 0
  return function(token)
    local key
    if ttl > 0 then
      key = core.sha256(token)
      local hit = cache[key]
      if hit then
        if hit.until_ > os.time() then return hit.claims end
        cache[key], ncache = nil, ncache - 1
      end
    end
    local form = { token = token, token_type_hint = "access_token" }
    for k, v in pairs(fields) do form[k] = v end
    local http = require "claude.http.client"
    local resp, err = http.request { method = "POST", url = endpoint, headers = headers,
      body = url.form(form), timeout = timeout, max_body = 1024 * 1024 }
    local status = resp and resp.status or err.status
    local doc = json.decode(resp and resp.body or err.body or "")
    if type(doc) == "table" and doc.active == false then
      return errors.fail("invalid_token", "the access token is not active (expired, revoked "
        .. "or unknown to the authorization server)")
    end
    if not resp then
      if err.kind == "http" then
        return unavailable("the introspection endpoint answered HTTP %d", status)
      end
      return unavailable("the introspection endpoint could not be reached (%s)", err.kind)
    end
    if type(doc) ~= "table" or doc.active ~= true then
      return unavailable("the introspection endpoint's answer (HTTP %d) is not an "
        .. "introspection response", status)
    end
    doc.active = nil
    if key then
      local exp = math.type(doc.exp) and doc.exp or math.huge
      if ncache >= MAX_CACHED then cache, ncache = {}, 0 end
      cache[key], ncache = { claims = doc, until_ = math.min(os.time() + ttl, exp) }, ncache + 1
    end
    return doc
  end
end)

return M
