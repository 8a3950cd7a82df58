--- A scripted authorization server and protected MCP server in one
-- claude.http.server on 127.0.0.1 (the specs' peer for claude.oauth): the
-- resource at /mcp (Streamable HTTP, or the 2024-11-05 HTTP+SSE transport
-- at /sse with `sse = true`), its metadata at the path-aware well-known URL,
-- the authorization server at /as (metadata, /as/register, /as/authorize,
-- /as/token), and with `idp` an enterprise identity provider at /idp/token
-- (RFC 8693 token exchange of an ID token for an ID-JAG, which /as/token's
-- JWT bearer grant then checks: cross-app access). Every secret it hands out
-- is kept in `log.secrets`, so that a spec can look for them where they must
-- not be. Knobs (`cfg`) make it misbehave; `expire_all`, `revoke_all` act on
-- the tokens it issued.
local core = require "claude.core"
local json = require "claude.json"
local http_server = require "claude.http.server"
local jwt = require "claude.oauth.jwt"
local url = require "claude.url"

local M = {}

local JSON = { ["content-type"] = "application/json" }

local function random_id(prefix)
  local hex = core.random_bytes(12):gsub(".", function(c)
    return string.format("%02x", c:byte())
  end)
  return prefix .. hex
end

local function words(s)
  local out = {}
  for w in (s or ""):gmatch("%S+") do out[w] = true end
  return out
end

--- Starts the server.
-- @tparam[opt] table cfg `prm_resource`, `as_url` (the authorization server
--   the resource metadata names), `issuer` (the one the metadata names),
--   `no_pkce`, `no_registration`, `refuse_registration`, `auth_methods`,
--   `as_scopes`, `scopes` (the resource's scopes_supported), `challenge_scope`
--   (the 401's scope), `admin_scope` (what tool 'admin' needs), `expires_in`,
--   `no_refresh`, `iss` (add `iss` to the redirect), `sse`, `client_id` /
--   `client_secret` (a pre-registered client), `client_key` (its public key:
--   client assertions are verified with it, for the issuer), `signing_algs`
--   (token_endpoint_auth_signing_alg_values_supported), `refuse_jwt_bearer`,
--   `idp = { id_token =, client_id =, client_secret =, refuse =, token_type =,
--   typ = }` (the identity provider: the ID token it accepts, its client; a
--   refusal, the issued_token_type and the ID-JAG's typ to answer instead)
-- @return the server (closed by `close()`, or as a to-be-closed variable), its
--   MCP URL, the log (`exchange`: the identity provider's requests;
--   `assertion_header`, `assertion_claims`: the last client assertion's)
function M.start(cfg)
  cfg = cfg or {}
  local log = { authorize = {}, token = {}, register = {}, mcp = {}, secrets = {},
    exchange = {}, unauthorized = 0, release = require("claude.async").event() }
  -- the identity provider's signing key: ID-JAGs are checked against it
  local idp_key = cfg.idp and assert(jwt.generate { alg = "ES256" })
  local codes, tokens, refresh, clients = {}, {}, {}, {}
  if cfg.client_id then
    clients[cfg.client_id] = { secret = cfg.client_secret }
  end
  local base
  local function secret(prefix)
    local s = random_id(prefix)
    log.secrets[#log.secrets + 1] = s
    return s
  end
  local function issuer() return cfg.issuer or (base .. "/as") end
  local mcp_path = cfg.sse and "/sse" or "/mcp"
  local function prm_url() return base .. "/.well-known/oauth-protected-resource" .. mcp_path end

  -- the client's authentication at the token endpoint: its id, or nil and why
  local function authenticate(req, form)
    local h = req.headers.authorization
    if h and h:find("^Basic ") then
      local decoded = M.unbase64(h:sub(7)) or ""
      local id, sec = decoded:match("^([^:]*):(.*)$")
      id, sec = url.decode(id or ""), url.decode(sec or "")
      local c = clients[id]
      if not c or c.secret ~= sec then return nil, "bad basic credentials" end
      return id, "client_secret_basic"
    end
    if form.client_assertion then
      if form.client_assertion_type ~= "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" then
        return nil, "bad assertion type"
      end
      log.assertion = form.client_assertion
      log.assertion_header, log.assertion_claims = jwt.decode(form.client_assertion)
      if cfg.client_key then
        -- RFC 7523 section 3: iss and sub the client, aud the issuer, signed by its key
        local claims, err = jwt.verify(form.client_assertion, { keys = cfg.client_key,
          audience = issuer(), issuer = form.client_id, subject = form.client_id,
          required_claims = { "exp", "jti" } })
        if not claims or form.client_id ~= cfg.client_id then
          return nil, "bad client assertion: " .. (err and err.reason or "unknown client")
        end
      end
      return form.client_id, "private_key_jwt"
    end
    local c = clients[form.client_id]
    if not c then return nil, "unknown client" end
    if c.secret and form.client_secret ~= c.secret then return nil, "bad client_secret" end
    return form.client_id, form.client_secret and "client_secret_post" or "none"
  end

  local function issue(client_id, scope, resource, with_refresh)
    local at = secret("at-")
    tokens[at] = { scope = scope, resource = resource, client_id = client_id }
    local out = { access_token = at, token_type = "Bearer", expires_in = cfg.expires_in or 3600,
      scope = scope }
    if with_refresh and not cfg.no_refresh then
      local rt = secret("rt-")
      refresh[rt] = { scope = scope, resource = resource, client_id = client_id }
      out.refresh_token = rt
    end
    return out
  end

  local function oauth_error(res, status, code, desc)
    res:respond(status, JSON, json.encode { error = code, error_description = desc })
  end

  local function as_request(req, res)
    local p = req.path
    if p == "/.well-known/oauth-authorization-server/as" then
      local meta = { issuer = issuer(), authorization_endpoint = base .. "/as/authorize",
        token_endpoint = base .. "/as/token",
        registration_endpoint = not cfg.no_registration and (base .. "/as/register") or nil,
        response_types_supported = { "code" },
        grant_types_supported = { "authorization_code", "refresh_token", "client_credentials" },
        code_challenge_methods_supported = not cfg.no_pkce and { "S256" } or nil,
        token_endpoint_auth_methods_supported = cfg.auth_methods
          or { "client_secret_basic", "client_secret_post", "none", "private_key_jwt" },
        token_endpoint_auth_signing_alg_values_supported = cfg.signing_algs,
        scopes_supported = cfg.as_scopes,
        authorization_response_iss_parameter_supported = cfg.iss or nil }
      return res:respond(200, JSON, json.encode(meta))
    elseif p == "/as/register" and req.method == "POST" then
      local body = json.decode(req.body)
      log.register[#log.register + 1] = body
      if cfg.refuse_registration then
        return oauth_error(res, 400, "invalid_client_metadata", "redirect URI not allowed here")
      end
      local id = random_id("client-")
      local method = body.token_endpoint_auth_method or "client_secret_basic"
      local sec = method ~= "none" and secret("cs-") or nil
      clients[id] = { secret = sec }
      return res:respond(201, JSON, json.encode { client_id = id, client_secret = sec,
        token_endpoint_auth_method = method, redirect_uris = body.redirect_uris })
    elseif p == "/as/authorize" then
      local q = url.params(req.query)
      log.authorize[#log.authorize + 1] = q
      if q.code_challenge_method ~= "S256" or not q.code_challenge then
        return oauth_error(res, 400, "invalid_request", "PKCE with S256 is required")
      end
      local code = secret("code-")
      codes[code] = q
      local back = { code = code, state = q.state, iss = cfg.iss and issuer() or nil }
      return res:respond(302, { location = url.with_query(q.redirect_uri, back) })
    elseif p == "/as/token" and req.method == "POST" then
      local form = url.params(req.body)
      log.token[#log.token + 1] = { grant_type = form.grant_type, resource = form.resource,
        scope = form.scope }
      local client_id, how = authenticate(req, form)
      if not client_id then return oauth_error(res, 401, "invalid_client", how) end
      log.token[#log.token].auth_method = how
      if form.grant_type == "authorization_code" then
        local c = codes[form.code]
        codes[form.code] = nil
        if not c then return oauth_error(res, 400, "invalid_grant", "unknown or used code") end
        local challenge = core.base64url_encode(core.sha256(form.code_verifier or ""))
        if challenge ~= c.code_challenge then
          return oauth_error(res, 400, "invalid_grant", "PKCE verification failed")
        end
        if form.redirect_uri ~= c.redirect_uri or form.resource ~= c.resource
          or client_id ~= c.client_id then
          return oauth_error(res, 400, "invalid_grant", "the code was issued for other values")
        end
        return res:respond(200, JSON, json.encode(issue(client_id, c.scope, c.resource, true)))
      elseif form.grant_type == "refresh_token" then
        local r = refresh[form.refresh_token]
        refresh[form.refresh_token] = nil -- rotated
        if not r or r.revoked then
          return oauth_error(res, 400, "invalid_grant", "the refresh token is not valid")
        end
        return res:respond(200, JSON, json.encode(issue(client_id, r.scope, r.resource, true)))
      elseif form.grant_type == "urn:ietf:params:oauth:grant-type:jwt-bearer" then
        if cfg.refuse_jwt_bearer then
          return oauth_error(res, 400, "invalid_grant", "the grant is not accepted here")
        elseif idp_key then
          -- the ID-JAG: the identity provider's, for this issuer, client and resource
          local claims, err = jwt.verify(form.assertion or "", { keys = idp_key:public(),
            typ = "oauth-id-jag+jwt", issuer = base .. "/idp", audience = issuer() })
          if not claims or claims.client_id ~= client_id or claims.resource ~= form.resource
          then
            return oauth_error(res, 400, "invalid_grant", "bad ID-JAG: "
              .. (err and err.reason or "client_id or resource"))
          end
        elseif form.assertion ~= "an-id-jag" then
          return oauth_error(res, 400, "invalid_grant", "not the assertion expected")
        end
        return res:respond(200, JSON, json.encode(issue(client_id, form.scope, form.resource,
          false)))
      elseif form.grant_type == "client_credentials" then
        return res:respond(200, JSON, json.encode(issue(client_id, form.scope, form.resource,
          false)))
      end
      return oauth_error(res, 400, "unsupported_grant_type", "no such grant")
    end
    return res:respond(404)
  end

  -- The identity provider's token endpoint: an ID token for an ID-JAG (RFC 8693).
  local function idp_request(req, res)
    local idp = cfg.idp
    if req.path ~= "/idp/token" or req.method ~= "POST" then return res:respond(404) end
    local form = url.params(req.body)
    local h = req.headers.authorization
    form.basic = h and M.unbase64(h:sub(7)) or nil
    log.exchange[#log.exchange + 1] = form
    if idp.refuse then return oauth_error(res, 400, "invalid_grant", "the ID token expired") end
    if form.grant_type ~= "urn:ietf:params:oauth:grant-type:token-exchange"
      or form.subject_token ~= idp.id_token
      or form.subject_token_type ~= "urn:ietf:params:oauth:token-type:id_token"
      or form.requested_token_type ~= "urn:ietf:params:oauth:token-type:id-jag"
      or (idp.client_secret and form.basic ~= idp.client_id .. ":" .. idp.client_secret) then
      return oauth_error(res, 400, "invalid_request", "not a good token exchange")
    end
    local now = os.time()
    local jag = assert(jwt.sign({ iss = base .. "/idp", sub = "alice", aud = form.audience,
      resource = form.resource, client_id = cfg.client_id, scope = form.scope,
      jti = random_id("jti-"), iat = now, exp = now + 300 },
      { key = idp_key, typ = idp.typ or "oauth-id-jag+jwt" }))
    log.secrets[#log.secrets + 1] = jag
    res:respond(200, JSON, json.encode { access_token = jag, token_type = "N_A",
      issued_token_type = idp.token_type or "urn:ietf:params:oauth:token-type:id-jag",
      expires_in = 300 })
  end

  local function challenge(res, status, err, scope)
    local parts = { 'Bearer error="' .. err .. '"' }
    if scope then parts[#parts + 1] = 'scope="' .. scope .. '"' end
    parts[#parts + 1] = 'resource_metadata="' .. prm_url() .. '"'
    res:respond(status, { ["content-type"] = "application/json",
      ["www-authenticate"] = table.concat(parts, ", ") },
      json.encode { error = err })
  end

  -- The token of a request, or nil after answering 401.
  local function bearer(req, res)
    local h = req.headers.authorization
    local at = h and h:match("^Bearer (.+)$")
    local t = at and tokens[at]
    if not t or t.revoked or t.expired then
      log.unauthorized = log.unauthorized + 1
      challenge(res, 401, "invalid_token", cfg.challenge_scope)
      return nil
    end
    return t
  end

  -- One JSON-RPC message: its answer, or nil for a notification.
  local function mcp(msg, t, res)
    log.mcp[#log.mcp + 1] = msg.method
    if msg.id == nil then return nil end
    if msg.method == "initialize" then
      return { jsonrpc = "2.0", id = msg.id, result = { protocolVersion =
        msg.params.protocolVersion, capabilities = { tools = json.object() },
        serverInfo = { name = "oauth-fake", version = "1" } } }
    elseif msg.method == "tools/list" then
      return { jsonrpc = "2.0", id = msg.id, result = { tools = {
        { name = "echo", inputSchema = { type = "object" } },
        { name = "admin", inputSchema = { type = "object" } } } } }
    elseif msg.method == "tools/call" then
      if msg.params.name == "slow" then log.release:wait(10) end -- until the spec lets go
      if msg.params.name == "admin" then
        local need = cfg.admin_scope or "admin"
        if not words(t.scope)[need] then
          challenge(res, 403, "insufficient_scope", (t.scope and (t.scope .. " ") or "") .. need)
          return false
        end
      end
      return { jsonrpc = "2.0", id = msg.id, result = { content = { { type = "text",
        text = "ok " .. msg.params.name } } } }
    end
    return { jsonrpc = "2.0", id = msg.id, result = json.object() }
  end

  local streams = {}
  local function mcp_request(req, res)
    if req.path == "/.well-known/oauth-protected-resource" .. mcp_path then
      return res:respond(200, JSON, json.encode { resource = cfg.prm_resource
        or (base .. mcp_path),
        authorization_servers = { cfg.as_url or (base .. "/as") },
        scopes_supported = cfg.scopes })
    end
    if cfg.sse then
      if req.path == "/sse" and req.method == "GET" then
        if not bearer(req, res) then return end
        res:start(200, { ["content-type"] = "text/event-stream" })
        res:write("event: endpoint\ndata: /messages\n\n")
        streams[#streams + 1] = res
        return
      elseif req.path == "/messages" and req.method == "POST" then
        local t = bearer(req, res)
        if not t then return end
        local answer = mcp(json.decode(req.body), t, res)
        if answer == false then return end
        res:respond(202)
        if answer then
          streams[#streams]:write("event: message\ndata: " .. json.encode(answer) .. "\n\n")
        end
        return
      end
      return res:respond(404)
    end
    if req.path ~= "/mcp" then return res:respond(404) end
    if req.method ~= "POST" then return res:respond(405) end
    local t = bearer(req, res)
    if not t then return end
    local answer = mcp(json.decode(req.body), t, res)
    if answer == false then return end
    if answer == nil then return res:respond(202) end
    res:respond(200, JSON, json.encode(answer))
  end

  local srv = assert(http_server.listen { on_request = function(req, res)
    if cfg.idp and req.path:find("^/idp/") then return idp_request(req, res) end
    if req.path:find("^/as") or req.path:find("oauth%-authorization%-server") then
      return as_request(req, res)
    end
    return mcp_request(req, res)
  end })
  base = "http://127.0.0.1:" .. srv:port()
  -- closed by `local f <close> = start(...)` too
  local fake = setmetatable({ server = srv, log = log, base = base },
    { __close = function(f) f.close() end })
  --- Every access token issued so far answers 401 (as an expired one).
  function fake.expire_all()
    for _, t in pairs(tokens) do t.expired = true end
  end
  --- Every token issued so far, refresh tokens too, is revoked.
  function fake.revoke_all()
    for _, t in pairs(tokens) do t.revoked = true end
    for _, r in pairs(refresh) do r.revoked = true end
  end
  function fake.close()
    log.release:set()
    for _, s in ipairs(streams) do s:finish() end
    srv:close()
  end
  return fake, base .. mcp_path, log
end

--- Decodes standard base64 (for the Basic header); nil when it is not base64.
function M.unbase64(s)
  return (core.base64url_decode((s:gsub("[+/=]", { ["+"] = "-", ["/"] = "_", ["="] = "" }))))
end

return M
