--- DPoP (RFC 9449, SEP-1932): tokens bound to a key the client holds. Each request that
-- carries such a token (and each token request) carries a fresh proof, a JWT the key signs:
-- `typ` `dpop+jwt`, the public key in its header, and as claims a unique `jti`, the
-- request's method (`htm`) and URL without query and fragment (`htu`), `iat`, the hash of
-- the token it goes with (`ath`), and the server's `nonce` once the server asked for one
-- (a 400 or 401 `use_dpop_nonce` with a `DPoP-Nonce` header: the request is made again
-- with it, once; nonces are kept per origin).
--
-- The key is an ES256 key made for the client (one per provider, kept in its store record
-- beside the tokens it binds, so that a stored token stays usable).
-- @module claude.oauth.dpop
local core = require "claude.core"
local errors = require "claude.errors"
local url = require "claude.url"
local jwt = require "claude.oauth.jwt"

local M = {}

M.ALG = "ES256"

local Dpop = {}
Dpop.__index = Dpop
Dpop.__name = "claude.oauth.Dpop"

function Dpop:__tostring()
  return "claude.oauth.Dpop (" .. self.thumbprint .. ")"
end

--- A proof key: a new one, or the private JWK kept from before.
-- @tparam[opt] table jwk
-- @return the key's holder | nil, err, "auth"
function M.new(jwk)
  local key, err
  if type(jwk) == "table" then
    key, err = jwt.key(jwk)
  else
    key, err = jwt.generate { alg = M.ALG }
  end
  if not key then
    return errors.fail("auth", "no DPoP key: " .. errors.message(err))
  end
  return setmetatable({ key = key, public = key:jwk(false), thumbprint = jwt.thumbprint(key),
    nonces = {} }, Dpop)
end

--- The private key as a JWK, for the store.
function Dpop:jwk()
  return self.key:jwk(true)
end

local function origin_of(u)
  local p = url.parse_canonical(u)
  return p and url.origin(p) or u
end

--- A proof for one request.
-- @tparam string method `POST`, `GET`, ...
-- @tparam string target the request's URL
-- @tparam[opt] string token the access token it goes with
-- @return the proof | nil, err, "auth"
function Dpop:proof(method, target, token)
  local jti, rerr = core.random_bytes(16)
  if not jti then return errors.fail("auth", "no random bytes for a DPoP proof: "
    .. tostring(rerr)) end
  local claims = { jti = core.base64url_encode(jti), htm = method,
    htu = target:match("^[^?#]*"), iat = os.time(), nonce = self.nonces[origin_of(target)] }
  if token then claims.ath = core.base64url_encode(core.sha256(token)) end
  local proof, err = jwt.sign(claims, { key = self.key, alg = M.ALG, typ = "dpop+jwt",
    header = { jwk = self.public } })
  if not proof then return errors.fail("auth", "signing a DPoP proof failed: "
    .. errors.message(err)) end
  return proof
end

--- Keeps the nonce a server sent with an answer (any answer may bring a new one).
-- @tparam string target the request's URL
-- @tparam table headers the answer's headers (lower-case names)
-- @treturn boolean true when it is a nonce this holder did not have
function Dpop:nonce_from(target, headers)
  local n = headers and headers["dpop-nonce"]
  -- NQCHAR (RFC 9449 section 8.1): printable ASCII but blank, quote and backslash
  if type(n) ~= "string" or n == "" or n:find("[^!-~]") or n:find('["\\]') then
    return false
  end
  local o = origin_of(target)
  if self.nonces[o] == n then return false end
  self.nonces[o] = n
  return true
end

--- Does an authorization server issue DPoP tokens for our algorithm?
-- @tparam table meta its metadata
function M.offered(meta)
  local algs = type(meta) == "table" and meta.dpop_signing_alg_values_supported
  if type(algs) ~= "table" then return false end
  for _, a in ipairs(algs) do
    if a == M.ALG then return true end
  end
  return false
end

M.Dpop = Dpop
return M
