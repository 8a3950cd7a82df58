-- DPoP proofs (RFC 9449): what each proof holds, that it verifies with the key its header
-- carries, and the nonces a server hands out.
local core = require "claude.core"
local jwt = require "claude.oauth.jwt"
local dpop = require "claude.oauth.dpop"

describe("a DPoP proof", function()
  it("is a dpop+jwt signed with the ES256 key its header carries (public part only)",
    function()
    local d = assert(dpop.new())
    local proof = assert(d:proof("POST", "https://rs.example/mcp?x=1#f", "the-token"))
    local header, claims = assert(jwt.decode(proof))
    assert.equal("dpop+jwt", header.typ)
    assert.equal("ES256", header.alg)
    assert.equal("EC", header.jwk.kty)
    assert.is_nil(header.jwk.d)
    assert(jwt.verify(proof, { keys = header.jwk, typ = "dpop+jwt", required_claims = {} }))
    assert.equal("POST", claims.htm)
    assert.equal("https://rs.example/mcp", claims.htu) -- no query, no fragment
    assert.equal(core.base64url_encode(core.sha256("the-token")), claims.ath)
    assert.is_true(math.abs(claims.iat - os.time()) <= 1)
    assert.equal(d.thumbprint, jwt.thumbprint(header.jwk))
    local _, again = jwt.decode(assert(d:proof("POST", "https://rs.example/mcp")))
    assert.not_equal(claims.jti, again.jti) -- a fresh jti each time
    assert.is_nil(again.ath)
  end)

  it("carries the nonce its server asked for, per origin", function()
    local d = assert(dpop.new())
    assert.is_true(d:nonce_from("https://as.example/token", { ["dpop-nonce"] = "n-1" }))
    assert.is_false(d:nonce_from("https://as.example/token", { ["dpop-nonce"] = "n-1" }))
    assert.is_false(d:nonce_from("https://as.example/token", { ["dpop-nonce"] = "bad nonce" }))
    assert.is_false(d:nonce_from("https://as.example/token", {}))
    local _, c = jwt.decode(assert(d:proof("POST", "https://as.example/token")))
    assert.equal("n-1", c.nonce)
    _, c = jwt.decode(assert(d:proof("POST", "https://rs.example/mcp")))
    assert.is_nil(c.nonce)
  end)

  it("keeps its key across a store (the tokens it binds stay usable)", function()
    local d = assert(dpop.new())
    local again = assert(dpop.new(d:jwk()))
    assert.equal(d.thumbprint, again.thumbprint)
  end)

  it("is offered by an authorization server that lists ES256", function()
    assert.is_true(dpop.offered { dpop_signing_alg_values_supported = { "RS256", "ES256" } })
    assert.is_false(dpop.offered { dpop_signing_alg_values_supported = { "RS256" } })
    assert.is_false(dpop.offered {})
  end)
end)
