-- claude.oauth.jwks over HTTP: key sets fetched from a claude.http.server
-- on the same loop, cached, refetched for a rotated key at most once per
-- cooldown, fetched once for many waiting tasks; and every way a fetch
-- fails.
local claude = require "claude"
local async = require "claude.async"
local json = require "claude.json"
local server = require "claude.http.server"
local jwt = require "claude.oauth.jwt"
local jwks = require "claude.oauth.jwks"
local harness = require "support.harness"

local JSON = { ["content-type"] = "application/json" }

local srv, base
local published = { keys = {} }
local hits = {}
local gate -- an event: /jwks answers once it is set (when set)

local function key_jwk(key, kid)
  local j = key:jwk()
  j.kid = kid
  return j
end

setup(function()
  srv = assert(server.listen { on_request = function(req, res)
    local path = req.path:match("^[^?]*")
    hits[path] = (hits[path] or 0) + 1
    if path == "/jwks" then
      if gate then gate:wait() end
      res:respond(200, JSON, json.encode(published))
    elseif path == "/missing" then
      res:respond(404, JSON, "{}")
    elseif path == "/redirect" then
      res:respond(302, { location = "/jwks" }, "")
    elseif path == "/text" then
      res:respond(200, { ["content-type"] = "text/html" }, "<html>keys</html>")
    elseif path == "/not-a-set" then
      res:respond(200, JSON, '{"keys":{"a":1}}')
    elseif path == "/big" then
      res:respond(200, JSON, '{"keys":[],"pad":"' .. string.rep("x", 300000) .. '"}')
    elseif path == "/many" then
      local many = {}
      for i = 1, 101 do many[i] = { kty = "oct", k = "AAAA", kid = tostring(i) } end
      res:respond(200, JSON, json.encode { keys = many })
    elseif path == "/odd" then
      -- one usable key, one for encryption, one this library cannot use, one broken
      res:respond(200, JSON, json.encode { keys = {
        published.keys[1],
        { kty = "RSA", use = "enc", kid = "enc", n = "AQAB", e = "AQAB" },
        { kty = "OKP", crv = "X25519", kid = "x25519", x = "AAAA" },
        { kty = "EC", crv = "P-256", kid = "broken", x = "AA", y = "AA" },
      } })
    elseif path == "/warm" then
      res:respond(200, JSON, "{}")
    else
      res:respond(404, JSON, "{}")
    end
  end })
  base = "http://127.0.0.1:" .. srv:port()
end)

teardown(function() srv:close() end)

-- The HTTP client keeps one idle connection to the server between
-- requests; a spec that makes it drop it (a body over max_body) must not
-- read as a leak, nor the next one, which opens it again, as a new handle.
local function warm()
  assert(require("claude.http.client").request { url = base .. "/warm", timeout = 10 })
end

before_each(function()
  warm()
  hits, gate = {}, nil
  harness.before()
end)
after_each(function()
  warm()
  harness.after()
end)

describe("jwks.verifier with jwks_url", function()
  local k1, k2
  setup(function()
    k1, k2 = jwt.generate { alg = "ES256" }, jwt.generate { alg = "EdDSA" }
  end)

  local function token(key, kid, claims)
    claims = claims or {}
    claims.iss, claims.aud = claims.iss or "https://as", claims.aud or "https://rs"
    claims.exp = claims.exp or os.time() + 300
    return assert(jwt.sign(claims, { key = key, kid = kid }))
  end

  it("fetches on first use, then verifies from the cache", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify, set = jwks.verifier { jwks_url = base .. "/jwks", issuer = "https://as",
      audience = "https://rs" }
    assert.equal(0, hits["/jwks"] or 0) -- nothing before the first token
    assert.equal("claude.oauth.KeySet (" .. base .. "/jwks, not fetched)", tostring(set))
    for _ = 1, 5 do
      local claims, err = verify(token(k1, "one", { sub = "alice" }))
      assert.is_nil(err)
      assert.equal("alice", claims.sub)
    end
    assert.equal(1, hits["/jwks"])
    local c, err, kind = verify(token(k1, "one", { aud = "https://other" }))
    assert.is_nil(c)
    assert.equal("auth", kind)
    assert.equal("audience", err.reason)
  end)

  it("does not refetch for made-up kids within the cooldown", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify = jwks.verifier { jwks_url = base .. "/jwks", audience = "https://rs",
      cooldown = 3600 }
    assert.truthy(verify(token(k1, "one")))
    for i = 1, 20 do
      local c, err, kind = verify(token(k2, "made-up-" .. i))
      assert.is_nil(c)
      assert.equal("auth", kind)
      assert.equal("no key with the token's kid 'made-up-" .. i .. "'", err.message)
    end
    assert.equal(1, hits["/jwks"])
  end)

  it("refetches for an unknown kid (a rotated key) once the cooldown is over", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify = jwks.verifier { jwks_url = base .. "/jwks", audience = "https://rs",
      cooldown = 0 }
    assert.truthy(verify(token(k1, "one")))
    assert.is_nil((verify(token(k2, "two"))))
    assert.equal(2, hits["/jwks"])
    published = { keys = { key_jwk(k2, "two") } }
    assert.truthy(verify(token(k2, "two")))
    assert.equal(3, hits["/jwks"])
    -- the set now lacks "one": its tokens fail, after one more look
    assert.is_nil((verify(token(k1, "one"))))
    assert.equal(4, hits["/jwks"])
  end)

  it("refetches after cache_ttl", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify = jwks.verifier { jwks_url = base .. "/jwks", audience = "https://rs",
      cache_ttl = 0, cooldown = 0 }
    for _ = 1, 3 do assert.truthy(verify(token(k1, "one"))) end
    assert.equal(3, hits["/jwks"])
  end)

  it("fetches once for many tasks that need the set at the same time", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify = jwks.verifier { jwks_url = base .. "/jwks", audience = "https://rs" }
    gate = async.event()
    local tasks = {}
    for i = 1, 8 do
      tasks[i] = claude.spawn(function() return verify(token(k1, "one", { sub = "u" .. i })) end)
    end
    gate:set()
    for i, task in ipairs(tasks) do
      local claims = task:wait(30)
      assert.equal("u" .. i, claims.sub)
    end
    assert.equal(1, hits["/jwks"])
  end)

  it("keeps the keys it has when a refetch fails", function()
    published = { keys = { key_jwk(k1, "one") } }
    local set = jwks.remote(base .. "/jwks", { cache_ttl = 0, cooldown = 0 })
    local verify = jwks.verifier { keys = set, audience = "https://rs" }
    assert.truthy(verify(token(k1, "one")))
    set.url = base .. "/missing" -- the server goes away
    assert.truthy(verify(token(k1, "one")))
    assert.equal(1, hits["/missing"])
    local c, err, kind = verify(token(k2, "two"))
    assert.is_nil(c)
    assert.equal("connection", kind)
    assert.truthy(err.message:find("HTTP 404", 1, true), err.message)
  end)

  it("says why a fetched key with the token's kid cannot be used", function()
    published = { keys = { key_jwk(k1, "one") } }
    local verify, set = jwks.verifier { jwks_url = base .. "/odd", audience = "https://rs" }
    assert.truthy(verify(token(k1, "one")))
    assert.equal(1, #set:keys())
    local c, err, kind = verify(token(k2, "broken"))
    assert.is_nil(c)
    assert.equal("auth", kind)
    assert.equal("the key set's key 'broken' cannot be used: "
      .. "invalid JWK: member 'x' must be 32 bytes, not 1", err.message)
    c, err = verify(token(k2, "x25519"))
    assert.is_nil(c)
    assert.truthy(err.message:find("^the key set's key 'x25519' cannot be used: unsupported JWK"))
    c, err = verify(token(k2, "enc"))
    assert.is_nil(c)
    assert.equal("no key with the token's kid 'enc'", err.message)
    assert.equal(1, hits["/odd"]) -- known kids: no refetch
  end)

  describe("fails", function()
    local rows = {
      { "a 404", "/missing", "connection", "HTTP 404" },
      { "a redirect", "/redirect", "connection", "HTTP 302 (redirects are not followed)" },
      { "a document that is not JSON", "/text", "auth", "is not a JWK set" },
      { "keys that are not a list", "/not-a-set", "auth", "is not a JWK set" },
      { "a document over max_size", "/big", "auth", "is larger than 262144 bytes" },
      { "more than 100 keys", "/many", "auth", "has more than 100 keys" },
    }
    for _, row in ipairs(rows) do
      it("for " .. row[1], function()
        local verify = jwks.verifier { jwks_url = base .. row[2], audience = "https://rs" }
        local c, err, kind = verify(token(k1, "one"))
        assert.is_nil(c)
        assert.equal(row[3], kind)
        assert.truthy(err.message:find(row[4], 1, true), err.message)
        assert.truthy(err.message:find(base .. row[2], 1, true), err.message)
      end)
    end

    it("for a refused connection, and within the cooldown without trying again", function()
      local closed = assert(server.listen { on_request = function() end })
      local url = "http://127.0.0.1:" .. closed:port() .. "/jwks"
      closed:close()
      local verify, set = jwks.verifier { jwks_url = url, audience = "https://rs" }
      local c, err, kind = verify(token(k1, "one"))
      assert.is_nil(c)
      assert.equal("connection", kind)
      assert.truthy(err.message:find("could not be fetched", 1, true))
      assert.equal(1, set.fetches)
      -- within the cooldown the same failure comes back without a fetch
      local c2, err2, kind2 = verify(token(k1, "one"))
      assert.is_nil(c2)
      assert.equal("connection", kind2)
      assert.equal(err.message, err2.message)
      assert.equal(1, set.fetches)
    end)
  end)

  it("needs https but for loopback hosts", function()
    for _, url in ipairs { "http://example.com/jwks", "ftp://127.0.0.1/jwks", "jwks.json",
      "http://127.0.0.1.example.com/jwks", "https://user@as/jwks", "http://10.0.0.1/jwks",
      "https://as\\jwks", "http://127.0.0.1:0/jwks" } do
      local ok, err = pcall(jwks.verifier, { jwks_url = url, audience = "x" })
      assert.is_false(ok)
      assert.truthy(err:find("bad field 'jwks_url' to 'verifier'", 1, true), err)
      ok, err = pcall(jwks.remote, url)
      assert.is_false(ok)
      assert.truthy(err:find("bad argument #1 to 'remote'", 1, true), err)
    end
    for _, url in ipairs { "https://as.example/jwks", "http://127.0.0.1:8080/jwks",
      "http://localhost/jwks", "http://[::1]:9/jwks", "HTTPS://AS/jwks" } do
      assert.is_function(jwks.verifier { jwks_url = url, audience = "x" })
    end
    assert.has_error(function() jwks.remote("https://as/jwks", { ttl = 1 }) end,
      "unknown field 'ttl' to 'remote'")
  end)
end)
