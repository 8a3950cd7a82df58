-- The C layer of JWT: core.base64url_*, claude.core.Key (PEM, JWK,
-- generation, export) and JWS signatures (src/base64.c, key.c, key_jwk.c,
-- jws.c), against published vectors and hostile inputs.
local core = require "claude.core"
local vectors = require "support.jose_vectors"

local b64, unb64 = core.base64url_encode, core.base64url_decode

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- Flips one bit of a string (at byte i, default the middle).
local function flip(s, i)
  i = i or #s // 2 + 1
  return s:sub(1, i - 1) .. string.char(s:byte(i) ~ 1) .. s:sub(i + 1)
end

describe("core.base64url", function()
  -- RFC 4648 section 10, in the URL alphabet without padding
  local rows = { { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" },
    { "foob", "Zm9vYg" }, { "fooba", "Zm9vYmE" }, { "foobar", "Zm9vYmFy" },
    { "\251\255\191", "-_-_" }, { "\0\0\0", "AAAA" } }
  for _, row in ipairs(rows) do
    it("encodes and decodes '" .. row[2] .. "'", function()
      assert.equal(row[2], b64(row[1]))
      assert.equal(row[1], unb64(row[2]))
    end)
  end

  it("round-trips every byte value at every length", function()
    local all = {}
    for i = 0, 255 do all[#all + 1] = string.char(i) end
    local s = table.concat(all)
    for n = 0, 64 do
      local part = s:sub(1, n) .. s:sub(256 - n)
      assert.equal(part, unb64(b64(part)))
    end
  end)

  local bad = {
    { "padding", "Zg==", "padding is not allowed" },
    { "standard alphabet", "ab+/", "a byte is not in the alphabet" },
    { "a blank", "Zm9v Yg", "a byte is not in the alphabet" },
    { "a newline", "Zm9v\nYg", "a byte is not in the alphabet" },
    { "a NUL", "Zm9v\0Yg", "a byte is not in the alphabet" },
    { "a length of 4n+1", "Zm9vY", "its length is not that of any byte string" },
    { "stray bits after one byte", "Zh", "bits set past the data" },
    { "stray bits after two bytes", "Zm9", "bits set past the data" },
  }
  for _, row in ipairs(bad) do
    it("refuses " .. row[1], function()
      local v, err, kind = unb64(row[2])
      assert.is_nil(v)
      assert.equal("base64", kind)
      assert.truthy(err:find(row[3], 1, true), err)
    end)
  end

  it("names an offset, never the text", function()
    local _, err = unb64("secretsecret$secret")
    assert.equal("invalid base64url: a byte is not in the alphabet (offset 12)", err)
  end)

  it("decodes a large input", function()
    local big = string.rep("\1\2\3", 1 << 18)
    assert.equal(big, unb64(b64(big)))
  end)
end)

describe("claude.core.Key", function()
  local function gen(kty, arg) return assert(core.key_generate(kty, arg)) end

  describe("generation and export", function()
    local rows = {
      { "RSA", 2048, { kty = "RSA", bits = 2048 }, { "RS256", "RS384", "RS512", "PS256", "PS384",
        "PS512" } },
      { "EC", "P-256", { kty = "EC", crv = "P-256", bits = 256 }, { "ES256" } },
      { "EC", "P-384", { kty = "EC", crv = "P-384", bits = 384 }, { "ES384" } },
      { "EC", "P-521", { kty = "EC", crv = "P-521", bits = 521 }, { "ES512" } },
      { "OKP", "Ed25519", { kty = "OKP", crv = "Ed25519", bits = 256 }, { "EdDSA", "Ed25519" } },
      { "OKP", "Ed448", { kty = "OKP", crv = "Ed448", bits = 456 }, { "EdDSA" } },
      { "oct", 64, { kty = "oct", bits = 512 }, { "HS256", "HS384", "HS512" } },
      { "oct", 32, { kty = "oct", bits = 256 }, { "HS256" } },
    }
    for _, row in ipairs(rows) do
      local kty, arg, info, algs = row[1], row[2], row[3], row[4]
      it(kty .. " " .. arg .. ": info, algorithms, sign and verify with each", function()
        local k = gen(kty, arg)
        info.private = true
        assert.same(info, k:info())
        assert.same(algs, k:algorithms())
        for _, alg in ipairs(algs) do
          local sig = assert(k:sign(alg, "payload"))
          assert.is_true(k:verify(alg, "payload", sig))
          local ok, why = k:verify(alg, "payloaD", sig)
          assert.is_false(ok)
          assert.equal("the signature does not match", why)
          assert.is_false((k:verify(alg, "payload", flip(sig))))
          assert.is_false((k:verify(alg, "payload", sig .. "\0")))
          assert.is_false((k:verify(alg, "payload", "")))
          if kty ~= "oct" then
            assert.is_true(k:public():verify(alg, "payload", sig))
          end
        end
      end)

      if kty ~= "oct" then
        it(kty .. " " .. arg .. ": JWK and PEM round trips, public and private", function()
          local k = gen(kty, arg)
          local alg = algs[1]
          local sig = k:sign(alg, "x")
          local pub = k:public()
          assert.is_false(pub:info().private)
          local pjwk = k:jwk()
          assert.is_nil(pjwk.d)
          assert.same(pjwk, pub:jwk())
          local from_pub = assert(core.key_from_jwk(pjwk))
          assert.is_true(from_pub:verify(alg, "x", sig))
          local priv = assert(core.key_from_jwk(k:jwk(true)))
          assert.is_true(priv:info().private)
          assert.same(k:jwk(true), priv:jwk(true))
          assert.is_true(k:verify(alg, "x", priv:sign(alg, "x")))
          local pem = k:pem()
          assert.truthy(pem:find("^%-%-%-%-%-BEGIN PUBLIC KEY%-%-%-%-%-\n"))
          assert.is_true(assert(core.key_from_pem(pem)):verify(alg, "x", sig))
          local ppem = k:pem(true)
          assert.truthy(ppem:find("^%-%-%-%-%-BEGIN PRIVATE KEY%-%-%-%-%-\n"))
          assert.same(k:jwk(true), assert(core.key_from_pem(ppem)):jwk(true))
        end)
      end
    end

    it("exports a P-521 coordinate at its full 66 bytes", function()
      for _ = 1, 8 do -- a leading zero byte comes up about once in 256 keys; sizes never vary
        local j = gen("EC", "P-521"):jwk(true)
        assert.equal(66, #unb64(j.x))
        assert.equal(66, #unb64(j.y))
        assert.equal(66, #unb64(j.d))
      end
    end)

    it("exports an oct key only as a secret", function()
      local k = gen("oct", 32)
      assert.has_error(function() k:jwk() end,
        "a symmetric (oct) key has no public form (jwk(true) exports the secret)")
      assert.has_error(function() k:pem() end, "a symmetric (oct) key has no PEM form")
      assert.has_error(function() k:public() end, "a symmetric (oct) key has no public half")
      local j = k:jwk(true)
      assert.equal("oct", j.kty)
      assert.equal(32, #unb64(j.k))
    end)

    it("refuses private exports of a public key", function()
      local pub = gen("EC", "P-256"):public()
      assert.equal(pub, pub:public())
      assert.has_error(function() pub:jwk(true) end, "this key has no private half")
      assert.has_error(function() pub:pem(true) end, "this key has no private half")
    end)

    it("refuses bad generation arguments", function()
      assert.has_error(function() core.key_generate("RSA", 1024) end)
      assert.has_error(function() core.key_generate("RSA", 2049) end)
      assert.has_error(function() core.key_generate("EC", "P-192") end)
      assert.has_error(function() core.key_generate("OKP", "X25519") end)
      assert.has_error(function() core.key_generate("oct", 8) end)
      assert.has_error(function() core.key_generate("DSA", 2048) end)
    end)

    it("prints its type, never its material", function()
      assert.equal("claude.core.Key (EC P-256, private)", tostring(gen("EC", "P-256")))
      assert.equal("claude.core.Key (RSA 2048 bits, public)", tostring(gen("RSA", 2048):public()))
      assert.equal("claude.core.Key (oct, 32 bytes)",
        tostring(assert(core.key_from_secret(string.rep("s", 32)))))
      local k = gen("OKP", "Ed25519")
      k:close()
      assert.equal("claude.core.Key (closed)", tostring(k))
    end)

    it("closes idempotently, with <close> too; a closed key raises", function()
      local k = gen("EC", "P-384")
      k:close()
      k:close()
      assert.has_error(function() k:sign("ES384", "x") end, "attempt to use a closed key")
      assert.has_error(function() k:info() end, "attempt to use a closed key")
      do
        local scoped <close> = gen("OKP", "Ed25519")
        assert.is_true(scoped:info().private)
      end
    end)
  end)

  describe("published vectors", function()
    for _, v in ipairs(vectors.rfc7515) do
      it("RFC 7515 " .. v.name, function()
        local k = assert(core.key_from_jwk(v.key))
        local input = v.header .. "." .. vectors.rfc7515_payload
        local sig = unb64(v.signature)
        assert.is_true(k:verify(v.alg, input, sig))
        assert.is_false((k:verify(v.alg, input .. ".", sig)))
        if v.deterministic then assert.equal(v.signature, b64(k:sign(v.alg, input))) end
        if k:info().private then
          assert.is_true(k:verify(v.alg, input, k:sign(v.alg, input)))
        end
      end)
    end

    for _, v in ipairs(vectors.rfc7520) do
      it("RFC 7520 " .. v.name, function()
        local jwk = vectors.rfc7520_keys[v.key]
        local k = assert(core.key_from_jwk(jwk))
        local input = v.header .. "." .. vectors.rfc7520_payload
        assert.is_true(k:verify(v.alg, input, unb64(v.signature)))
        if v.deterministic then
          assert.equal(v.signature, b64(k:sign(v.alg, input)))
        else
          assert.is_true(k:verify(v.alg, input, k:sign(v.alg, input)))
        end
        if v.key ~= "hmac" then
          local pub = assert(core.key_from_jwk(k:jwk()))
          assert.is_true(pub:verify(v.alg, input, unb64(v.signature)))
        end
      end)
    end

    it("RFC 8037 A.4: Ed25519, byte for byte", function()
      local v = vectors.rfc8037
      local k = assert(core.key_from_jwk(v.key))
      assert.equal(v.signature, b64(k:sign("EdDSA", v.input)))
      assert.equal(v.signature, b64(k:sign("Ed25519", v.input)))
      assert.is_true(k:public():verify("EdDSA", v.input, unb64(v.signature)))
      assert.same({ kty = "OKP", crv = "Ed25519", x = v.key.x }, k:jwk())
    end)

    it("the RFC 7520 RSA key signs the same with only n, e and d", function()
      local full = vectors.rfc7520_keys.rsa
      local k = assert(core.key_from_jwk { kty = "RSA", n = full.n, e = full.e, d = full.d })
      local v = vectors.rfc7520[1]
      local input = v.header .. "." .. vectors.rfc7520_payload
      assert.equal(v.signature, b64(k:sign("RS256", input)))
    end)
  end)

  describe("algorithm and key type", function()
    local rsa, ec256, ec384, ed, ed448, hs
    setup(function()
      rsa, ec256, ec384 = gen("RSA", 2048), gen("EC", "P-256"), gen("EC", "P-384")
      ed, ed448, hs = gen("OKP", "Ed25519"), gen("OKP", "Ed448"), gen("oct", 64)
    end)

    it("an HS256 token cannot be checked with an RSA or EC public key (alg confusion)", function()
      -- the classic attack: HMAC keyed with the public key's PEM text or its bytes
      for _, k in ipairs { rsa:public(), ec256:public(), ed:public() } do
        local pem = k:pem()
        local forged = assert(core.key_from_secret(pem)):sign("HS256", "input")
        local ok, why = k:verify("HS256", "input", forged)
        assert.is_false(ok)
        assert.truthy(why:find("HS256 needs a symmetric (oct) key, not an ", 1, true), why)
      end
    end)

    local mismatches = {
      { "RS256", "ec256", "RS256 needs an RSA key, not an EC P-256 key" },
      { "PS256", "ed", "PS256 needs an RSA key, not an OKP Ed25519 key" },
      { "ES256", "rsa", "ES256 needs an EC P-256 key, not an RSA key" },
      { "ES256", "ec384", "ES256 needs an EC P-256 key, not an EC P-384 key" },
      { "ES384", "ec256", "ES384 needs an EC P-384 key, not an EC P-256 key" },
      { "EdDSA", "ec256", "EdDSA needs an OKP (Ed25519 or Ed448) key, not an EC P-256 key" },
      { "Ed25519", "ed448", "Ed25519 needs an OKP Ed25519 key, not an OKP Ed448 key" },
      { "HS256", "rsa", "HS256 needs a symmetric (oct) key, not an RSA key" },
      { "RS256", "hs", "RS256 needs an RSA key, not an oct key" },
      { "ES256", "hs", "ES256 needs an EC P-256 key, not an oct key" },
    }
    for _, row in ipairs(mismatches) do
      it(row[1] .. " refuses " .. row[2], function()
        local keys = { rsa = rsa, ec256 = ec256, ec384 = ec384, ed = ed, ed448 = ed448, hs = hs }
        local k = keys[row[2]]
        local ok, why = k:verify(row[1], "x", string.rep("\0", 64))
        assert.is_false(ok)
        assert.equal(row[3], why)
        assert.same({ false, row[3] }, { k:supports(row[1]) })
        -- (a method: the algorithm is argument #1 to Lua's messages)
        assert.has_error(function() k:sign(row[1], "x") end, "bad argument #1 to 'sign' ("
          .. row[3] .. ")")
      end)
    end

    it("knows no 'none' and no unknown algorithm", function()
      for _, alg in ipairs { "none", "None", "HS257", "es256", "", "RS256\0" } do
        assert.same({ false, "unsupported algorithm" }, { rsa:verify(alg, "x", "") })
        assert.same({ false, "unsupported algorithm" }, { hs:supports(alg) })
        assert.has_error(function() hs:sign(alg, "x") end)
      end
    end)

    it("needs HMAC keys as long as the hash (RFC 7518 3.2)", function()
      local short = assert(core.key_from_secret(string.rep("k", 31)))
      assert.same({ false, "HS256 needs a key of at least 32 bytes" }, { short:supports("HS256") })
      local k48 = assert(core.key_from_secret(string.rep("k", 48)))
      assert.same({ "HS256", "HS384" }, k48:algorithms())
    end)

    it("refuses RSA keys under 2048 bits for use, though it reads them", function()
      local small = assert(core.key_from_pem(io.open("spec/support/rsa1024.pem"):read("a")))
      assert.equal(1024, small:info().bits)
      assert.same({}, small:algorithms())
      assert.same({ false, "RS256 needs an RSA key of at least 2048 bits" }, {
        small:verify("RS256", "x", "y") })
    end)

    it("wants ECDSA signatures as r || s of the curve's width, not DER", function()
      local sig = ec256:sign("ES256", "x")
      assert.equal(64, #sig)
      assert.equal(96, #ec384:sign("ES384", "x"))
      assert.equal(132, #gen("EC", "P-521"):sign("ES512", "x"))
      assert.is_false((ec256:verify("ES256", "x", sig:sub(1, 63))))
      assert.is_false((ec256:verify("ES256", "x", "\0" .. sig)))
      -- the same signature in DER (what OpenSSL makes) is not a JWS signature
      local function int(b)
        b = b:gsub("^%z+", "")
        if b:byte(1) >= 0x80 then b = "\0" .. b end
        return "\2" .. string.char(#b) .. b
      end
      local body = int(sig:sub(1, 32)) .. int(sig:sub(33))
      local der = "\48" .. string.char(#body) .. body
      assert.is_false((ec256:verify("ES256", "x", der)))
      -- zero r and s
      assert.is_false((ec256:verify("ES256", "x", string.rep("\0", 64))))
      assert.is_false((ec256:verify("ES256", "x", string.rep("\255", 64))))
    end)

    it("refuses to sign with a public key", function()
      assert.has_error(function() ec256:public():sign("ES256", "x") end,
        "calling 'sign' on bad self (signing needs a private key)")
    end)
  end)

  describe("from PEM", function()
    local function slurp(name) return assert(io.open("spec/support/" .. name)):read("a") end

    it("reads PKCS#1 RSA, SEC1 EC, certificates and encrypted PKCS#8", function()
      assert.same({ kty = "RSA", bits = 1024, private = true },
        assert(core.key_from_pem(slurp("rsa1024.pem"))):info())
      local enc = slurp("ec_encrypted.pem")
      local k = assert(core.key_from_pem(enc, "correct horse"))
      assert.same({ kty = "EC", crv = "P-256", bits = 256, private = true }, k:info())
      local cert = assert(core.key_from_pem(slurp("ec_cert.pem")))
      assert.same(k:jwk(), cert:jwk())
    end)

    it("never asks for a passphrase, and says which one is wrong", function()
      local enc = slurp("ec_encrypted.pem")
      local v, err, kind = core.key_from_pem(enc)
      assert.is_nil(v)
      assert.equal("key", kind)
      assert.equal("not a key in PEM or DER (or an encrypted one: give its passphrase)", err)
      v, err = core.key_from_pem(enc, "wrong")
      assert.is_nil(v)
      assert.equal("not a key in PEM or DER, or a wrong passphrase", err)
    end)

    it("reads DER", function()
      local k = gen("EC", "P-256")
      local body = k:pem():match("\n(.*)\n%-%-%-%-%-END")
      local der = assert(io.popen("printf '%s' '" .. body:gsub("\n", "")
        .. "' | base64 -d | od -An -v -tx1")):read("a")
      local bytes = der:gsub("%s+", ""):gsub("%x%x", function(h) return string.char(tonumber(h,
        16)) end)
      assert.same(k:jwk(), assert(core.key_from_pem(bytes)):jwk())
    end)

    local bad = {
      { "garbage", "not a key at all" },
      { "an empty string", "" },
      { "a truncated PEM",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
          .. "-----END PUBLIC KEY-----\n" },
      { "a broken certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
      { "random bytes", string.rep("\48\130\255\255", 1000) },
    }
    for _, row in ipairs(bad) do
      it("refuses " .. row[1], function()
        local v, err, kind = core.key_from_pem(row[2])
        assert.is_nil(v)
        assert.equal("key", kind)
        assert.is_string(err)
      end)
    end

    it("refuses key types JWS has no use for", function()
      local v, err, kind = core.key_from_pem(slurp("x25519.pem"))
      assert.is_nil(v)
      assert.equal("key", kind)
      assert.truthy(err:find("^unsupported key"), err)
      v, err = core.key_from_pem(slurp("secp256k1.pem"))
      assert.is_nil(v)
      assert.equal("unsupported key: this elliptic curve (JWS uses P-256, P-384 and P-521)", err)
    end)
  end)

  describe("from JWK", function()
    local function fails(jwk, message)
      local v, err, kind = core.key_from_jwk(jwk)
      assert.is_nil(v)
      assert.equal("key", kind)
      if message then assert.equal(message, err) end
      return err
    end

    it("ignores metadata members", function()
      local j = gen("EC", "P-256"):jwk()
      j.kid, j.alg, j.use, j.key_ops, j.x5c = "k", "ES256", "sig", { "verify" }, { "x" }
      assert.truthy(core.key_from_jwk(j))
    end)

    it("refuses missing or malformed members", function()
      local ec = gen("EC", "P-256"):jwk(true)
      fails({}, "invalid JWK: 'kty' is missing or not a string")
      fails({ kty = 1 }, "invalid JWK: 'kty' is missing or not a string")
      fails({ kty = "DSA" }, "unsupported JWK: 'kty' must be RSA, EC, OKP or oct")
      local j = copy(ec); j.x = nil
      fails(j, "invalid JWK: member 'x' is missing")
      j = copy(ec); j.y = 5
      fails(j, "invalid JWK: member 'y' is not a string")
      j = copy(ec); j.x = j.x .. "="
      fails(j, "invalid JWK: member 'x' is not base64url (padding is not allowed)")
      j = copy(ec); j.x = b64(unb64(j.x):sub(2))
      fails(j, "invalid JWK: member 'x' must be 32 bytes, not 31")
      j = copy(ec); j.d = "AAAA"
      fails(j, "invalid JWK: member 'd' must be 32 bytes, not 3")
      j = copy(ec); j.crv = "P-192"
      fails(j, "unsupported JWK: an EC key's 'crv' must be P-256, P-384 or P-521")
      j = copy(ec); j.crv = "P-384"
      fails(j, "invalid JWK: member 'x' must be 48 bytes, not 32")
      fails({ kty = "oct" }, "invalid JWK: member 'k' is missing")
      fails({ kty = "oct", k = "" }, "invalid JWK: member 'k' is empty")
      fails({ kty = "OKP", crv = "X25519", x = ec.x },
        "unsupported JWK: an OKP key's 'crv' must be Ed25519 or Ed448 (signature curves)")
      fails({ kty = "RSA", n = string.rep("A", 9000), e = "AQAB" },
        "invalid JWK: member 'n' is too long")
    end)

    it("refuses a point that is not on the curve", function()
      local j = gen("EC", "P-256"):jwk()
      local y = unb64(j.y)
      j.y = b64(flip(y, 32))
      fails(j, "invalid JWK: 'x' and 'y' are not a point of P-256")
    end)

    it("refuses private members that do not match the public ones", function()
      local a, b = gen("EC", "P-256"):jwk(true), gen("EC", "P-256"):jwk(true)
      a.d = b.d
      fails(a, "invalid JWK: 'd' does not match 'x' and 'y'")
      local e1, e2 = gen("OKP", "Ed25519"):jwk(true), gen("OKP", "Ed25519"):jwk(true)
      e1.d = e2.d
      fails(e1, "invalid JWK: 'd' does not match 'x'")
      local r = copy(vectors.rfc7520_keys.rsa)
      r.dp = r.dq
      fails(r, "invalid JWK: the RSA private members do not match 'n'")
      r = copy(vectors.rfc7520_keys.rsa)
      r.qi = nil
      fails(r,
        "invalid JWK: an RSA private key has 'd' and either all or none of "
          .. "'p', 'q', 'dp', 'dq', 'qi'")
      r = copy(vectors.rfc7520_keys.rsa)
      r.oth = {}
      fails(r, "unsupported JWK: RSA with more than two primes ('oth')")
    end)

    it("refuses RSA exponents over 64 bits", function()
      local j = copy(vectors.rfc7520_keys.rsa)
      j.d, j.p, j.q, j.dp, j.dq, j.qi = nil, nil, nil, nil, nil, nil
      j.e = b64(string.rep("\1", 9))
      fails(j, "unsupported JWK: an RSA exponent over 64 bits")
    end)

    it("never puts member values in its messages", function()
      local j = gen("EC", "P-256"):jwk(true)
      j.d = j.d:sub(1, -3) .. "$$"
      local err = fails(j)
      assert.is_nil(err:find(j.d:sub(1, 10), 1, true))
    end)

    it("survives random members", function()
      local kinds = { "RSA", "EC", "OKP", "oct" }
      for i = 1, 300 do
        local r = core.random_bytes(1 + i % 80)
        local j = { kty = kinds[i % 4 + 1], crv = ({ "P-256", "P-384", "Ed25519",
          "P-521" })[i % 4 + 1],
          n = b64(r), e = b64(r:sub(1, 3)), x = b64(r), y = b64(r), d = i % 2 == 0 and b64(r)
            or nil, k = b64(r) }
        local k = core.key_from_jwk(j)
        if k then k:verify("HS256", "x", "y") end
      end
    end)
  end)
end)
