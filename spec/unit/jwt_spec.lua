-- claude.oauth.jwt (sign, decode, verify, keys, client assertions) and the
-- local key sets of claude.oauth.jwks.
local core = require "claude.core"
local json = require "claude.json"
local jwt = require "claude.oauth.jwt"
local jwks = require "claude.oauth.jwks"
local vectors = require "support.jose_vectors"

local b64, unb64 = core.base64url_encode, core.base64url_decode
local NOW = 1700000000

local function parts(token)
  return token:match("^([^.]*)%.([^.]*)%.([^.]*)$")
end

-- A token with the given header and claims, signed with key (or unsigned).
local function forge(header, claims, key, alg)
  local input = b64(json.encode(header)) .. "." .. b64(json.encode(claims))
  return input .. "." .. (key and b64(key:sign(alg or header.alg, input)) or "")
end

-- Asserts an auth failure with `reason`; returns the error.
local function refused(reason, claims, err, kind)
  assert.is_nil(claims)
  assert.equal("auth", kind, tostring(err))
  assert.equal(reason, err.reason, tostring(err))
  return err
end

local keys = {}
setup(function()
  keys.RS = jwt.generate { kty = "RSA", bits = 2048 }
  keys.ES256 = jwt.generate { alg = "ES256" }
  keys.ES384 = jwt.generate { alg = "ES384" }
  keys.ES512 = jwt.generate { alg = "ES512" }
  keys.Ed = jwt.generate { kty = "OKP", crv = "Ed25519" }
  keys.Ed448 = jwt.generate { kty = "OKP", crv = "Ed448" }
  keys.HS = jwt.generate { kty = "oct", size = 64 }
end)

local ALGS = {
  { "RS256", "RS" }, { "RS384", "RS" }, { "RS512", "RS" }, { "PS256", "RS" }, { "PS384", "RS" },
  { "PS512", "RS" }, { "ES256", "ES256" }, { "ES384", "ES384" }, { "ES512", "ES512" },
  { "EdDSA", "Ed" }, { "Ed25519", "Ed" }, { "EdDSA", "Ed448" }, { "HS256", "HS" },
  { "HS384", "HS" }, { "HS512", "HS" },
}

describe("jwt.sign and jwt.verify", function()
  for _, row in ipairs(ALGS) do
    local alg, name = row[1], row[2]
    it("round-trip " .. alg .. " (" .. name .. ")", function()
      local key = keys[name]
      local claims = { sub = "alice", exp = NOW + 60, aud = "https://mcp.example", n = 1 }
      local token = assert(jwt.sign(claims, { key = key, alg = alg, kid = "k1" }))
      local header, decoded = jwt.decode(token)
      assert.same({ alg = alg, typ = "JWT", kid = "k1" }, header)
      assert.same(claims, decoded)
      local verifier = name == "HS" and key or key:public()
      local got, h = jwt.verify(token, { keys = verifier, now = NOW,
        audience = "https://mcp.example" })
      assert.same(claims, got)
      assert.same(header, h)
      -- the same key as PEM text and as a JWK
      if name ~= "HS" then
        assert.same(claims, (jwt.verify(token, { keys = key:pem(), now = NOW })))
        assert.same(claims, (jwt.verify(token, { keys = key:jwk(), now = NOW })))
      end
      -- tampered signature, header and payload
      local h64, p64, s64 = parts(token)
      local sig = unb64(s64)
      local flipped = sig:sub(1, 5) .. string.char(sig:byte(6) ~ 0x20) .. sig:sub(7)
      refused("signature", jwt.verify(h64 .. "." .. p64 .. "." .. b64(flipped), { keys = verifier,
        now = NOW }))
      local other = b64(json.encode { sub = "mallory", exp = NOW + 60 })
      refused("signature", jwt.verify(h64 .. "." .. other .. "." .. s64, { keys = verifier,
        now = NOW }))
      local hdr = b64(json.encode { alg = alg, typ = "JWT", kid = "k2" })
      refused("signature", jwt.verify(hdr .. "." .. p64 .. "." .. s64, { keys = verifier,
        now = NOW }))
    end)
  end

  it("defaults the algorithm to the key's first", function()
    local rows = { { "RS", "RS256" }, { "ES384", "ES384" }, { "Ed", "EdDSA" }, { "HS", "HS256" } }
    for _, row in ipairs(rows) do
      local header = jwt.decode(jwt.sign({}, { key = keys[row[1]] }))
      assert.equal(row[2], header.alg)
    end
  end)

  it("takes header members and typ, and keeps alg its own", function()
    local token = jwt.sign({ exp = NOW + 1 }, { key = keys.ES256, typ = "at+jwt",
      header = { cty = "x", jku = "https://ignored" } })
    assert.same({ alg = "ES256", typ = "at+jwt", cty = "x", jku = "https://ignored" },
      (jwt.decode(token)))
    assert.has_error(function()
      jwt.sign({}, { key = keys.ES256, header = { alg = "HS256" } })
    end, "bad field 'header' to 'sign' (its alg differs from the signing algorithm)")
  end)

  it("signs an empty claims set as {}", function()
    local _, p = parts(jwt.sign({}, { key = keys.HS }))
    assert.equal("{}", unb64(p))
  end)

  it("takes a secret string for HMAC, never PEM text", function()
    local secret = string.rep("s", 32)
    local token = jwt.sign({ exp = NOW + 1 }, { key = secret, alg = "HS256" })
    assert.truthy(jwt.verify(token, { keys = secret, now = NOW }))
    assert.truthy(jwt.verify(token, { keys = jwt.secret(secret), now = NOW }))
    assert.truthy(jwt.verify(token, { keys = { kty = "oct", k = b64(secret) }, now = NOW }))
    local pem = keys.RS:public():pem()
    assert.has_error(function() jwt.sign({}, { key = pem, alg = "HS256" }) end,
      "bad field 'key' to 'sign' (HS256 needs a symmetric (oct) key, not an RSA key)")
  end)

  describe("misuse", function()
    local rows = {
      { "unsigned tokens", {}, { key = keys.HS, alg = "none" },
        "bad field 'alg' to 'sign' (unsigned tokens are not made)" },
      { "an unknown alg", {}, { key = keys.HS, alg = "HS257" },
        "bad field 'alg' to 'sign' (one of HS256, HS384, HS512, RS256, RS384, RS512, PS256, "
          .. "PS384, PS512, ES256, ES384, ES512, EdDSA, Ed25519 expected)" },
      { "a key of another type", {}, { key = "ES", alg = "RS256" },
        "bad field 'key' to 'sign' (RS256 needs an RSA key, not an EC P-256 key)" },
      { "a public key", {}, { key = "ESpub", alg = "ES256" },
        "bad field 'key' to 'sign' (signing needs a private key)" },
      { "a short HMAC key", {}, { key = string.rep("k", 16), alg = "HS256" },
        "bad field 'key' to 'sign' (HS256 needs a key of at least 32 bytes)" },
      { "no key", {}, { alg = "HS256" }, "bad field 'key' to 'sign' (a key expected)" },
      { "an unknown option", {}, { key = "ES", kidd = "x" },
        "unknown field 'kidd' to 'sign' (did you mean 'kid'?)" },
      { "a list as claims", { 1, 2 }, { key = "ES" },
        "bad argument #1 to 'sign' (a JSON object expected, got a list)" },
      { "claims JSON cannot hold", { f = print }, { key = "ES" }, nil },
      { "a non-string kid", {}, { key = "ES", kid = 5 },
        "bad field 'kid' to 'sign' (string expected, got number)" },
    }
    for _, row in ipairs(rows) do
      it("raises for " .. row[1] .. " at the caller's line", function()
        local opts = {}
        for k, v in pairs(row[3]) do opts[k] = v end
        if opts.key == "ES" then opts.key = keys.ES256 end
        if opts.key == "ESpub" then opts.key = keys.ES256:public() end
        if opts.key == keys.HS then opts.key = keys.HS end
        local ok, err = pcall(function()
          local token = jwt.sign(row[2], opts) -- not a tail call: this line is the caller
          return token
        end)
        assert.is_false(ok)
        assert.truthy(err:find("jwt_spec.lua:%d+: "), err)
        if row[4] then assert.equal(row[4], err:gsub("^.-jwt_spec.lua:%d+: ", "")) end
      end)
    end

    it("returns unreadable key material as an error", function()
      local token, err, kind = jwt.sign({}, {
        key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", alg = "ES256" })
      assert.is_nil(token)
      assert.equal("key", kind)
      assert.equal("key", err.kind)
    end)
  end)
end)

describe("jwt.decode", function()
  it("reads RFC 7515 A.1 without a key", function()
    local v = vectors.rfc7515[1]
    local header, claims = jwt.decode(v.header .. "." .. vectors.rfc7515_payload .. "."
      .. v.signature)
    assert.same({ typ = "JWT", alg = "HS256" }, header)
    assert.same({ iss = "joe", exp = 1300819380, ["http://example.com/is_root"] = true }, claims)
  end)

  local good_h, good_p = b64('{"alg":"HS256"}'), b64('{"sub":"x"}')
  local sig = b64("signature")
  local malformed = {
    { "an empty string", "", "not three dot-separated parts" },
    { "one part", "abc", "not three dot-separated parts" },
    { "two parts", good_h .. "." .. good_p, "not three dot-separated parts" },
    { "five parts (JWE)", good_h .. "." .. good_p .. "." .. sig .. ".a.b",
      "encrypted tokens (JWE) are not supported" },
    { "an empty header", "." .. good_p .. "." .. sig, "the header is empty" },
    { "an empty payload", good_h .. ".." .. sig, "the payload is empty" },
    { "an empty signature", good_h .. "." .. good_p .. ".", "the signature is empty" },
    { "padding", good_h .. "." .. good_p .. "." .. b64("sig1") .. "==",
      "the signature is not base64url (padding is not allowed" },
    { "standard base64", good_h .. "." .. good_p .. ".ab+/",
      "the signature is not base64url (a byte is not in the alphabet" },
    { "blanks", " " .. good_h .. "." .. good_p .. "." .. sig, "the header is not base64url" },
    { "a header that is not JSON", b64("{alg") .. "." .. good_p .. "." .. sig,
      "the header is not a JSON object" },
    { "a header that is a list", b64('["HS256"]') .. "." .. good_p .. "." .. sig,
      "the header is not a JSON object" },
    { "a header that is a string", b64('"x"') .. "." .. good_p .. "." .. sig,
      "the header is not a JSON object" },
    { "a payload that is a list", good_h .. "." .. b64("[]") .. "." .. sig,
      "the payload is not a JSON object" },
    { "a payload that is a number", good_h .. "." .. b64("42") .. "." .. sig,
      "the payload is not a JSON object" },
    { "a payload with text after it", good_h .. "." .. b64('{"a":1} x') .. "." .. sig,
      "the payload is not a JSON object" },
    { "a header without alg", b64('{"typ":"JWT"}') .. "." .. good_p .. "." .. sig,
      "the header has no alg" },
    { "an alg that is not a string", b64('{"alg":5}') .. "." .. good_p .. "." .. sig,
      "the header has no alg" },
    { "a huge token", string.rep("A", 70000) .. ".a.b", "larger than 65536 bytes" },
    { "deep nesting", good_h .. "." .. b64(string.rep("[", 40000)) .. "." .. sig,
      "the payload is not a JSON object" },
  }
  for _, row in ipairs(malformed) do
    it("refuses " .. row[1], function()
      local h, err, kind = jwt.decode(row[2])
      refused("malformed", h, err, kind)
      assert.truthy(err.message:find(row[3], 1, true), err.message)
      assert.truthy(err.message:find("^malformed token: "))
    end)
  end

  it("raises for a token that is not a string", function()
    assert.has_error(function() jwt.decode(nil) end)
    assert.has_error(function() jwt.decode({}) end)
  end)
end)

describe("jwt.verify", function()
  it("verifies the RFC 7515 A.1 to A.3 tokens as JWTs", function()
    for _, v in ipairs(vectors.rfc7515) do
      local token = v.header .. "." .. vectors.rfc7515_payload .. "." .. v.signature
      local claims, header = jwt.verify(token, { keys = v.key, now = 1300819000, issuer = "joe" })
      assert.equal(true, claims["http://example.com/is_root"], v.name)
      assert.equal(v.alg, header.alg)
      refused("expired", jwt.verify(token, { keys = v.key, now = 1300819380 + 60 }))
    end
  end)

  describe("algorithms", function()
    it("never accepts alg none, with or without a signature", function()
      local unsigned = forge({ alg = "none" }, { sub = "x", exp = NOW + 60 })
      local err = refused("algorithm", jwt.verify(unsigned .. b64("x"), { keys = keys.HS,
        now = NOW }))
      assert.equal("unsigned tokens (alg none) are not accepted", err.message)
      refused("malformed", jwt.verify(unsigned, { keys = keys.HS, now = NOW }))
      for _, spelled in ipairs { "None", "NONE", "nOnE" } do
        refused("algorithm", jwt.verify(forge({ alg = spelled }, {}) .. "AA", { keys = keys.HS,
          now = NOW }))
      end
      assert.has_error(function() jwt.verify("a.b.c", { keys = keys.HS, algorithms = {
        "none" } }) end,
        "bad field 'algorithms' to 'verify' ('none' is never accepted)")
    end)

    it("refuses an HS256 token made with an RSA or EC public key as the secret (alg confusion)",
      function()
      for _, name in ipairs { "RS", "ES256", "Ed" } do
        local pub = keys[name]:public()
        local claims = { sub = "admin", exp = NOW + 60 }
        for _, secret in ipairs { pub:pem(), json.encode(pub:jwk()), unb64(pub:jwk().x
          or pub:jwk().n) } do
          local forged = forge({ alg = "HS256" }, claims, jwt.secret(secret))
          for _, as in ipairs { pub, pub:pem(), pub:jwk(), { keys = { pub:jwk() } } } do
            local c, err, kind = jwt.verify(forged, { keys = as, now = NOW })
            refused("key", c, err, kind)
            assert.truthy(err.message:find("HS256") or err.message:find("no key for HS256"),
              err.message)
          end
        end
      end
    end)

    it("holds to the allow-list", function()
      local token = jwt.sign({ exp = NOW + 60 }, { key = keys.RS, alg = "PS256" })
      assert.truthy(jwt.verify(token, { keys = keys.RS:public(), now = NOW, algorithms = { "PS256",
        "ES256" } }))
      local err = refused("algorithm", jwt.verify(token, { keys = keys.RS:public(), now = NOW,
        algorithms = { "RS256" } }))
      assert.equal("algorithm PS256 is not allowed", err.message)
      refused("algorithm", jwt.verify(token, { keys = keys.RS:public(), now = NOW,
        algorithms = "RS256" }))
      assert.has_error(function() jwt.verify(token, { keys = keys.RS, algorithms = {
        "RS257" } }) end,
        "bad field 'algorithms' to 'verify' (unknown algorithm 'RS257')")
    end)

    it("refuses a curve the alg does not name", function()
      local t384 = jwt.sign({ exp = NOW + 60 }, { key = keys.ES384 })
      local _, p, s = parts(t384)
      local relabeled = b64('{"alg":"ES256"}') .. "." .. p .. "." .. s
      refused("key", jwt.verify(relabeled, { keys = keys.ES384:public(), now = NOW }))
    end)

    it("refuses unknown algorithms without quoting long ones", function()
      local err = refused("algorithm", jwt.verify(forge({ alg = "XS256" }, {}) .. "AA", {
        keys = keys.HS, now = NOW }))
      assert.equal("the token's algorithm 'XS256' is not supported", err.message)
      local long = string.rep("Z", 200)
      err = refused("algorithm", jwt.verify(forge({ alg = long }, {}) .. "AA", { keys = keys.HS,
        now = NOW }))
      assert.is_nil(err.message:find(long, 1, true))
    end)

    it("refuses critical header parameters it does not know (b64 false among them)", function()
      local token = forge({ alg = "HS512", crit = { "b64" }, b64 = false }, { exp = NOW + 1 },
        keys.HS)
      local err = refused("malformed", jwt.verify(token, { keys = keys.HS, now = NOW }))
      assert.equal("the token has critical header parameters (crit), none are supported",
        err.message)
    end)
  end)

  describe("claims", function()
    local key = nil
    local function token(claims) return jwt.sign(claims, { key = key }) end
    local function check(claims, opts)
      opts = opts or {}
      opts.keys, opts.now = key, opts.now or NOW
      return jwt.verify(token(claims), opts)
    end
    setup(function() key = keys.HS end)

    -- claims, options, reason (nil: accepted)
    local rows = {
      { "exp ahead", { exp = NOW + 1 }, {}, nil },
      { "exp within the leeway", { exp = NOW - 59 }, {}, nil },
      { "exp at the leeway", { exp = NOW - 60 }, {}, "expired" },
      { "exp passed, no leeway", { exp = NOW }, { leeway = 0 }, "expired" },
      { "exp a float", { exp = NOW + 0.5 }, { leeway = 0 }, nil },
      { "exp a string", { exp = tostring(NOW + 100) }, {}, "claim" },
      { "no exp", { sub = "x" }, {}, "claim" },
      { "no exp, none required", { sub = "x" }, { required_claims = {} }, nil },
      { "exp null", { exp = json.null }, {}, "claim" },
      { "nbf passed", { exp = NOW + 100, nbf = NOW - 1 }, {}, nil },
      { "nbf within the leeway", { exp = NOW + 100, nbf = NOW + 60 }, {}, nil },
      { "nbf ahead", { exp = NOW + 100, nbf = NOW + 61 }, {}, "not_yet_valid" },
      { "nbf a string", { exp = NOW + 100, nbf = "soon" }, {}, "claim" },
      { "iat in the future", { exp = NOW + 100, iat = NOW + 61 }, {}, "issued_in_future" },
      { "iat within the leeway", { exp = NOW + 100, iat = NOW + 60 }, {}, nil },
      { "max_age kept", { exp = NOW + 100, iat = NOW - 100 }, { max_age = 100 }, nil },
      { "max_age passed", { exp = NOW + 100, iat = NOW - 161 }, { max_age = 100 }, "too_old" },
      { "max_age without iat", { exp = NOW + 100 }, { max_age = 100 }, "claim" },
      { "issuer", { exp = NOW + 1, iss = "https://as" }, { issuer = "https://as" }, nil },
      { "issuer from a list", { exp = NOW + 1, iss = "https://b" }, { issuer = { "https://a",
        "https://b" } }, nil },
      { "another issuer", { exp = NOW + 1, iss = "https://evil" }, { issuer = "https://as" },
        "issuer" },
      { "no issuer", { exp = NOW + 1 }, { issuer = "https://as" }, "issuer" },
      { "an issuer that is not a string", { exp = NOW + 1, iss = { "https://as" } }, {
        issuer = "https://as" }, "issuer" },
      { "audience", { exp = NOW + 1, aud = "https://rs" }, { audience = "https://rs" }, nil },
      { "audience in a list", { exp = NOW + 1, aud = { "x", "https://rs" } }, {
        audience = "https://rs" }, nil },
      { "one of the audiences", { exp = NOW + 1, aud = "b" }, { audience = { "a", "b" } }, nil },
      { "another audience", { exp = NOW + 1, aud = "https://other" }, { audience = "https://rs" },
        "audience" },
      { "no audience", { exp = NOW + 1 }, { audience = "https://rs" }, "audience" },
      { "an empty audience list", { exp = NOW + 1, aud = json.array() }, {
        audience = "https://rs" }, "audience" },
      { "audience as a number", { exp = NOW + 1, aud = 5 }, { audience = "5" }, "audience" },
      { "a prefix of the audience", { exp = NOW + 1, aud = "https://rs.evil" }, {
        audience = "https://rs" }, "audience" },
      { "subject", { exp = NOW + 1, sub = "alice" }, { subject = "alice" }, nil },
      { "another subject", { exp = NOW + 1, sub = "bob" }, { subject = "alice" }, "subject" },
      { "required claims", { exp = NOW + 1, scope = "a" }, { required_claims = { "exp",
        "scope" } }, nil },
      { "a missing required claim", { exp = NOW + 1 }, { required_claims = { "exp", "scope" } },
        "claim" },
      { "now as a function", { exp = NOW + 1 }, { now = function() return NOW + 100 end },
        "expired" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local claims, err, kind = check(row[2], row[3])
        if row[4] == nil then
          assert.is_nil(kind, tostring(err))
          assert.same(row[2], claims)
        else
          refused(row[4], claims, err, kind)
        end
      end)
    end

    it("checks claims only once the signature holds", function()
      local t = token { exp = NOW - 1000 }
      local h, p = parts(t)
      refused("signature", jwt.verify(h .. "." .. p .. "." .. b64(string.rep("x", 64)), {
        keys = key, now = NOW }))
    end)

    it("checks the typ header when asked", function()
      local t = jwt.sign({ exp = NOW + 1 }, { key = key, typ = "at+jwt" })
      assert.truthy(jwt.verify(t, { keys = key, now = NOW, typ = "at+jwt" }))
      assert.truthy(jwt.verify(t, { keys = key, now = NOW, typ = "application/at+JWT" }))
      refused("type", jwt.verify(token { exp = NOW + 1 }, { keys = key, now = NOW,
        typ = "at+jwt" }))
    end)

    it("uses the clock when no now is given", function()
      assert.truthy(jwt.verify(token { exp = os.time() + 120 }, { keys = key }))
      refused("expired", jwt.verify(token { exp = os.time() - 120 }, { keys = key }))
    end)
  end)

  describe("keys", function()
    local function jwk_of(key, kid, extra)
      local j = key:jwk()
      j.kid = kid
      for k, v in pairs(extra or {}) do j[k] = v end
      return j
    end

    it("chooses by kid in a JWK set", function()
      local set = { keys = { jwk_of(keys.ES256, "a"), jwk_of(keys.RS, "b"), jwk_of(keys.Ed, "c") } }
      for kid, key in pairs { a = keys.ES256, b = keys.RS, c = keys.Ed } do
        local t = jwt.sign({ exp = NOW + 1 }, { key = key, kid = kid })
        assert.truthy(jwt.verify(t, { keys = set, now = NOW }))
      end
      local t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES256, kid = "b" })
      local err = refused("key", jwt.verify(t, { keys = set, now = NOW }))
      assert.equal("the key with the token's kid 'b' cannot verify ES256", err.message)
      t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES256, kid = "zzz" })
      err = refused("key", jwt.verify(t, { keys = set, now = NOW }))
      assert.equal("no key with the token's kid 'zzz'", err.message)
    end)

    it("tries every fitting key when the token names no kid", function()
      local other = jwt.generate { alg = "ES256" }
      local set = { keys = { jwk_of(other), jwk_of(keys.RS), jwk_of(keys.ES256) } }
      local t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES256 })
      assert.truthy(jwt.verify(t, { keys = set, now = NOW }))
      t = jwt.sign({ exp = NOW + 1 }, { key = jwt.generate { alg = "ES256" } })
      refused("signature", jwt.verify(t, { keys = set, now = NOW }))
      t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES384 })
      local err = refused("key", jwt.verify(t, { keys = set, now = NOW }))
      assert.equal("no key for ES384", err.message)
    end)

    it("honours a key's alg, use and key_ops", function()
      local t = jwt.sign({ exp = NOW + 1 }, { key = keys.RS, alg = "PS256", kid = "r" })
      refused("key", jwt.verify(t, { keys = { keys = { jwk_of(keys.RS, "r", { alg = "RS256" }) } },
        now = NOW }))
      refused("key", jwt.verify(t, { keys = { keys = { jwk_of(keys.RS, "r", { use = "enc" }) } },
        now = NOW }))
      refused("key", jwt.verify(t, { keys = { keys = { jwk_of(keys.RS, "r", { key_ops = {
        "sign" } }) } }, now = NOW }))
      assert.truthy(jwt.verify(t, { keys = { keys = { jwk_of(keys.RS, "r", { alg = "PS256",
        use = "sig",
        key_ops = { "verify" } }) } }, now = NOW }))
    end)

    it("takes a list of claude.core.Key values, secrets among them (found by the jwt fuzz target)",
      function()
        local secret = jwt.secret(string.rep("s", 32))
        local list = { secret, keys.ES256:public(), keys.Ed:public() }
        for _, key in ipairs { secret, keys.ES256, keys.Ed } do
          local t = jwt.sign({ exp = NOW + 1 }, { key = key })
          assert.truthy(jwt.verify(t, { keys = list, now = NOW }))
        end
        local t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES384 })
        assert.equal("no key for ES384", refused("key", jwt.verify(t, { keys = list, now = NOW }))
          .message)
      end)

    it("uses a single key whatever the token's kid", function()
      local t = jwt.sign({ exp = NOW + 1 }, { key = keys.Ed, kid = "anything" })
      assert.truthy(jwt.verify(t, { keys = keys.Ed:public(), now = NOW }))
    end)

    it("returns unreadable key material as kind key", function()
      local t = jwt.sign({ exp = NOW + 1 }, { key = keys.ES256 })
      local c, err, kind = jwt.verify(t, { keys = { kty = "EC", crv = "P-256", x = "AA",
        y = "AA" }, now = NOW })
      assert.is_nil(c)
      assert.equal("key", kind)
      assert.truthy(err.message:find("invalid JWK", 1, true))
      c, err, kind = jwt.verify(t, { keys = { keys = { { kty = "EC", crv = "P-256", x = "AA",
        y = "AA", kid = "bad" } } }, now = NOW })
      assert.is_nil(c)
      assert.equal("key", kind)
      assert.equal("key #1 (kid 'bad'): invalid JWK: member 'x' must be 32 bytes, not 1",
        err.message)
    end)
  end)

  it("never puts the token or a key in a message", function()
    local secret = string.rep("S3cr3t", 8)
    local t = jwt.sign({ exp = NOW - 1000, sub = "alice@example.com", aud = "https://x" }, {
      key = secret })
    local h, p, s = parts(t)
    local variants = {
      t, h .. "." .. p .. "." .. b64("wrong"), h .. "." .. p .. "x." .. s, h .. "==." .. p .. "."
        .. s,
      h .. "." .. p, t .. ".x.y",
    }
    local opts = {
      { keys = secret, now = NOW }, { keys = secret, now = NOW, audience = "https://y" },
      { keys = keys.RS:pem(), now = NOW }, { keys = { keys = { keys.ES256:jwk(true) } },
        now = NOW },
    }
    for _, v in ipairs(variants) do
      for _, o in ipairs(opts) do
        local c, err = jwt.verify(v, o)
        assert.is_nil(c)
        local text = tostring(err)
        for _, piece in ipairs { h, p, s, secret, "alice", b64(secret), keys.ES256:jwk(true).d } do
          assert.is_nil(text:find(piece:sub(1, 12), 1, true), text)
        end
      end
    end
  end)

  it("raises for bad options at the caller's line", function()
    local rows = {
      { { keys = keys.HS, audince = "x" },
        "unknown field 'audince' to 'verify' (did you mean 'audience'?)" },
      { { audience = "x" }, "bad field 'keys' to 'verify' (keys to verify with expected)" },
      { { keys = keys.HS, leeway = -1 },
        "bad field 'leeway' to 'verify' (a number of seconds >= 0 expected)" },
      { { keys = keys.HS, issuer = 5 },
        "bad field 'issuer' to 'verify' (a string or a list of strings expected)" },
      { { keys = keys.HS, audience = { "a", 5 } },
        "bad field 'audience' to 'verify' (a list of strings expected, got a number in it)" },
      { { keys = keys.HS, now = "now" },
        "bad field 'now' to 'verify' (a number or a function expected)" },
      { { keys = keys.HS, typ = 1 }, "bad field 'typ' to 'verify' (string expected, got number)" },
      { { keys = keys.HS, max_size = 0 },
        "bad field 'max_size' to 'verify' (a positive integer expected)" },
      { { keys = 42 }, nil },
    }
    for _, row in ipairs(rows) do
      local ok, err = pcall(function()
        local claims = jwt.verify("a.b.c", row[1])
        return claims
      end)
      assert.is_false(ok)
      if row[2] then
        assert.equal(row[2], (err:gsub("^.-jwt_spec.lua:%d+: ", "")))
      end
    end
    local ok, err = pcall(function()
      local claims = jwt.verify(nil, { keys = keys.HS })
      return claims
    end)
    assert.is_false(ok)
    assert.truthy(err:find(
      "jwt_spec.lua:%d+: bad argument #1 to 'verify' %(string expected, got nil%)"), err)
  end)
end)

describe("jwt.client_assertion", function()
  it("makes an RFC 7523 assertion", function()
    local t = assert(jwt.client_assertion { client_id = "client-1", audience = "https://as/token",
      key = keys.ES256, kid = "k", now = NOW })
    local header, claims = jwt.decode(t)
    assert.same({ alg = "ES256", typ = "JWT", kid = "k" }, header)
    assert.equal("client-1", claims.iss)
    assert.equal("client-1", claims.sub)
    assert.equal("https://as/token", claims.aud)
    assert.equal(NOW, claims.iat)
    assert.equal(NOW + 300, claims.exp)
    assert.truthy(claims.jti:match("^[%w_-]+$") and #claims.jti >= 32)
    assert.same(claims, (jwt.verify(t, { keys = keys.ES256:public(), now = NOW, issuer = "client-1",
      audience = "https://as/token", subject = "client-1" })))
  end)

  it("gives each assertion its own jti", function()
    local seen = {}
    for _ = 1, 50 do
      local _, claims = jwt.decode(jwt.client_assertion { client_id = "c", audience = "a",
        key = keys.Ed })
      assert.is_nil(seen[claims.jti])
      seen[claims.jti] = true
    end
  end)

  it("takes a lifetime, extra claims, an alg, and an HMAC secret (client_secret_jwt)", function()
    local t = jwt.client_assertion { client_id = "c", audience = "a", key = string.rep("x", 48),
      alg = "HS384", lifetime = 60, now = NOW, claims = { scope = "s", iss = "ignored" } }
    local header, claims = jwt.decode(t)
    assert.equal("HS384", header.alg)
    assert.equal(NOW + 60, claims.exp)
    assert.equal("s", claims.scope)
    assert.equal("c", claims.iss)
  end)

  it("raises for missing fields", function()
    assert.has_error(function() jwt.client_assertion { audience = "a", key = keys.Ed } end,
      "bad field 'client_id' to 'client_assertion' (a non-empty string expected)")
    assert.has_error(function() jwt.client_assertion { client_id = "c", key = keys.Ed } end,
      "bad field 'audience' to 'client_assertion' (a non-empty string expected)")
    assert.has_error(function() jwt.client_assertion { client_id = "c", audience = "a",
      key = keys.Ed, lifetime = 0 } end,
      "bad field 'lifetime' to 'client_assertion' (a number of seconds > 0 expected)")
    assert.has_error(function() jwt.client_assertion { client_id = "c", audience = "a" } end,
      "bad field 'key' to 'client_assertion' (a key expected)")
  end)
end)

describe("jwt keys", function()
  it("reads PEM, JWK and keys, and says why not", function()
    local k = keys.ES256
    assert.equal(k, jwt.key(k))
    assert.same(k:jwk(true), jwt.key(k:pem(true)):jwk(true))
    assert.same(k:jwk(), jwt.key(k:jwk()):jwk())
    local v, err, kind = jwt.key("nonsense")
    assert.is_nil(v)
    assert.equal("key", kind)
    assert.equal("key", err.kind)
    local enc = io.open("spec/support/ec_encrypted.pem"):read("a")
    assert.truthy(jwt.key(enc, { passphrase = "correct horse" }))
    assert.has_error(function() jwt.key(5) end)
  end)

  it("generates by alg", function()
    assert.same({ kty = "EC", crv = "P-521", bits = 521, private = true }, jwt.generate {
      alg = "ES512" }:info())
    assert.equal("RSA", jwt.generate { alg = "PS256" }:info().kty)
    assert.equal(48, jwt.generate { alg = "HS384" }:info().bits // 8)
    assert.has_error(function() jwt.generate { alg = "none" } end,
      "bad field 'alg' to 'generate' (unknown algorithm)")
    assert.has_error(function() jwt.generate { kty = "EC", crv = "P-192" } end)
    assert.has_error(function() jwt.generate { kty = "XX" } end,
      "bad field 'kty' to 'generate' (RSA, EC, OKP or oct expected)")
  end)

  it("computes RFC 7638 thumbprints", function()
    local rfc7638 = { kty = "RSA", e = "AQAB", alg = "RS256", kid = "2011-04-29", n = table.concat {
      "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6t",
      "Soc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-",
      "65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qN",
      "Lyrdkt-bFTWhAI4vMQFh6WeZu0f",
      "M4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw" } }
    assert.equal("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", jwt.thumbprint(rfc7638))
    assert.equal(vectors.rfc8037.thumbprint, jwt.thumbprint(vectors.rfc8037.key))
    assert.equal(jwt.thumbprint(keys.ES384), jwt.thumbprint(keys.ES384:public():pem()))
  end)
end)

describe("jwks (local sets)", function()
  it("builds a set, leaves out encryption and unsupported keys, exports the public set", function()
    local set = assert(jwks.new { keys = {
      (function()
        local j = keys.ES256:jwk()
        j.kid, j.alg, j.use = "a", "ES256", "sig"
        return j
      end)(),
      (function() local j = keys.RS:jwk(); j.kid = "enc"; j.use = "enc"; return j end)(),
      { kty = "OKP", crv = "X25519", x = "AAAA", kid = "x" },
      { kty = "oct", k = b64(string.rep("k", 32)), kid = "h" },
    } })
    assert.equal(2, #set:keys())
    local exported = set:jwks()
    assert.equal(1, #exported.keys)
    assert.same({ kty = "EC", crv = "P-256", x = keys.ES256:jwk().x, y = keys.ES256:jwk().y,
      kid = "a",
      alg = "ES256", use = "sig" }, exported.keys[1])
    assert.truthy(json.encode(exported):find('"keys":[', 1, true))
    assert.truthy(jwks.new(exported))
    assert.equal("claude.oauth.KeySet (2 keys)", tostring(set))
  end)

  it("fails a local set on a key it cannot read", function()
    local set, err, kind = jwks.new { keys = { keys.ES256:jwk(), { kty = "RSA", n = "AQAB" } } }
    assert.is_nil(set)
    assert.equal("key", kind)
    assert.equal("key #2: invalid JWK: member 'e' is missing", err.message)
    assert.has_error(function() jwks.new(5) end)
    assert.has_error(function() jwks.new { keys = { a = 1 } } end)
  end)

  it("adds keys with metadata and selects them", function()
    local set = assert(jwks.new {})
    set:add(keys.Ed:public(), { kid = "ed" })
    set:add(keys.RS:public():pem(), { kid = "rs", alg = "RS256" })
    assert.equal(1, #set:select { alg = "EdDSA", kid = "ed" })
    local none, err, kind = set:select { alg = "EdDSA", kid = "rs" }
    assert.is_nil(none)
    assert.equal("auth", kind)
    assert.equal("the key with the token's kid 'rs' cannot verify EdDSA", err.message)
    assert.same({}, set:select { alg = "EdDSA", kid = "nope" })
    assert.equal(1, #set:select { alg = "RS256" })
    assert.equal(0, #set:select { alg = "PS256" })
    assert.equal(0, #set:select { alg = "HS256" })
    local t = jwt.sign({ exp = NOW + 1 }, { key = keys.RS, kid = "rs" })
    assert.truthy(jwt.verify(t, { keys = set, now = NOW }))
  end)

  it("is the verifier's key set", function()
    local verify = jwks.verifier { keys = { keys = { keys.ES256:jwk() } }, audience = "https://rs",
      issuer = "https://as", now = NOW }
    local t = jwt.sign({ exp = NOW + 1, iss = "https://as", aud = "https://rs", sub = "u" }, {
      key = keys.ES256 })
    assert.same({ exp = NOW + 1, iss = "https://as", aud = "https://rs", sub = "u" }, verify(t))
    refused("audience", verify(jwt.sign({ exp = NOW + 1, iss = "https://as", aud = "x" }, {
      key = keys.ES256 })))
    refused("malformed", verify(nil))
    refused("malformed", verify(""))
    assert.has_error(function() jwks.verifier { keys = keys.ES256 } end,
      "bad field 'audience' to 'verifier' (the audience this server accepts is required)")
    assert.has_error(function() jwks.verifier { audience = "x" } end,
      "bad argument #1 to 'verifier' (one of jwks_url and keys expected)")
    assert.has_error(function() jwks.verifier { audience = "x", keys = { keys = { {
      kty = "EC" } } } } end)
  end)

  it("takes every option of jwt.verify but keys, and passes it on", function()
    local set = jwks.new { keys.ES256:jwk() }
    local t = jwt.sign({ exp = NOW + 1, aud = "https://rs" }, { key = keys.ES256 })
    local function check(opts)
      opts.keys, opts.audience, opts.now = set, "https://rs", opts.now or NOW
      return jwks.verifier(opts)(t)
    end
    assert.is_table(check {})
    refused("type", check { typ = "at+jwt" })
    refused("malformed", check { max_size = 16 })
    refused("claim", check { required_claims = { "sub" } })
    refused("algorithm", check { algorithms = { "ES384" } })
    refused("issuer", check { issuer = "https://as" })
    refused("subject", check { subject = "u" })
    refused("claim", check { max_age = 10 })
    refused("expired", check { leeway = 0, now = NOW + 1 })
    assert.has_error(function() check { leway = 1 } end,
      "unknown field 'leway' to 'verifier' (did you mean 'leeway'?)")
  end)
end)
