--- JSON Web Tokens (RFC 7519) in JWS compact form (RFC 7515): signing,
-- decoding and verification, keys, and RFC 7523 client assertions.
--
--     local jwt = require "claude.oauth.jwt"
--     local key = jwt.generate{ kty = "EC", crv = "P-256" }
--     local token = jwt.sign({ sub = "alice", aud = "https://rs", exp = os.time() + 300 },
--       { key = key, kid = "k1" })
--     local claims, err = jwt.verify(token, { keys = key:public(), audience = "https://rs" })
--
-- Keys are `claude.core.Key` values (libcrypto's, see `key`). Wherever a
-- key is taken, a PEM text (it contains `-----BEGIN`), a JWK table or a
-- Key will do; any other string is an HMAC secret. A PEM text is never
-- used as a secret, and every algorithm is bound to one key type (and curve):
-- a token whose `alg` names HS256 cannot be checked with an RSA or EC key.
-- `none` is not an algorithm here. Error messages never quote a token or key.
--
-- Verification failures are `nil, err, "auth"`; `err.reason` says which
-- check failed: `malformed`, `algorithm`, `key` (no key for the token),
-- `signature`, `expired`, `not_yet_valid`, `issued_in_future`, `too_old`,
-- `claim` (a required claim missing or of the wrong type), `issuer`,
-- `audience`, `subject`, `type`. Key material that cannot be read is
-- `nil, err, "key"`; a key set fetched over HTTP can also fail with
-- `"connection"` (see claude.oauth.jwks).
-- @module claude.oauth.jwt
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local keyset = require "claude.oauth.keyset"

local M = {}

local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring
local misuse, typename = errors.misuse, errors.typename

local KEY_MT = "claude.core.Key"
local MAX_TOKEN = 64 * 1024 -- bytes: far above any real token, far below harm
local DEFAULT_LEEWAY = 60
local ASSERTION_LIFETIME = 300

-- Every algorithm the C layer knows (src/jws.c), in RFC 7518's order.
local ALGORITHMS = { "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384",
  "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519" }
local KNOWN = {}
for _, a in ipairs(ALGORITHMS) do KNOWN[a] = true end

local auth, quoted, to_key = keyset.auth, keyset.quoted, keyset.to_key
M._auth, M._quoted, M._to_key = auth, quoted, to_key

local function is_key(v)
  return typename(v) == KEY_MT
end

---------------------------------------------------------------------------------------------
-- Keys
---------------------------------------------------------------------------------------------

--- Reads a key: PEM (PKCS#8, SPKI, PKCS#1 RSA, SEC1 EC, encrypted PKCS#8
-- with `opts.passphrase`, or a certificate for its public key) or the same in
-- DER, a JWK table (RSA, EC P-256/P-384/P-521, OKP Ed25519/Ed448, oct), or a
-- Key (returned as it is).
-- @param source string or table
-- @tparam[opt] table opts `{ passphrase = string }`
-- @return a `claude.core.Key`, or nil, err, "key"
function M.key(source, opts)
  if opts ~= nil and type(opts) ~= "table" then
    errors.argerror(2, "key", "table expected, got %s", typename(opts))
  end
  if type(source) ~= "string" and type(source) ~= "table" and not is_key(source) then
    errors.argerror(1, "key", "PEM text, JWK table or key expected, got %s", typename(source))
  end
  local passphrase = opts and opts.passphrase
  if passphrase ~= nil and type(passphrase) ~= "string" then
    misuse("bad field 'passphrase' to 'key' (string expected, got %s)", typename(passphrase))
  end
  return to_key(source, "pem", passphrase)
end

--- An HMAC key (JWK "oct") holding `bytes`.
-- @tparam string bytes the secret (at least as long as the hash: 32 bytes for HS256)
-- @return a `claude.core.Key`
function M.secret(bytes)
  errors.check(bytes, 1, "secret", "string")
  if bytes == "" then errors.argerror(1, "secret", "an empty secret") end
  local k, err, kind = core.key_from_secret(bytes)
  if not k then return errors.fail(kind, err) end
  return k
end

local GENERATE = { kty = true, crv = true, bits = true, size = true, alg = true }
local BY_ALG = {
  HS256 = { "oct", 32 }, HS384 = { "oct", 48 }, HS512 = { "oct", 64 },
  ES256 = { "EC", "P-256" }, ES384 = { "EC", "P-384" }, ES512 = { "EC", "P-521" },
  EdDSA = { "OKP", "Ed25519" }, Ed25519 = { "OKP", "Ed25519" },
}

--- Generates a key: `{ kty = "EC", crv = "P-256" | "P-384" | "P-521" }`,
-- `{ kty = "RSA", bits = 2048 }` (2048 to 8192), `{ kty = "OKP", crv =
-- "Ed25519" | "Ed448" }`, `{ kty = "oct", size = 32 }` (bytes), or `{ alg =
-- "ES256" }` (the key that algorithm needs; RS and PS algorithms: 2048-bit RSA).
-- @tparam table opts
-- @return a private `claude.core.Key`, or nil, err, "crypto"
function M.generate(opts)
  errors.check(opts, 1, "generate", "table")
  errors.check_fields(opts, GENERATE, "generate")
  local kty, arg = opts.kty, nil
  if opts.alg ~= nil then
    local by = BY_ALG[opts.alg] or (KNOWN[opts.alg] and { "RSA", 2048 })
    if not by then misuse("bad field 'alg' to 'generate' (unknown algorithm)") end
    kty, arg = by[1], by[2]
  elseif kty == "RSA" then
    arg = opts.bits or 2048
  elseif kty == "EC" then
    arg = opts.crv or "P-256"
  elseif kty == "OKP" then
    arg = opts.crv or "Ed25519"
  elseif kty == "oct" then
    arg = opts.size or 32
  else
    misuse("bad field 'kty' to 'generate' (RSA, EC, OKP or oct expected)")
  end
  local ok, k, err, kind = pcall(core.key_generate, kty, arg)
  if not ok then -- core's argument error: its parenthesised reason
    misuse("bad argument #1 to 'generate' (%s)", (tostring(k):gsub("^.-%((.*)%)$", "%1")))
  end
  if not k then return errors.fail(kind, err) end
  return k
end

--- The JWK thumbprint of a key (RFC 7638): base64url of the SHA-256 of its
-- required public members; a stable `kid`.
-- @param key a Key, PEM text or JWK
-- @treturn string
function M.thumbprint(key)
  local k, err = to_key(key, "secret")
  if not k then misuse("bad argument #1 to 'thumbprint' (%s)", errors.message(err)) end
  local j = k:jwk(k:info().kty == "oct")
  local members
  if j.kty == "RSA" then
    members = { "e", "kty", "n" }
  elseif j.kty == "EC" then
    members = { "crv", "kty", "x", "y" }
  elseif j.kty == "OKP" then
    members = { "crv", "kty", "x" }
  else
    members = { "k", "kty" }
  end
  local parts = {}
  for i, m in ipairs(members) do parts[i] = json.encode(m) .. ":" .. json.encode(j[m]) end
  return core.base64url_encode(core.sha256("{" .. table.concat(parts, ",") .. "}"))
end

---------------------------------------------------------------------------------------------
-- Tokens
---------------------------------------------------------------------------------------------

local function b64(s) return core.base64url_encode(s) end

-- A JSON object's text: an empty table is `{}`, a list is refused.
local function encode_object(t, what, fname)
  if next(t) == nil then return "{}" end
  if json.is_array(t) then
    misuse("bad %s to '%s' (a JSON object expected, got a list)", what, fname)
  end
  local ok, s = pcall(json.encode, t)
  if not ok then misuse("bad %s to '%s' (%s)", what, fname, tostring(s)) end
  return s
end

local SIGN = { alg = true, key = true, kid = true, header = true, typ = true }

local function sign(claims, opts, fname)
  errors.check(claims, 1, fname, "table")
  errors.check(opts, 2, fname, "table")
  errors.check_fields(opts, SIGN, fname)
  if opts.key == nil then misuse("bad field 'key' to '%s' (a key expected)", fname) end
  local key, err, kind = to_key(opts.key, "secret")
  if not key then return nil, err, kind end
  local alg = opts.alg
  if alg == nil then
    alg = key:algorithms()[1]
    if not alg then misuse("bad field 'key' to '%s' (no JWS algorithm can use this key)", fname) end
  elseif type(alg) ~= "string" or not KNOWN[alg] then
    misuse("bad field 'alg' to '%s' (%s)", fname, alg == "none" and "unsigned tokens are not made"
      or "one of " .. table.concat(ALGORITHMS, ", ") .. " expected")
  end
  local fits, why = key:supports(alg)
  if not fits then misuse("bad field 'key' to '%s' (%s)", fname, why) end
  if not key:info().private then
    misuse("bad field 'key' to '%s' (signing needs a private key)", fname)
  end
  local header = { alg = alg, typ = "JWT" }
  if opts.header ~= nil then
    if type(opts.header) ~= "table" then
      misuse("bad field 'header' to '%s' (table expected, got %s)", fname, typename(opts.header))
    end
    for k, v in pairs(opts.header) do
      if k == "alg" and v ~= alg then
        misuse("bad field 'header' to '%s' (its alg differs from the signing algorithm)", fname)
      end
      if k == "crit" then misuse("bad field 'header' to '%s' (crit is not supported)", fname) end
      header[k] = v
    end
  end
  if opts.typ ~= nil then header.typ = opts.typ end
  if opts.kid ~= nil then
    if type(opts.kid) ~= "string" then
      misuse("bad field 'kid' to '%s' (string expected, got %s)", fname, typename(opts.kid))
    end
    header.kid = opts.kid
  end
  local input = b64(encode_object(header, "field 'header'", fname)) .. "."
    .. b64(encode_object(claims, "argument #1", fname))
  local sig, serr, skind = key:sign(alg, input)
  if not sig then return errors.fail(skind, serr) end
  return input .. "." .. b64(sig)
end

--- Signs a claims set into a compact JWS token.
-- @tparam table claims the JWT claims (a JSON object)
-- @tparam table opts `{ key = Key | PEM | JWK | secret, alg = (default: the
--   key's first algorithm: RS256, ES256/384/512, EdDSA, HS256), kid =,
--   typ = (default "JWT"), header = { extra members } }`
-- @return the token, or nil, err, kind ("key": unreadable key material;
--   "crypto": libcrypto failed)
function M.sign(claims, opts)
  return sign(claims, opts, "sign")
end

-- Splits and decodes a token: { header, claims, input, signature } or nil, err, kind.
local function parse(token, max_size)
  if #token > max_size then
    return auth("malformed", "malformed token: larger than " .. max_size .. " bytes")
  end
  local h, p, s, extra = token:match("^([^.]*)%.([^.]*)%.([^.]*)(.*)$")
  if not h then return auth("malformed", "malformed token: not three dot-separated parts") end
  if extra ~= "" then
    return auth("malformed", "malformed token: encrypted tokens (JWE) are not supported")
  end
  local function part(text, what)
    if text == "" then return nil, "malformed token: the " .. what .. " is empty" end
    local bytes, err = core.base64url_decode(text)
    if not bytes then
      return nil, "malformed token: the " .. what .. " is not base64url ("
        .. err:gsub("^invalid base64url: ", "") .. ")"
    end
    return bytes
  end
  local hbytes, herr = part(h, "header")
  if not hbytes then return auth("malformed", herr) end
  local pbytes, perr = part(p, "payload")
  if not pbytes then return auth("malformed", perr) end
  local sig, serr = part(s, "signature")
  if not sig then return auth("malformed", serr) end
  -- objects only: a list, a string or a number is not a header or a claims set
  local header = json.decode(hbytes)
  if type(header) ~= "table" or json.is_array(header) then
    return auth("malformed", "malformed token: the header is not a JSON object")
  end
  local claims = json.decode(pbytes)
  if type(claims) ~= "table" or json.is_array(claims) then
    return auth("malformed", "malformed token: the payload is not a JSON object")
  end
  if type(header.alg) ~= "string" then
    return auth("malformed", "malformed token: the header has no alg")
  end
  return { header = header, claims = claims, input = h .. "." .. p, signature = sig }
end

--- Decodes a token WITHOUT verifying it (to read its header or claims,
-- e.g. to choose a key); never trust what it returns.
-- @tparam string token
-- @return header, claims; or nil, err, "auth" (reason `malformed`)
function M.decode(token)
  errors.check(token, 1, "decode", "string")
  local t, err, kind = parse(token, MAX_TOKEN)
  if not t then return nil, err, kind end
  return t.header, t.claims
end

---------------------------------------------------------------------------------------------
-- Verification
---------------------------------------------------------------------------------------------

local VERIFY = { keys = true, issuer = true, audience = true, subject = true, algorithms = true,
  leeway = true, now = true, required_claims = true, max_age = true, typ = true, max_size = true }
M._verify_options = VERIFY -- claude.oauth.jwks.verifier takes them too

local function list_of_strings(v, field, fname)
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" or v[1] == nil then
    misuse("bad field '%s' to '%s' (a string or a list of strings expected)", field, fname)
  end
  for _, s in ipairs(v) do
    if type(s) ~= "string" then
      misuse("bad field '%s' to '%s' (a list of strings expected, got a %s in it)", field, fname,
        typename(s))
    end
  end
  return v
end

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local function normal_typ(t)
  t = t:lower()
  return t:match("^application/(.*)$") or t
end

--- Checks and normalises verification options (used once by a verifier,
-- for every call of `verify`).
local function check_options(opts, fname)
  errors.check(opts, 2, fname, "table")
  errors.check_fields(opts, VERIFY, fname)
  local kt = type(opts.keys)
  if opts.keys == nil then
    misuse("bad field 'keys' to '%s' (keys to verify with expected)", fname)
  end
  if kt ~= "string" and kt ~= "table" and not is_key(opts.keys) then
    misuse("bad field 'keys' to '%s' (a key, JWK, JWK set, key set, PEM text or secret expected, "
      .. "got %s)", fname, typename(opts.keys))
  end
  local o = { keys = opts.keys }
  if opts.algorithms ~= nil then
    local list = list_of_strings(opts.algorithms, "algorithms", fname)
    for _, a in ipairs(list) do
      if not KNOWN[a] then
        misuse("bad field 'algorithms' to '%s' (%s)", fname, a == "none"
          and "'none' is never accepted" or "unknown algorithm '" .. a .. "'")
      end
    end
    o.algorithms = set_of(list)
  end
  if opts.issuer ~= nil then o.issuer = set_of(list_of_strings(opts.issuer, "issuer", fname)) end
  if opts.audience ~= nil then
    o.audience = set_of(list_of_strings(opts.audience, "audience", fname))
  end
  for _, f in ipairs { "subject", "typ" } do
    if opts[f] ~= nil and type(opts[f]) ~= "string" then
      misuse("bad field '%s' to '%s' (string expected, got %s)", f, fname, typename(opts[f]))
    end
  end
  o.subject = opts.subject
  o.typ = opts.typ and normal_typ(opts.typ)
  o.leeway = opts.leeway or DEFAULT_LEEWAY
  if type(o.leeway) ~= "number" or o.leeway < 0 then
    misuse("bad field 'leeway' to '%s' (a number of seconds >= 0 expected)", fname)
  end
  if opts.max_age ~= nil and (type(opts.max_age) ~= "number" or opts.max_age < 0) then
    misuse("bad field 'max_age' to '%s' (a number of seconds >= 0 expected)", fname)
  end
  o.max_age = opts.max_age
  if opts.now ~= nil and type(opts.now) ~= "number" and type(opts.now) ~= "function" then
    misuse("bad field 'now' to '%s' (a number or a function expected)", fname)
  end
  o.now = opts.now
  if opts.required_claims ~= nil then
    if type(opts.required_claims) ~= "table" then
      misuse("bad field 'required_claims' to '%s' (a list of claim names expected)", fname)
    end
    o.required = opts.required_claims
  else
    o.required = { "exp" }
  end
  o.max_size = opts.max_size or MAX_TOKEN
  if math.type(o.max_size) ~= "integer" or o.max_size < 1 then
    misuse("bad field 'max_size' to '%s' (a positive integer expected)", fname)
  end
  return o
end
M._check_options = check_options

-- The keys that may have signed a token with this header: a list, or nil,
-- err, kind. A key set (claude.oauth.keyset) chooses by kid; a fetched one may fetch.
local function candidates(keys, header)
  if type(keys) == "table" and type(keys.select) == "function" then
    return keys:select(header)
  end
  if type(keys) == "table" and keys.kty == nil then -- a JWKS or a list of keys
    local set, err, kind = keyset.new(keys)
    if not set then return nil, err, kind end
    return set:select(header)
  end
  local k, err, kind = to_key(keys, "secret")
  if not k then return nil, err, kind end
  return { k }
end

local function is_number(v) return math.type(v) ~= nil end

local function check_claims(claims, o)
  local now = o.now
  if type(now) == "function" then now = now() end
  now = now or os.time()
  local leeway = o.leeway
  for _, name in ipairs(o.required) do
    if claims[name] == nil or claims[name] == json.null then
      return auth("claim", "the token has no " .. tostring(name) .. " claim")
    end
  end
  for _, name in ipairs { "exp", "nbf", "iat" } do
    local v = claims[name]
    if v ~= nil and not is_number(v) then
      return auth("claim", "the token's " .. name .. " claim is not a number")
    end
  end
  if claims.exp and now >= claims.exp + leeway then
    return auth("expired", "the token has expired")
  end
  if claims.nbf and now + leeway < claims.nbf then
    return auth("not_yet_valid", "the token is not valid yet (nbf)")
  end
  if claims.iat and claims.iat > now + leeway then
    return auth("issued_in_future", "the token was issued in the future (iat)")
  end
  if o.max_age then
    if not claims.iat then return auth("claim", "the token has no iat claim (max_age)") end
    if now - claims.iat > o.max_age + leeway then
      return auth("too_old", "the token is older than max_age")
    end
  end
  if o.issuer and not (type(claims.iss) == "string" and o.issuer[claims.iss]) then
    return auth("issuer", claims.iss == nil and "the token has no iss claim"
      or "the token's issuer is not the expected one")
  end
  if o.audience then
    local aud, found = claims.aud, false
    if type(aud) == "string" then
      found = o.audience[aud] == true
    elseif type(aud) == "table" then
      for _, a in ipairs(aud) do
        if type(a) == "string" and o.audience[a] then found = true end
      end
    end
    if not found then
      return auth("audience", aud == nil and "the token has no aud claim"
        or "the token is not meant for this audience")
    end
  end
  if o.subject and claims.sub ~= o.subject then
    return auth("subject", "the token's subject is not the expected one")
  end
  return true
end

local function verify(token, o)
  local t, err, kind = parse(token, o.max_size)
  if not t then return nil, err, kind end
  local header, alg = t.header, t.header.alg
  if alg == "none" then return auth("algorithm", "unsigned tokens (alg none) are not accepted") end
  if not KNOWN[alg] then
    return auth("algorithm", "the token's algorithm " .. (quoted(alg) or "") .. " is not supported")
  end
  if o.algorithms and not o.algorithms[alg] then
    return auth("algorithm", "algorithm " .. alg .. " is not allowed")
  end
  if header.crit ~= nil then
    return auth("malformed", "the token has critical header parameters (crit), none are supported")
  end
  if o.typ and not (type(header.typ) == "string" and normal_typ(header.typ) == o.typ) then
    return auth("type", "the token's typ is not " .. o.typ)
  end
  local keys, kerr, kkind = candidates(o.keys, header)
  if not keys then return nil, kerr, kkind end
  local why
  for _, key in ipairs(keys) do
    local fits, reason = key:supports(alg)
    if fits then
      local ok, bad = key:verify(alg, t.input, t.signature)
      if ok then
        local cok, cerr, ckind = check_claims(t.claims, o)
        if not cok then return nil, cerr, ckind end
        return t.claims, header
      end
      why = why or { "signature", "invalid signature: " .. bad }
    else
      why = why or { "key", reason }
    end
  end
  if #keys == 0 then
    if header.kid == nil then return auth("key", "no key for " .. alg) end
    local kid = quoted(header.kid)
    return auth("key", "no key with the token's kid" .. (kid and " " .. kid or ""))
  end
  if why[1] == "key" and #keys > 1 then why[2] = "no key for " .. alg end
  return auth(why[1], why[2])
end

--- Verifies a token: its signature with one of `opts.keys`, then its claims.
-- @tparam string token
-- @tparam table opts `{ keys = Key | PEM | JWK | secret | JWKS table | list
--   | key set (claude.oauth.jwks), issuer = string | list, audience = string
--   | list (the token's aud must name one), subject =, algorithms = list
--   (default: any the key serves), leeway = 60 (seconds, for exp, nbf, iat),
--   now = number | function (default os.time), required_claims = { "exp" },
--   max_age = seconds since iat, typ = "at+jwt" (header typ), max_size = 65536 }`
-- @return claims, header; or nil, err, kind ("auth"; "key" for unreadable
--   keys; "connection" when a key set could not be fetched)
function M.verify(token, opts)
  errors.check(token, 1, "verify", "string")
  return verify(token, check_options(opts, "verify"))
end
M._verify = verify

local ASSERTION = { client_id = true, audience = true, key = true, alg = true, kid = true,
  lifetime = true, claims = true, now = true }

--- A client assertion for `private_key_jwt` (RFC 7523 2.2, OpenID Connect
-- client authentication; with an HMAC key `client_secret_jwt`): iss = sub =
-- client_id, aud, a random jti, iat and exp.
-- @tparam table opts `{ client_id =, audience = token endpoint or issuer,
--   key =, alg = (default: the key's first), kid =, lifetime = 300,
--   claims = { extra claims }, now = (default os.time()) }`
-- @return the token, or nil, err, kind
function M.client_assertion(opts)
  errors.check(opts, 1, "client_assertion", "table")
  errors.check_fields(opts, ASSERTION, "client_assertion")
  for _, f in ipairs { "client_id", "audience" } do
    if type(opts[f]) ~= "string" or opts[f] == "" then
      misuse("bad field '%s' to 'client_assertion' (a non-empty string expected)", f)
    end
  end
  local lifetime = opts.lifetime or ASSERTION_LIFETIME
  if type(lifetime) ~= "number" or lifetime <= 0 then
    misuse("bad field 'lifetime' to 'client_assertion' (a number of seconds > 0 expected)")
  end
  local now = opts.now or os.time()
  local jti, err, kind = core.random_bytes(24)
  if not jti then return errors.fail(kind, err) end
  local claims = {}
  if opts.claims ~= nil then
    if type(opts.claims) ~= "table" then
      misuse("bad field 'claims' to 'client_assertion' (table expected, got %s)",
        typename(opts.claims))
    end
    for k, v in pairs(opts.claims) do claims[k] = v end
  end
  claims.iss, claims.sub, claims.aud = opts.client_id, opts.client_id, opts.audience
  claims.jti = b64(jti)
  claims.iat, claims.exp = now, now + lifetime
  return sign(claims, { key = opts.key, alg = opts.alg, kid = opts.kid }, "client_assertion")
end

M.algorithms = ALGORITHMS

for name, f in pairs(M) do
  if type(f) == "function" and not name:match("^_") then M[name] = errors.public(f) end
end

return M
