-- claude.mcp.server.auth on its own: the `auth` option's misuse messages, the bearer header,
-- the audience rule, the metadata URL, the claims -> ctx.auth shape, redaction, and the
-- refusals of `authenticate` as rows (the transport's side is spec/integration/
-- mcp_http_auth_spec.lua).
local claude = require "claude"
local async = require "claude.async"
local json = require "claude.json"
local auth = require "claude.mcp.server.auth"

local AS = { "https://as.example" }
local function verify() return {} end

describe("claude.mcp.server.auth", function()
  describe("the auth option", function()
    local bad = {
      { 42, "bad field 'auth' to 'server' (table or false expected, got number)" },
      { {}, "exactly one of 'verify', 'introspection_url' and 'jwks_url' expected, got 0" },
      { { verify = verify, introspection_url = "https://as/i", authorization_servers = AS },
        "exactly one of 'verify', 'introspection_url' and 'jwks_url' expected, got 2" },
      { { verify = verify }, "bad field 'auth.authorization_servers' to 'server' (needed" },
      { { verify = "no", authorization_servers = AS },
        "bad field 'auth.verify' to 'server' (function expected, got string)" },
      { { verify = verify, authorization_servers = AS, scope = "x" },
        "unknown field 'auth.scope' to 'server'" },
      { { verify = verify, authorization_servers = "https://as" },
        "bad field 'auth.authorization_servers' to 'server' (a list of strings expected" },
      { { verify = verify, authorization_servers = { "as.example" } },
        "(an http(s) URL expected, got 'as.example')" },
      { { verify = verify, authorization_servers = AS, resource = "https://h/mcp#x" },
        "bad field 'auth.resource' to 'server' (an http(s) URL without a fragment" },
      { { verify = verify, authorization_servers = AS, required_scopes = { "a b" } },
        "bad field 'auth.required_scopes' to 'server' ('a b' is not a scope token)" },
      { { verify = verify, authorization_servers = AS, required_scopes = { 'a"' } },
        "('a\"' is not a scope token)" },
      { { verify = verify, authorization_servers = AS, audience = 3 },
        "bad field 'auth.audience' to 'server' (a string, a list of strings or false" },
      { { verify = verify, authorization_servers = AS, client_id = "x" },
        "bad field 'auth.client_id' to 'server' (only with introspection_url)" },
      { { introspection_url = "https://as/i", authorization_servers = AS,
        client_secret = "s" }, "bad field 'auth.client_id' to 'server' (needed with" },
      { { introspection_url = "https://as/i", authorization_servers = AS, client_id = "x",
        client_auth = "jwt" }, "('basic' or 'post' expected, got 'jwt')" },
      { { verify = verify, authorization_servers = AS, timeout = -1 },
        "bad field 'auth.timeout' to 'server' (non-negative number expected)" },
      { { verify = verify, authorization_servers = AS, cache = 5 },
        "bad field 'auth.cache' to 'server' (only with introspection_url)" },
      { { jwks_url = "https://as/jwks" }, "bad field 'auth.issuer' to 'server' (needed with" },
    }
    for i, row in ipairs(bad) do
      it("refuses bad option #" .. i .. " at the caller's line", function()
        local ok, err = pcall(function() claude.server("s", {}, { auth = row[1] }) end)
        assert.is_false(ok)
        assert.matches("^spec/unit/http_auth_spec.lua:%d+: ", err)
        assert.truthy(err:find(row[2], 1, true), err)
      end)
    end

    it("keeps the option on the server, false included", function()
      local spec = { verify = verify, authorization_servers = AS }
      assert.equal(spec, claude.server("s", {}, { auth = spec }).auth)
      assert.is_false(claude.server("s", {}, { auth = false }).auth)
      assert.is_nil(claude.server("s", {}).auth)
    end)
  end)

  it("derives the metadata URL of a resource (RFC 9728 section 3.1)", function()
    assert.equal("https://h/.well-known/oauth-protected-resource/mcp",
      auth.metadata_url("https://h/mcp"))
    assert.equal("https://h:8/.well-known/oauth-protected-resource/a/mcp",
      auth.metadata_url("https://h:8/a/mcp/"))
    assert.equal("https://h/.well-known/oauth-protected-resource", auth.metadata_url("https://h"))
    assert.equal("https://h/.well-known/oauth-protected-resource",
      auth.metadata_url("https://h/"))
  end)

  it("redacts every occurrence of the token", function()
    assert.equal("bad [token] and [token].", auth.redact("bad abc.def and abc.def.", "abc.def"))
    assert.equal("a%b", auth.redact("a%b", "%b%%")) -- plain text, not a pattern
    assert.equal("x", auth.redact("x", nil))
  end)

  describe("authenticate", function()
    local RESOURCE = "https://mcp.example/mcp"
    local CLAIMS = {
      good = { sub = "u", scope = "read write", exp = os.time() + 60, iss = "https://as",
        client_id = "app", aud = RESOURCE },
      parent = { sub = "u", scope = "read", aud = "https://MCP.example/" },
      child = { sub = "u", scope = "read", aud = RESOURCE .. "/x" },
      other = { sub = "u", scope = "read", aud = { "https://x.example/mcp", "api" } },
      listaud = { sub = "u", scope = "read", aud = { "api", RESOURCE .. "/" } },
      expired = { sub = "u", scope = "read", exp = os.time() - 1 },
      early = { sub = "u", scope = "read", nbf = os.time() + 3600 },
      fewer = { sub = "u", scope = "write" },
      anon = { scope = "read" },
      port = { sub = "u", scope = "read", aud = "HTTPS://mcp.example:443/mcp#frag" },
      elsewhere = { sub = "u", scope = "read", aud = "https://mcp.example:8443/mcp" },
      notaurl = { sub = "u", scope = "read", aud = "https:" }, -- a prefix, not a resource
    }
    local ep = auth.endpoint({ verify = function(token) return CLAIMS[token] end,
      authorization_servers = AS, required_scopes = { "read" } }, RESOURCE)

    local function check(headers, query)
      local t = async.spawn(auth.authenticate, ep, { headers = headers, query = query,
        method = "POST", path = "/mcp" }, function() end)
      return select(2, t:join(5))
    end

    local rows = {
      { "good", true },
      { "parent", true }, -- a token for the resource above (host case aside)
      { "listaud", true },
      { "anon", true },
      { "port", true }, -- the default port, the scheme's case and a fragment aside
      { "elsewhere", 401, "the access token was not issued for this resource" },
      { "notaurl", 401, "the access token was not issued for this resource" },
      { "child", 401, "the access token was not issued for this resource" },
      { "other", 401, "the access token was not issued for this resource" },
      { "expired", 401, "the access token expired" },
      { "early", 401, "the access token is not valid yet" },
      { "fewer", 403, "the access token lacks scope read" },
      { "unknown", 401, "the access token is not valid" },
    }
    for _, row in ipairs(rows) do
      it("answers token '" .. row[1] .. "'", function()
        local info, status, www = check({ authorization = "Bearer " .. row[1] })
        if row[2] == true then
          assert.equal("claude.mcp.AuthInfo", getmetatable(info).__name)
          return
        end
        assert.is_nil(info)
        assert.equal(row[2], status)
        assert.truthy(www:find('error_description="' .. row[3] .. '"', 1, true), www)
      end)
    end

    it("shapes ctx.auth from the claims, and the session's principal", function()
      local info, principal = check({ authorization = "bearer good" }) -- scheme: any case
      assert.equal("u", info.subject)
      assert.equal("app", info.client_id)
      assert.same({ "read", "write" }, info.scopes)
      assert.equal(CLAIMS.good.exp, info.expires_at)
      assert.equal("https://as", info.issuer)
      assert.equal(RESOURCE, info.resource)
      assert.equal(CLAIMS.good, info.claims)
      assert.is_true(info:has_scope("write"))
      assert.is_false(info:has_scope("admin"))
      assert.equal("https://as\nsub:u", principal)
      assert.equal("claude.mcp.AuthInfo (u, read write)", tostring(info))
      local _, nobody = check({ authorization = "Bearer anon" })
      assert.is_nil(nobody)
    end)

    it("challenges a request without a token, with no error code", function()
      local info, status, www, msg = check({})
      assert.is_nil(info)
      assert.equal(401, status)
      assert.equal('Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-'
        .. 'resource/mcp", scope="read"', www)
      assert.matches("^Unauthorized: no Authorization header", msg)
    end)

    it("answers 503 for a verifier whose kind says it cannot tell", function()
      local down = auth.endpoint({ verify = function() return nil, json.encode { x = 1 },
        "timeout" end, authorization_servers = AS }, RESOURCE)
      local t = async.spawn(auth.authenticate, down, { headers =
        { authorization = "Bearer t" } }, function() end)
      local _, info, status, www = t:join(5)
      assert.is_nil(info)
      assert.equal(503, status)
      assert.is_nil(www)
    end)
  end)
end)
