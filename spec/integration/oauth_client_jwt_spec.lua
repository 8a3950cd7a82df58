-- claude.mcp.connect's signed-JWT flows against the scripted authorization server
-- (spec/support/oauth_server.lua): `auth.private_key` (private_key_jwt signed by the library,
-- the algorithm chosen from the server's metadata, the assertion verified there with the
-- client's public key) and cross-app access (`claude.oauth.id_jag`: the ID token exchanged
-- at the identity provider for an ID-JAG, which the JWT bearer grant turns into a token,
-- the ID-JAG verified by the server). Each bad input ends in an `auth` error that quotes no
-- ID token, ID-JAG, secret or key material; the misuses raise at the caller's line.
-- luacheck: ignore 211/_fake (the fake is kept only to be closed)
local claude = require "claude"
local http = require "claude.http.client"
local jwt = require "claude.oauth.jwt"
local oauth = require "claude.oauth"
local harness = require "support.harness"
local fake = require("support.oauth_server").start

local T = 10
local ID_TOKEN = "eyJhbGciOiJFUzI1NiJ9.id-token-SECRET-4711.sig"

local function text(r) return r.content[1].text end

-- Everything `s` must not hold: what the fake handed out, the ID token, the key's PEM lines.
local function assert_clean(log, s, key)
  local secrets = { ID_TOKEN, "idp-secret", "xaa-secret", "PRIVATE KEY" }
  for _, x in ipairs(log.secrets) do secrets[#secrets + 1] = x end
  if key then
    for line in key:pem(true):gmatch("[^\n]+") do
      if not line:find("-----", 1, true) then secrets[#secrets + 1] = line end
    end
  end
  for _, x in ipairs(secrets) do
    assert.is_nil(s:find(x, 1, true), "a secret leaked into: " .. s)
  end
end

-- every case runs in a task, so that the in-process servers' tasks run too
local function case(fn) return harness.task(fn, 6 * T) end

local function grants(log)
  local out = {}
  for _, t in ipairs(log.token) do out[#out + 1] = t.grant_type end
  return out
end

describe("auth.private_key (private_key_jwt signed by the library)", function()
  before_each(harness.before)
  after_each(harness.after)

  it("signs for the issuer with the algorithm the server lists (PEM, client credentials)",
    case(function()
      local key = assert(jwt.generate { alg = "ES256" })
      local _fake <close>, u, log = fake { client_id = "machine", client_key = key:public(),
        signing_algs = { "ES256" } }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
        grant = "client_credentials", client_id = "machine", private_key = key:pem(true),
        scope = "read" } })
      assert.equal("ok echo", text(assert(c:call_tool("echo"))))
      assert.same({ "client_credentials" }, grants(log))
      assert.equal("private_key_jwt", log.token[1].auth_method) -- verified by the fake
      assert.equal("ES256", log.assertion_header.alg)
      assert.is_nil(log.assertion_header.kid)
      local claims = log.assertion_claims
      assert.equal(_fake.base .. "/as", claims.aud)
      assert.equal("machine", claims.iss)
      assert.equal("machine", claims.sub)
      assert.truthy(claims.exp > claims.iat)
    end))

  it("takes a JWK with its kid and picks the server's first algorithm the key serves",
    case(function()
      local key = assert(jwt.generate { kty = "OKP", crv = "Ed25519" })
      local jwk = key:jwk(true)
      jwk.kid = "ed-2025"
      local _fake <close>, u, log = fake { client_id = "machine", client_key = key:public(),
        signing_algs = { "RS256", "ES256", "EdDSA" } }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
        grant = "client_credentials", client_id = "machine", private_key = jwk } })
      assert(c:list_tools())
      assert.equal("EdDSA", log.assertion_header.alg)
      assert.equal("ed-2025", log.assertion_header.kid)
    end))

  it("signs with the algorithm a JWK names", case(function()
    local key = assert(jwt.generate { kty = "OKP", crv = "Ed25519" })
    local jwk = key:jwk(true)
    jwk.alg = "Ed25519"
    local _fake <close>, u, log = fake { client_id = "machine", client_key = key:public(),
      signing_algs = { "EdDSA", "Ed25519" } }
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
      grant = "client_credentials", client_id = "machine", private_key = jwk } })
    assert(c:list_tools())
    assert.equal("Ed25519", log.assertion_header.alg)
  end))

  it("authenticates the authorization code exchange with private_key_alg and _kid",
    case(function()
      local key = assert(jwt.generate { alg = "ES384" })
      local _fake <close>, u, log = fake { client_id = "web", client_key = key:public() }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
        client_id = "web", private_key = key, private_key_alg = "ES384",
        private_key_kid = "k1", redirect_uri = "http://127.0.0.1:9/callback",
        on_authorize = function(target)
          return assert(http.request { url = target, timeout = T }).headers.location
        end } })
      assert(c:list_tools())
      assert.same({ "authorization_code" }, grants(log))
      assert.equal("private_key_jwt", log.token[1].auth_method)
      assert.same({ alg = "ES384", kid = "k1", typ = "JWT" }, log.assertion_header)
      assert.equal(0, #log.register)
    end))

  describe("bad input: an auth error, and no key material in it", function()
    local function refused(cfg, a, key)
      local _fake <close>, u, log = fake(cfg)
      a.grant, a.client_id = "client_credentials", "machine"
      local c, err, kind = claude.mcp.connect { url = u, timeout = T, max_retries = 0,
        auth = a }
      assert.is_nil(c)
      assert.equal("auth", kind)
      assert_clean(log, tostring(err), key)
      return err, log
    end

    it("a key that cannot sign with the server's algorithms: refused before the token request",
      case(function()
        local key = assert(jwt.generate { alg = "ES256" })
        local err, log = refused({ client_id = "machine", signing_algs = { "RS256", "PS256" } },
          { private_key = key:pem(true) }, key)
        assert.matches("the private key %(EC P%-256%) signs with ES256; the authorization "
          .. "server 'http://127%.0%.0%.1:%d+/as' takes client assertions signed with RS256, "
          .. "PS256 only", err.message)
        assert.equal(0, #log.token)
        assert.is_nil(log.assertion)
      end))

    it("private_key_alg the server does not list", case(function()
      local key = assert(jwt.generate { alg = "ES256" })
      local err, log = refused({ client_id = "machine", signing_algs = { "ES384" } },
        { private_key = key, private_key_alg = "ES256" }, key)
      assert.matches("takes client assertions signed with ES384, not with ES256 "
        .. "%(auth.private_key_alg%)", err.message)
      assert.equal(0, #log.token)
    end))

    it("an assertion the server cannot verify (another key registered there)", case(function()
      local key = assert(jwt.generate { alg = "ES256" })
      local other = assert(jwt.generate { alg = "ES256" })
      local err, log = refused({ client_id = "machine", client_key = other:public() },
        { private_key = key }, key)
      assert.matches("refused the client credentials request: invalid_client %(bad client "
        .. "assertion: signature%)", err.message)
      assert.equal("invalid_client", err.oauth_error)
      assert.equal(1, #log.token)
    end))
  end)
end)

describe("cross-app access (claude.oauth.id_jag and the jwt_bearer grant)", function()
  before_each(harness.before)
  after_each(harness.after)

  local IDP = { id_token = ID_TOKEN, client_id = "app-at-idp", client_secret = "idp-secret" }

  local function idp(extra)
    local t = {}
    for k, v in pairs(IDP) do t[k] = v end
    for k, v in pairs(extra or {}) do t[k] = v end
    return t
  end

  local function xaa(base, id_token, extra)
    local a = { grant = "jwt_bearer", client_id = "xaa", client_secret = "xaa-secret",
      assertion = oauth.id_jag { idp_token_endpoint = base .. "/idp/token",
        id_token = id_token or ID_TOKEN, client_id = "app-at-idp",
        client_secret = "idp-secret" } }
    for k, v in pairs(extra or {}) do a[k] = v end
    return a
  end

  it("exchanges the ID token at the identity provider, then gets the token with the ID-JAG",
    case(function()
      local _fake <close>, u, log = fake { client_id = "xaa", client_secret = "xaa-secret",
        idp = idp(), expires_in = 5 }
      local asked = 0
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T,
        auth = xaa(_fake.base, function()
          asked = asked + 1
          return ID_TOKEN
        end, { scope = "read" }) })
      assert.equal("ok echo", text(assert(c:call_tool("echo"))))
      -- the discovery ran first: the exchange names the issuer and the resource it found
      local x = log.exchange[1]
      assert.equal("urn:ietf:params:oauth:grant-type:token-exchange", x.grant_type)
      assert.equal("urn:ietf:params:oauth:token-type:id-jag", x.requested_token_type)
      assert.equal("urn:ietf:params:oauth:token-type:id_token", x.subject_token_type)
      assert.equal(ID_TOKEN, x.subject_token)
      assert.equal(_fake.base .. "/as", x.audience)
      assert.equal(u, x.resource)
      assert.equal("read", x.scope)
      assert.equal("app-at-idp:idp-secret", x.basic) -- client_secret_basic at the IdP
      -- the grant at the authorization server, the ID-JAG verified there
      assert.equal("urn:ietf:params:oauth:grant-type:jwt-bearer", log.token[1].grant_type)
      assert.equal("client_secret_basic", log.token[1].auth_method)
      assert.equal(u, log.token[1].resource)
      -- the token expires within the margin: each new token is a new exchange
      assert.truthy(#log.exchange >= 2)
      assert.equal(#log.exchange, asked)
      assert.equal(#log.exchange, #log.token)
      assert.equal(0, #log.authorize)
    end))

  it("takes the ID-JAG's typ as the media type it is (application/, any case)",
    case(function()
      local _fake <close>, u, log = fake { client_id = "xaa", client_secret = "xaa-secret",
        idp = idp { typ = "application/OAuth-ID-JAG+JWT" } }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T,
        auth = xaa(_fake.base) })
      assert(c:list_tools())
      assert.equal(1, #log.token)
    end))

  describe("bad input: an auth error naming the step, without the tokens", function()
    local function refused(cfg, extra, id_token)
      cfg.client_id, cfg.client_secret = "xaa", "xaa-secret"
      local _fake <close>, u, log = fake(cfg)
      local c, err, kind = claude.mcp.connect { url = u, timeout = T, max_retries = 0,
        auth = xaa(_fake.base, id_token, extra) }
      assert.is_nil(c)
      assert.equal("auth", kind)
      assert_clean(log, tostring(err))
      return err, log
    end

    it("the identity provider refusing the exchange (400 invalid_grant)", case(function()
      local err, log = refused { idp = idp { refuse = true } }
      assert.matches("auth.assertion gave no assertion: the identity provider's token endpoint "
        .. "http://127%.0%.0%.1:%d+/idp/token refused the token exchange %(ID token for "
        .. "ID%-JAG%): invalid_grant %(the ID token expired%)", err.message)
      assert.equal("invalid_grant", err.oauth_error)
      assert.equal(1, #log.exchange)
      assert.equal(0, #log.token) -- nothing reached the authorization server
    end))

    it("a token of another type than an ID-JAG", case(function()
      local err, log = refused { idp = idp {
        token_type = "urn:ietf:params:oauth:token-type:access_token" } }
      assert.matches("issued a token of type 'urn:ietf:params:oauth:token%-type:access_token', "
        .. "not an ID%-JAG %(urn:ietf:params:oauth:token%-type:id%-jag%): it is not sent on",
        err.message)
      assert.equal(0, #log.token)
    end))

    it("an ID-JAG whose typ is not oauth-id-jag+jwt", case(function()
      local err, log = refused { idp = idp { typ = "JWT" } }
      assert.matches("has typ 'JWT', not 'oauth%-id%-jag%+jwt'", err.message)
      assert.equal(0, #log.token)
    end))

    it("the authorization server refusing the JWT bearer grant", case(function()
      local err, log = refused { idp = idp(), refuse_jwt_bearer = true }
      assert.matches("refused the JWT bearer grant: invalid_grant %(the grant is not accepted "
        .. "here%)", err.message)
      assert.equal("invalid_grant", err.oauth_error)
      assert.equal(1, #log.exchange)
      assert.equal(1, #log.token)
    end))

    it("no ID token to exchange", case(function()
      local err, log = refused({ idp = idp() }, nil, function() return nil, "no SSO session" end)
      assert.matches("the id_token function gave no ID token: no SSO session", err.message)
      assert.equal(0, #log.exchange)
    end))

    it("nothing secret reaches stderr", case(function()
      local _fake <close>, u, log = fake { client_id = "xaa", client_secret = "xaa-secret",
        idp = idp(), refuse_jwt_bearer = true, signing_algs = { "RS256" } }
      local key = assert(jwt.generate { alg = "ES256" })
      local script = harness.tempfile([[
        local claude = require "claude"
        local oauth = require "claude.oauth"
        local url, base, pem, id_token = ...
        local _, err = claude.mcp.connect { url = url, timeout = 10, max_retries = 0,
          auth = { grant = "client_credentials", client_id = "machine", private_key = pem } }
        io.stderr:write(tostring(err), "\n")
        _, err = claude.mcp.connect { url = url, timeout = 10, max_retries = 0,
          auth = { grant = "jwt_bearer", client_id = "xaa", client_secret = "xaa-secret",
            assertion = oauth.id_jag { idp_token_endpoint = base .. "/idp/token",
              id_token = id_token, client_id = "app-at-idp", client_secret = "idp-secret" } } }
        error(err)
      ]], ".lua")
      local proc = assert(claude.process.spawn { harness.claudelua, args = { script, u,
        _fake.base, key:pem(true), ID_TOKEN }, stderr = "collect", stdout = "ignore",
        env = { CLAUDELUA_LUA_PATH = os.getenv("CLAUDELUA_LUA_PATH") } })
      proc:wait(3 * T)
      local stderr = proc:stderr()
      proc:close()
      os.remove(script)
      assert.matches("takes client assertions signed with RS256 only", stderr, 1, true)
      assert.matches("refused the JWT bearer grant", stderr, 1, true)
      assert.truthy(#log.secrets > 0) -- an ID-JAG was issued, and is not there
      assert_clean(log, stderr, key)
    end))
  end)
end)

describe("misuse of auth.private_key and claude.oauth.id_jag", function()
  local key = assert(jwt.generate { alg = "ES256" })
  local cc = { grant = "client_credentials", client_id = "m" }
  local function with(t)
    local out = {}
    for k, v in pairs(cc) do out[k] = v end
    for k, v in pairs(t) do out[k] = v end
    return out
  end
  local rows = {
    { with { private_key = key, client_secret = "s" },
      "'auth.private_key' and 'auth.client_secret' exclude each other" },
    { with { private_key = key, client_assertion = print },
      "'auth.private_key' and 'auth.client_assertion' exclude each other" },
    { { on_authorize = print, redirect_uri = "http://127.0.0.1/cb", private_key = key },
      "bad field 'auth.private_key' to 'connect' %(only with 'auth.client_id'%)" },
    { with { private_key = 42 }, "bad field 'auth.private_key' to 'connect' %(PEM text, a JWK "
      .. "table or a claude.core.Key expected, got number%)" },
    { with { private_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n" },
      "bad field 'auth.private_key' to 'connect' %(not a key in PEM or DER" },
    { with { private_key = key:pem() }, "bad field 'auth.private_key' to 'connect' %(a public "
      .. "key" },
    { with { private_key = jwt.secret(string.rep("k", 32)) }, "%(an HMAC secret" },
    { with { private_key = key, private_key_alg = "RS256" }, "bad field 'auth.private_key_alg' "
      .. "to 'connect' %(RS256 needs an RSA key, not an EC P%-256 key%)" },
    { with { private_key = key, private_key_alg = "none" }, "bad field 'auth.private_key_alg' "
      .. "to 'connect' %(unknown algorithm%)" },
    { with { private_key = (function()
        local j = key:jwk(true)
        j.alg = "PS256"
        return j
      end)() }, "bad field 'auth.private_key' to 'connect' %(its JWK's alg: PS256 needs an "
      .. "RSA key" },
    { with { private_key = key, token_endpoint_auth_method = "client_secret_basic" },
      "%('private_key_jwt' with 'auth.private_key', got 'client_secret_basic'%)" },
    { with { client_secret = "s", private_key_kid = "k1" },
      "bad field 'auth.private_key_kid' to 'connect' %(only with 'auth.private_key'%)" },
    { with { private_keys = key }, "unknown field 'auth.private_keys' to 'connect' %(did you "
      .. "mean 'auth.private_key'%?%)" },
    { { grant = "client_credentials", client_id = "m" }, "needs 'auth.client_id' and "
      .. "'auth.client_secret', 'auth.private_key' or 'auth.client_assertion'" },
  }
  for _, row in ipairs(rows) do
    it("refuses " .. row[2], function()
      local ok, err = pcall(function()
        claude.mcp.connect { url = "http://127.0.0.1:1/mcp", auth = row[1] }
      end)
      assert.is_false(ok)
      assert.matches(row[2], err)
      assert.matches("oauth_client_jwt_spec.lua", err, 1, true) -- at the caller's line
      assert.is_nil(err:find("PRIVATE KEY", 1, true))
    end)
  end

  local good = { idp_token_endpoint = "https://idp.example/token", id_token = "t",
    client_id = "c" }
  local function jag(t)
    local out = {}
    for k, v in pairs(good) do out[k] = v end
    for k, v in pairs(t) do out[k] = v end
    return out
  end
  local jag_rows = {
    { jag { id_token = false }, "bad field 'id_token' to 'id_jag' %(string or function "
      .. "expected, got boolean%)" },
    { { idp_token_endpoint = "https://idp.example/token", client_id = "c" },
      "bad argument #1 to 'id_jag' %(field 'id_token' is needed%)" },
    { jag { idp_token_endpoint = "http://idp.example/token" }, "bad field 'idp_token_endpoint' "
      .. "to 'id_jag' %(the identity provider's token endpoint 'http://idp.example/token' is "
      .. "not HTTPS" },
    { jag { idp_token_endpiont = "x" }, "unknown field 'idp_token_endpiont' to 'id_jag' %(did "
      .. "you mean 'idp_token_endpoint'%?%)" },
    { jag { token_endpoint_auth_method = "client_secret_post" }, "%('client_secret_post' needs "
      .. "'client_secret'%)" },
    { jag { token_endpoint_auth_method = "private_key_jwt" }, "%('client_secret_basic', "
      .. "'client_secret_post' or 'none' expected, got 'private_key_jwt'%)" },
  }
  for _, row in ipairs(jag_rows) do
    it("refuses " .. row[2], function()
      local ok, err = pcall(function() oauth.id_jag(row[1]) end)
      assert.is_false(ok)
      assert.matches(row[2], err)
      assert.matches("oauth_client_jwt_spec.lua", err, 1, true)
    end)
  end

  it("id_jag's function checks its context at the caller's line", function()
    local f = oauth.id_jag(good)
    local ok, err = pcall(function() f("https://as.example") end)
    assert.is_false(ok)
    assert.matches("oauth_client_jwt_spec.lua:%d+: bad argument #1 to the ID%-JAG function", err)
  end)
end)
