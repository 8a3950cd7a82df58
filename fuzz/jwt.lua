-- fuzz/jwt.lua -- the Lua half of the jwt target (fuzz/jwt.c): what a bearer token, a JWK
-- and base64url text from a stranger can do to claude.oauth.jwt. The first byte picks the
-- surface; the rest is the input. Every outcome must be a value or `nil, err, kind` with a
-- stable kind, and no error text may quote the input.
local core = require "claude.core"
local json = require "claude.json"
local jwt = require "claude.oauth.jwt"

-- One key of each family the server's check meets, made once.
local KEYS = {
  jwt.secret(string.rep("s", 32)),
  jwt.generate { kty = "EC", crv = "P-256" },
  jwt.generate { kty = "OKP", crv = "Ed25519" },
}
local PUBLIC = { KEYS[1], KEYS[2]:public(), KEYS[3]:public() }
local AUDIENCE = "https://mcp.example/mcp"

-- A token is a credential: no error text may hold it. Inputs with whitespace or under 24
-- bytes may be the message's own words, so only token-like inputs are looked for.
local function no_quote(err, input)
  if #input < 24 or input:find("%s") then return end
  local text = tostring(err)
  assert(not text:find(input, 1, true), "the error quotes the input: " .. text)
end

local function check_failure(v, err, kind, input, kinds)
  if v ~= nil then return end
  assert(kinds[kind], "unexpected kind " .. tostring(kind) .. ": " .. tostring(err))
  no_quote(err, input)
end

local surfaces = {
  -- a bearer token, as the server's check sees it
  function(input)
    local claims, err, kind = jwt.verify(input, { keys = PUBLIC, audience = AUDIENCE })
    check_failure(claims, err, kind, input, { auth = true })
    if claims then assert(type(claims) == "table") end
  end,
  -- a token signed here with its payload from the input: verify must give it back
  function(input)
    local claims = json.decode(input)
    if type(claims) ~= "table" or claims[1] ~= nil or getmetatable(claims) == json.array_mt
      or #input > 32768
      or not pcall(json.encode, claims) then
      return -- not a claims set, or one that cannot be a token (too big, infinity)
    end
    claims.aud = AUDIENCE
    claims.exp, claims.nbf, claims.iat = nil, nil, nil
    for _, key in ipairs(KEYS) do
      local token = assert(jwt.sign(claims, { key = key }))
      local back, err = jwt.verify(token, { keys = PUBLIC, audience = AUDIENCE,
        required_claims = {} })
      assert(back, err)
    end
  end,
  -- a JWK from a stranger (a key set's entry)
  function(input)
    local jwk = json.decode(input)
    if type(jwk) ~= "table" then return end
    local key, err, kind = jwt.key(jwk)
    check_failure(key, err, kind, input, { key = true })
    if key then
      assert(type(key:jwk(key:info().private)) == "table") -- exported in the form it came in
      key:close()
    end
  end,
  -- base64url: what decodes encodes back to the same text
  function(input)
    local bytes, err, kind = core.base64url_decode(input)
    check_failure(bytes, err, kind, input, { base64 = true })
    if bytes then assert(core.base64url_encode(bytes) == input, "not canonical") end
  end,
}

return function(data)
  if #data == 0 then return end
  local surface = surfaces[data:byte(1) % #surfaces + 1]
  surface(data:sub(2))
end
