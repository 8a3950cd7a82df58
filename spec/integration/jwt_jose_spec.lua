-- claude.oauth.jwt against the `jose` npm library (spec/support/jose_peer.mjs
-- on Node 22): tokens we sign verify in jose, tokens jose signs verify here,
-- for every algorithm both implement; a JWK set jose's keys are published in
-- is fetched by jwks.verifier, and jose fetches ours from claude.http.server.
local json = require "claude.json"
local core = require "claude.core"
local process = require "claude.process"
local server = require "claude.http.server"
local jwt = require "claude.oauth.jwt"
local jwks = require "claude.oauth.jwks"
local harness = require "support.harness"

local NODE = harness.root .. "/node_modules/.bin/node"

local peer, jwks_url

-- One request to jose; its answer.
local function ask(req)
  assert(peer:write(json.encode(req) .. "\n"))
  local line = assert(peer:read_line(60))
  local answer = json.decode(line)
  assert(not answer.error, answer.error)
  return answer
end

local ASYMMETRIC = { "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
  "ES512", "EdDSA" }

describe("claude.oauth.jwt and jose", function()
  setup(function()
    peer = assert(process.spawn { NODE, args = { "spec/support/jose_peer.mjs" } })
    local hello = json.decode(assert(peer:read_line(30)))
    jwks_url = "http://127.0.0.1:" .. hello.port .. "/jwks.json"
  end)

  teardown(function()
    peer:close_stdin()
    peer:wait(10)
    peer:close()
  end)

  for _, alg in ipairs(ASYMMETRIC) do
    it(alg .. ": ours verifies in jose, jose's verifies here", function()
      local key = jwt.generate { alg = alg }
      local claims = { sub = "alice", iss = "https://as", aud = "https://rs",
        exp = os.time() + 300, scope = "read write", n = 12345678901 }
      local token = assert(jwt.sign(claims, { key = key, alg = alg, kid = "ours" }))
      local got = ask { op = "verify", token = token, jwk = key:jwk(), alg = alg,
        issuer = "https://as", audience = "https://rs" }
      assert.is_true(got.ok, got.message)
      assert.same(claims, got.payload)
      assert.same({ alg = alg, typ = "JWT", kid = "ours" }, got.header)
      -- jose tells a forged signature apart too
      local h, p = token:match("^([^.]+)%.([^.]+)%.")
      local bad = ask { op = "verify", token = h .. "." .. p .. "." .. core.base64url_encode(
        jwt.generate { alg = alg }:sign(alg, h .. "." .. p)), jwk = key:jwk(), alg = alg }
      assert.is_false(bad.ok)
      assert.equal("ERR_JWS_SIGNATURE_VERIFICATION_FAILED", bad.code)

      local pair = ask { op = "keypair", alg = alg }
      local theirs = ask { op = "sign", id = pair.id, alg = alg, kid = "theirs",
        claims = { sub = "bob", iss = "https://as", aud = { "https://rs", "x" },
          exp = os.time() + 300 } }
      local verified, header = jwt.verify(theirs.token, { keys = pair.jwk, issuer = "https://as",
        audience = "https://rs", algorithms = { alg } })
      assert.is_table(verified, tostring(header))
      assert.equal("theirs", header.kid)
      assert.equal("bob", verified.sub)
      -- and through a key set, chosen by kid
      pair.jwk.kid = "theirs"
      assert.truthy(jwt.verify(theirs.token, { keys = { keys = { key:jwk(), pair.jwk } } }))
      -- a key of the same type (and curve) that did not sign it: the signature is what fails
      local c, verr, kind = jwt.verify(theirs.token, { keys = key:public() })
      assert.is_nil(c)
      assert.equal("auth", kind)
      assert.equal("signature", verr.reason, verr.message)
    end)
  end

  it("HS256, HS384, HS512 both ways with one secret", function()
    local secret = core.random_bytes(64)
    local k = core.base64url_encode(secret)
    local id = ask { op = "secret", k = k }.id
    for _, alg in ipairs { "HS256", "HS384", "HS512" } do
      local token = jwt.sign({ sub = "s", exp = os.time() + 60 }, { key = secret, alg = alg })
      local got = ask { op = "verify", token = token, jwk = { kty = "oct", k = k }, alg = alg }
      assert.is_true(got.ok, got.message)
      local theirs = ask { op = "sign", id = id, alg = alg, claims = { sub = "t",
        exp = os.time() + 60 } }
      assert.equal("t", jwt.verify(theirs.token, { keys = { kty = "oct", k = k } }).sub)
      assert.equal("t", jwt.verify(theirs.token, { keys = secret }).sub)
    end
  end)

  it("Ed25519 keys of jose sign under the fully specified alg 'Ed25519' too", function()
    local pair = ask { op = "keypair", alg = "Ed25519" }
    local theirs = ask { op = "sign", id = pair.id, alg = "Ed25519", claims = {
      exp = os.time() + 60 } }
    local _, header = jwt.verify(theirs.token, { keys = pair.jwk })
    assert.equal("Ed25519", header.alg)
    local key = jwt.generate { kty = "OKP", crv = "Ed25519" }
    local ours = jwt.sign({ exp = os.time() + 60 }, { key = key, alg = "Ed25519" })
    assert.is_true(ask { op = "verify", token = ours, jwk = key:jwk(), alg = "Ed25519" }.ok)
  end)

  it("jose refuses what we refuse: expired, wrong audience, alg confusion", function()
    local key = jwt.generate { alg = "RS256" }
    local expired = jwt.sign({ exp = os.time() - 600 }, { key = key })
    local got = ask { op = "verify", token = expired, jwk = key:jwk(), alg = "RS256" }
    assert.equal("ERR_JWT_EXPIRED", got.code)
    assert.equal("expired", select(2, jwt.verify(expired, { keys = key })).reason)
    local other_aud = jwt.sign({ exp = os.time() + 60, aud = "https://evil" }, { key = key })
    got = ask { op = "verify", token = other_aud, jwk = key:jwk(), alg = "RS256",
      audience = "https://rs" }
    assert.equal("ERR_JWT_CLAIM_VALIDATION_FAILED", got.code)
    assert.equal("audience", select(2, jwt.verify(other_aud, { keys = key,
      audience = "https://rs" })).reason)
    -- an HS256 token keyed with the RSA public key's PEM
    local input = core.base64url_encode('{"alg":"HS256"}') .. "."
      .. core.base64url_encode(json.encode { exp = os.time() + 60 })
    local forged = input .. "." .. core.base64url_encode(jwt.secret(key:pem()):sign("HS256", input))
    local c, err = jwt.verify(forged, { keys = key:pem() })
    assert.is_nil(c)
    assert.equal("key", err.reason)
  end)

  it("jwks.verifier fetches jose's keys from a JWK set, and follows a rotation", function()
    local a = ask { op = "keypair", alg = "ES256" }
    local b = ask { op = "keypair", alg = "PS256" }
    a.jwk.kid, a.jwk.alg, a.jwk.use = "a", "ES256", "sig"
    b.jwk.kid, b.jwk.alg = "b", "PS256"
    ask { op = "publish", jwks = { keys = { a.jwk } } }
    local hits0 = ask { op = "hits" }.hits
    local verify = jwks.verifier { jwks_url = jwks_url, issuer = "https://as",
      audience = "https://rs",
      algorithms = { "ES256", "PS256" }, cooldown = 0 }
    local function theirs(pair, alg, kid)
      return ask { op = "sign", id = pair.id, alg = alg, kid = kid,
        claims = { iss = "https://as", aud = "https://rs", exp = os.time() + 60, sub = kid } }.token
    end
    assert.equal("a", verify(theirs(a, "ES256", "a")).sub)
    assert.equal("a", verify(theirs(a, "ES256", "a")).sub)
    assert.equal(hits0 + 1, ask { op = "hits" }.hits)
    ask { op = "publish", jwks = { keys = { a.jwk, b.jwk } } }
    assert.equal("b", verify(theirs(b, "PS256", "b")).sub)
    assert.equal(hits0 + 2, ask { op = "hits" }.hits)
    -- a key's alg binds it: b's kid with ES256 is refused without a fetch
    local c, err, kind = verify(theirs(a, "ES256", "b"))
    assert.is_nil(c)
    assert.equal("auth", kind)
    assert.equal("the key with the token's kid 'b' cannot verify ES256", err.message)
    assert.equal(hits0 + 2, ask { op = "hits" }.hits)
  end)

  it("jose fetches our JWK set from claude.http.server and verifies our tokens", function()
    local set = assert(jwks.new {})
    local es, ed = jwt.generate { alg = "ES384" }, jwt.generate { alg = "EdDSA" }
    set:add(es, { kid = "es", alg = "ES384", use = "sig" })
    set:add(ed, { kid = "ed" })
    local published = json.encode(set:jwks())
    assert.is_nil(published:find('"d"', 1, true))
    local srv = assert(server.listen { on_request = function(_, res)
      res:respond(200, { ["content-type"] = "application/json" }, published)
    end })
    local url = "http://127.0.0.1:" .. srv:port() .. "/jwks.json"
    for kid, key in pairs { es = es, ed = ed } do
      local token = jwt.sign({ iss = "https://as", aud = "https://rs", exp = os.time() + 60 },
        { key = key, kid = kid })
      local got = ask { op = "verify_remote", token = token, url = url, issuer = "https://as",
        audience = "https://rs" }
      assert.is_true(got.ok, got.message)
    end
    local stranger = jwt.sign({ exp = os.time() + 60 }, { key = jwt.generate { alg = "ES384" },
      kid = "es" })
    assert.is_false(ask { op = "verify_remote", token = stranger, url = url }.ok)
    srv:close()
  end)

  it("client assertions verify in jose (RFC 7523)", function()
    local key = jwt.generate { alg = "PS256" }
    local assertion = jwt.client_assertion { client_id = "client-7", audience = "https://as/token",
      key = key, alg = "PS256", kid = "k" }
    local got = ask { op = "verify", token = assertion, jwk = key:jwk(), alg = "PS256",
      issuer = "client-7", audience = "https://as/token" }
    assert.is_true(got.ok, got.message)
    assert.equal("client-7", got.payload.sub)
    assert.is_string(got.payload.jti)
    assert.equal(300, got.payload.exp - got.payload.iat)
  end)
end)
