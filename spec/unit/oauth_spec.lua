-- The pieces of claude.oauth that need no peer: WWW-Authenticate parsing,
-- the order of the discovery URLs, PKCE (RFC 7636 appendix B), the checks
-- of a redirect, URLs, the choice of the token endpoint authentication, and
-- the file store's mode.
local core = require "claude.core"
local url = require "claude.url"
local discovery = require "claude.oauth.discovery"
local pkce = require "claude.oauth.pkce"
local redirect = require "claude.oauth.redirect"
local client_auth = require "claude.oauth.client_auth"
local oauth = require "claude.oauth"
local harness = require "support.harness"

describe("WWW-Authenticate", function()
  local rows = {
    { 'Bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource"',
      { { "bearer", { resource_metadata =
        "https://rs.example/.well-known/oauth-protected-resource" } } } },
    { 'Bearer error="insufficient_scope", scope="a b", resource_metadata="https://x/y"',
      { { "bearer", { error = "insufficient_scope", scope = "a b",
        resource_metadata = "https://x/y" } } } },
    { 'bearer Scope=read , ERROR=invalid_token', -- names and schemes are case-insensitive
      { { "bearer", { scope = "read", error = "invalid_token" } } } },
    { 'Basic realm="x, y", Bearer scope="s"', -- two challenges, a comma inside quotes
      { { "basic", { realm = "x, y" } }, { "bearer", { scope = "s" } } } },
    { 'Bearer error_description="say \\"no\\"", error="x"',
      { { "bearer", { error_description = 'say "no"', error = "x" } } } },
    { 'Negotiate abc123==, Bearer scope="s"',
      { { "negotiate", {}, "abc123==" }, { "bearer", { scope = "s" } } } },
    { 'Bearer', { { "bearer", {} } } },
    { 'Bearer scope="a", scope="b"', { { "bearer", { scope = "a" } } } }, -- the first counts
    { 'Bearer scope="unterminated', { { "bearer", {} } } },
    { '', {} },
  }
  for _, row in ipairs(rows) do
    it("parses " .. row[1], function()
      local got = discovery.challenges(row[1])
      assert.equal(#row[2], #got)
      for i, want in ipairs(row[2]) do
        assert.equal(want[1], got[i].scheme)
        assert.same(want[2], got[i].params)
        assert.equal(want[3], got[i].token68)
      end
    end)
  end

  it("picks the Bearer challenge's parameters", function()
    assert.same({ scope = "s" }, discovery.bearer('Basic realm="r", Bearer scope="s"'))
    assert.same({}, discovery.bearer('Basic realm="r"'))
    assert.same({}, discovery.bearer(nil))
  end)
end)

describe("discovery URLs, in the specification's order", function()
  it("protected resource metadata: path-aware, then the root", function()
    assert.same({ "https://rs.example/.well-known/oauth-protected-resource/public/mcp",
      "https://rs.example/.well-known/oauth-protected-resource" },
      discovery.resource_metadata_urls(url.parse_canonical("https://rs.example/public/mcp")))
    assert.same({ "https://rs.example/.well-known/oauth-protected-resource/mcp?t=1",
      "https://rs.example/.well-known/oauth-protected-resource" },
      discovery.resource_metadata_urls(url.parse_canonical("https://rs.example/mcp/?t=1")))
    assert.same({ "http://127.0.0.1:8080/.well-known/oauth-protected-resource" },
      discovery.resource_metadata_urls(url.parse_canonical("http://127.0.0.1:8080/")))
  end)

  local function urls(issuer)
    local out = {}
    for _, c in ipairs(discovery.server_metadata_urls(url.parse_canonical(issuer))) do
      out[#out + 1] = c.kind .. " " .. c.url
    end
    return out
  end

  it("authorization server metadata: RFC 8414, then OpenID Connect", function()
    assert.same({ "oauth https://as.example/.well-known/oauth-authorization-server",
      "oidc https://as.example/.well-known/openid-configuration" },
      urls("https://as.example"))
    assert.same({ "oauth https://as.example/.well-known/oauth-authorization-server/tenant1",
      "oidc https://as.example/.well-known/openid-configuration/tenant1",
      "oidc https://as.example/tenant1/.well-known/openid-configuration" },
      urls("https://as.example/tenant1/"))
  end)
end)

describe("discovery checks", function()
  local server = url.parse_canonical("https://rs.example:8443/api/mcp")
  local rows = {
    { "https://rs.example:8443/api/mcp", true },
    { "https://rs.example:8443/api", true },
    { "https://rs.example:8443/", true },
    { "https://RS.example:8443", true },
    { "https://rs.example:8443/api/mcp/", true },
    { "https://rs.example:8443/ap", false }, -- a prefix of a segment is not a path prefix
    { "https://rs.example/api/mcp", false },   -- another port
    { "http://rs.example:8443/api/mcp", false }, -- another scheme
    { "https://evil.example/api/mcp", false },
    { "https://rs.example:8443/api/mcp/more", false },
    { "https://rs.example:8443/api/mcp#frag", false },
    { "not a url", false },
  }
  for _, row in ipairs(rows) do
    it((row[2] and "takes " or "refuses ") .. "resource " .. row[1], function()
      assert.equal(row[2], discovery.resource_allowed(server, row[1]))
    end)
  end

  it("wants HTTPS for an authorization server, but for loopback hosts", function()
    assert.truthy(discovery.check_secure("https://as.example/x", "as"))
    assert.truthy(discovery.check_secure("http://127.0.0.1:9000/as", "as"))
    assert.truthy(discovery.check_secure("http://localhost:9000", "as"))
    assert.truthy(discovery.check_secure("http://[::1]:9000", "as"))
    for _, bad in ipairs { "http://as.example", "http://10.0.0.1", "http://localhost.evil.com",
      "ftp://as.example", "http://user@127.0.0.1/" } do
      local ok, err, kind = discovery.check_secure(bad, "the authorization server")
      assert.is_nil(ok)
      assert.equal("auth", kind)
      assert.matches("the authorization server", err.message)
    end
  end)

  it("takes metadata for the issuer it was fetched for: the same string, or one slash less",
    function()
    assert.is_true(discovery.issuer_matches("https://as.example", "https://as.example"))
    assert.is_true(discovery.issuer_matches("https://as.example", "https://as.example/"))
    assert.is_false(discovery.issuer_matches("https://as.example/", "https://as.example"))
    assert.is_false(discovery.issuer_matches("https://AS.example:443/t1", "https://as.example/t1"))
    assert.is_false(discovery.issuer_matches("https://as.example/t1", "https://as.example/t2"))
    assert.is_false(discovery.issuer_matches("https://as.example", "http://as.example"))
  end)
end)

describe("PKCE", function()
  it("computes the S256 challenge of RFC 7636 appendix B", function()
    assert.equal("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      pkce.challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"))
  end)

  it("makes 43-character verifiers and long states from random bytes, all different",
    function()
      local seen = {}
      for _ = 1, 50 do
        local v, s = pkce.verifier(), pkce.state()
        assert.equal(43, #v)
        assert.matches("^[%w%-_]+$", v)
        assert.equal(32, #s)
        assert.is_nil(seen[v])
        assert.is_nil(seen[s])
        seen[v], seen[s] = true, true
      end
    end)
end)

describe("the answer of on_authorize", function()
  local expect = { state = "s-123", redirect_uri = "http://127.0.0.1:8765/callback",
    issuer = "https://as.example" }
  local ok_rows = {
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123", "abc" },
    { "http://127.0.0.1:8765/callback?state=s-123&code=a%2Bb", "a+b" },
    { "HTTP://127.0.0.1:8765/callback?code=abc&state=s-123&iss=https%3A%2F%2Fas.example",
      "abc" },
    { "a-bare-code", "a-bare-code" },
  }
  for _, row in ipairs(ok_rows) do
    it("takes " .. row[1], function()
      assert.equal(row[2], (redirect.code(row[1], expect)))
    end)
  end
  local bad_rows = {
    { "http://127.0.0.1:8765/callback?code=abc&state=s-999", "state is not the one sent" },
    { "http://127.0.0.1:8765/callback?code=abc", "carries no state" },
    { "http://127.0.0.1:8765/other?code=abc&state=s-123", "not to the redirect_uri" },
    { "http://127.0.0.1:9999/callback?code=abc&state=s-123", "not to the redirect_uri" },
    { "http://evil.example:8765/callback?code=abc&state=s-123", "not to the redirect_uri" },
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123&code=x", "repeats the parameter" },
    { "http://127.0.0.1:8765/callback?state=s-123&state=s-123&code=x", "repeats the parameter" },
    { "http://127.0.0.1:8765/callback?state=s-123", "carries no code" },
    { "http://127.0.0.1:8765/callback", "carries no parameters" },
    { "http://127.0.0.1:8765/callback#code=abc&state=s-123", "carries no parameters" },
    { "http://127.0.0.1:8765/callback?error=access_denied&state=s-123",
      "refused the authorization: access_denied" },
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123&iss=https%3A%2F%2Fevil.example",
      "a mix%-up is refused" },
    -- RFC 9207: the issuer as a plain string; a trailing slash, another case, the default
    -- port written out are other issuers
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123&iss=https%3A%2F%2Fas.example%2F",
      "a mix%-up is refused" },
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123&iss=https%3A%2F%2FAS.example",
      "a mix%-up is refused" },
    { "http://127.0.0.1:8765/callback?code=abc&state=s-123&iss=https%3A%2F%2Fas.example%3A443",
      "a mix%-up is refused" },
    { "a code with blanks", "blanks" },
    { "", "an empty string" },
  }
  for _, row in ipairs(bad_rows) do
    it("refuses " .. row[1], function()
      local code, err, kind = redirect.code(row[1], expect)
      assert.is_nil(code)
      assert.equal("auth", kind)
      assert.matches(row[2], err.message)
      assert.is_nil(err.message:find("abc", 1, true), "the code is not quoted")
    end)
  end

  it("refuses a redirect without iss from a server that promises it", function()
    local e = { state = "s", redirect_uri = "http://127.0.0.1/cb", issuer = "https://as",
      iss_required = true }
    local code, err = redirect.code("http://127.0.0.1/cb?code=c&state=s", e)
    assert.is_nil(code)
    assert.matches("names no issuer", err.message)
  end)

  it("refuses what is not a string", function()
    local code, err = redirect.code(42, expect)
    assert.is_nil(code)
    assert.matches("returned a number", err.message)
  end)
end)

describe("claude.url (as OAuth uses it)", function()
  it("parses strictly", function()
    local u = url.parse_canonical("HTTPS://Example.COM:443/a/b?x=1#f")
    assert.same({ scheme = "https", host = "example.com", authority = "example.com",
      path = "/a/b", query = "x=1", fragment = "f" }, u)
    assert.equal("https://example.com/a/b?x=1", url.canonical(u))
    assert.equal("[::1]:8080", url.parse_canonical("http://[::1]:8080/").authority)
    for _, bad in ipairs { "example.com/x", "http://a b/", "http://u@h/", "http:///x",
      "http://h:99999/", "http://h\\x/" } do
      assert.is_nil(url.parse_canonical(bad))
    end
  end)

  it("knows loopback hosts by their names alone", function()
    for _, h in ipairs { "localhost", "127.0.0.1", "127.1.2.3", "::1" } do
      assert.is_true(url.is_loopback(h))
    end
    for _, h in ipairs { "localhost.evil.com", "128.0.0.1", "10.0.0.1", "example.com",
      "127.0.0.256", "::2" } do
      assert.is_false(url.is_loopback(h))
    end
  end)

  it("encodes forms and queries, and finds repeated parameters", function()
    assert.equal("a=1%202&b=%3D%26%2B&c=~-._", url.form { b = "=&+", a = "1 2", c = "~-._" })
    assert.same({ a = "1 2", b = "=&+" }, url.params("a=1+2&b=%3D%26%2B"))
    local p, repeated = url.params("a=1&b=2&a=3")
    assert.equal("3", p.a)
    assert.equal("a", repeated)
    assert.equal("https://x/y?q=1&a=b", url.with_query("https://x/y?q=1", { a = "b" }))
    assert.equal("https://x/y?a=b", url.with_query("https://x/y#f", { a = "b" }))
  end)
end)

describe("token endpoint authentication", function()
  local function choose(client, methods)
    return client_auth.select(client, { token_endpoint_auth_methods_supported = methods })
  end

  it("chooses a method from the client and the server's list", function()
    local secret = { client_id = "c", client_secret = "s" }
    local public = { client_id = "c" }
    assert.equal("client_secret_basic", choose(secret, nil))
    assert.equal("none", choose(public, nil))
    assert.equal("client_secret_basic", choose(secret, { "client_secret_post",
      "client_secret_basic" }))
    assert.equal("client_secret_post", choose(secret, { "client_secret_post" }))
    assert.equal("none", choose(public, { "client_secret_basic", "none" }))
    assert.equal("client_secret_post", choose({ client_id = "c", client_secret = "s",
      token_endpoint_auth_method = "client_secret_post" }, { "client_secret_basic",
        "client_secret_post" }))
    assert.equal("private_key_jwt", choose({ client_id = "c", assertion = print },
      { "private_key_jwt" }))
    assert.equal("private_key_jwt", choose({ client_id = "c", private_key = {} }, nil))
  end)

  it("chooses the algorithm of a client assertion from the key and the server's list",
    function()
      local jwt = require "claude.oauth.jwt"
      local ec, ed = jwt.generate { alg = "ES256" }, jwt.generate { alg = "EdDSA" }
      local rows = { -- key, private_key_alg, the server's list, the algorithm or the error
        { ec, nil, nil, "ES256" },
        { ec, nil, {}, "ES256" },
        { ed, nil, nil, "EdDSA" },
        { ec, nil, { "none", "HS256", "RS256", "ES256" }, "ES256" },
        { ed, nil, { "ES256", "Ed25519", "EdDSA" }, "Ed25519" },
        { ec, "ES256", nil, "ES256" },
        { ec, "ES256", { "ES256", "RS256" }, "ES256" },
        { ec, "ES256", { "RS256" }, "signed with RS256, not with ES256 %(auth.private_key_alg%)" },
        { ec, nil, { "RS256", "PS256" }, "the private key %(EC P%-256%) signs with ES256; the "
          .. "authorization server 'https://as' takes client assertions signed with RS256, "
          .. "PS256 only" },
        { ed, nil, { "ES256", "<script>" }, "signs with EdDSA, Ed25519; .* signed with ES256 "
          .. "only" },
      }
      for i, row in ipairs(rows) do
        local alg, err, kind = client_auth.signing_alg(row[1], row[2], row[3], "https://as")
        if row[4]:find("^%u%w+$") then
          assert.equal(row[4], alg, "row " .. i)
        else
          assert.is_nil(alg, "row " .. i)
          assert.equal("auth", kind)
          assert.matches(row[4], err.message, nil, false, "row " .. i)
        end
      end
    end)

  it("form-encodes Basic credentials (RFC 6749 section 2.3.1)", function()
    local form, headers = {}, {}
    assert(client_auth.methods.client_secret_basic({ client_id = "a:b",
      client_secret = "p w" }, form, headers))
    assert.equal("Basic YSUzQWI6cCUyMHc=", headers.Authorization) -- base64("a%3Ab:p%20w")
    assert.same({}, form)
  end)

  it("reports an assertion function's failure without an assertion", function()
    local form = {}
    local ok, err = client_auth.methods.private_key_jwt({ client_id = "c",
      assertion = function() return nil, "no key" end }, form, {}, {})
    assert.is_nil(ok)
    assert.matches("auth.client_assertion gave no assertion: no key", err.message)
    assert.same({}, form)
  end)
end)

describe("claude.oauth stores", function()
  it("file_store writes mode 0600, atomically, keeping other servers' records", function()
    local dir = harness.tempdir()
    local path = dir .. "/tokens.json"
    local store = oauth.file_store(path)
    assert.is_nil(store.load("https://a/mcp"))
    assert(store.save("https://a/mcp", { access_token = "A" }))
    assert(store.save("https://b/mcp", { access_token = "B", client = { client_id = "c" } }))
    assert.equal(384, core.stat(path).mode) -- 0600
    assert.equal("A", store.load("https://a/mcp").access_token)
    assert.equal("c", store.load("https://b/mcp").client.client_id)
    assert(store.save("https://a/mcp", nil))
    assert.is_nil(store.load("https://a/mcp"))
    assert.equal("B", store.load("https://b/mcp").access_token)
    assert.same({ "tokens.json" }, core.scandir(dir)) -- no temporary file left behind
    -- a file another program made readable is made private again on the next save
    os.execute("chmod 644 " .. harness.quote(path))
    assert(store.save("https://a/mcp", { access_token = "A2" }))
    assert.equal(384, core.stat(path).mode)
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("file_store makes its folder and the missing ones above it, 0700", function()
    local dir = harness.tempdir()
    local store = oauth.file_store(dir .. "/home/.config/my-app/tokens.json")
    assert(store.save("https://a/mcp", { access_token = "A" }))
    assert.equal("A", store.load("https://a/mcp").access_token)
    assert.equal(448, core.stat(dir .. "/home/.config").mode & 511) -- 0700
    assert.equal(448, core.stat(dir .. "/home/.config/my-app").mode & 511)
    assert.equal(384, core.stat(dir .. "/home/.config/my-app/tokens.json").mode)
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("core.write_private fails cleanly and leaves no temporary file", function()
    local dir = harness.tempdir()
    local ok, err, code = core.write_private(dir .. "/missing/x.json", "{}")
    assert.is_nil(ok)
    assert.equal("ENOENT", code)
    assert.matches("no such file", err)
    assert(core.mkdir(dir .. "/taken"))
    ok, err, code = core.write_private(dir .. "/taken", "{}") -- a directory is in the way
    assert.is_nil(ok)
    assert.equal("EISDIR", code)
    assert.matches("directory", err)
    assert.same({ "taken" }, core.scandir(dir))
    assert.has_error(function() core.write_private("a\0b", "") end)
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("file_store reports a file that is not JSON, kind auth", function()
    local path = harness.tempfile("not json")
    local store = oauth.file_store(path)
    local r, err, kind = store.load("k")
    assert.is_nil(r)
    assert.equal("auth", kind)
    assert.matches("is not a JSON object", err.message)
    os.remove(path)
  end)

  it("memory_store keeps copies", function()
    local store = oauth.memory_store()
    local rec = { access_token = "x" }
    store.save("k", rec)
    rec.access_token = "changed"
    assert.equal("x", store.load("k").access_token)
  end)

  it("refuses a path that is not a string, at the caller's line", function()
    local ok, err = pcall(function() oauth.file_store(42) end)
    assert.is_false(ok)
    assert.matches("oauth_spec.lua:%d+: bad argument #1 to 'file_store' %(string expected",
      err)
  end)
end)
