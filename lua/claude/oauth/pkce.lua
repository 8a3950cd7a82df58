--- PKCE (RFC 7636) with S256, and the `state` of an authorization request:
-- random bytes and SHA-256 from OpenSSL's libcrypto (`core.random_bytes`,
-- `core.sha256`), never from Lua's `math.random`; base64url from `core.base64url_encode`.
-- @module claude.oauth.pkce
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local VERIFIER_BYTES = 32 -- 43 characters of base64url, RFC 7636's minimum and advice
local STATE_BYTES = 24

local function random(n)
  local bytes, err = core.random_bytes(n)
  if not bytes then
    return errors.fail("auth", "no random bytes for the authorization: " .. tostring(err))
  end
  return bytes
end

--- A new code verifier: 32 random bytes in base64url (43 characters).
-- @return the verifier | nil, err, "auth"
function M.verifier()
  local bytes, err, kind = random(VERIFIER_BYTES)
  if not bytes then return nil, err, kind end
  return core.base64url_encode(bytes)
end

--- The S256 challenge of a verifier: base64url(SHA-256(verifier)).
-- @tparam string verifier
-- @return the challenge | nil, err, "auth"
function M.challenge(verifier)
  local digest, err = core.sha256(verifier)
  if not digest then return errors.fail("auth", "no SHA-256 for PKCE: " .. tostring(err)) end
  return core.base64url_encode(digest)
end

--- A new `state` value: 24 random bytes in base64url.
-- @return the state | nil, err, "auth"
function M.state()
  local bytes, err, kind = random(STATE_BYTES)
  if not bytes then return nil, err, kind end
  return core.base64url_encode(bytes)
end

return M
