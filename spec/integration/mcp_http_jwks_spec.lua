-- `claudelua mcp --http --jwks-url URL --issuer ISS`: JWT access tokens checked against the
-- authorization server's keys (claude.oauth.jwks), tokens signed by jose
-- (spec/support/jwt_mint.mjs), the key set served from this process.
local json = require "claude.json"
local process = require "claude.process"
local http = require "claude.http.client"
local http_server = require "claude.http.server"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local ISSUER = "https://as.example"
local root = harness.root

local function request(url, token, body)
  local resp, err = http.request { method = "POST", url = url, timeout = 20,
    headers = { ["content-type"] = "application/json",
      accept = "application/json, text/event-stream",
      authorization = token and "Bearer " .. token or nil },
    body = json.encode(body) }
  if resp then return resp.status, resp.headers, resp.body end
  assert(err.kind == "http", tostring(err))
  return err.status, err.headers, err.body
end

local INIT = { jsonrpc = "2.0", id = 0, method = "initialize", params = {
  protocolVersion = "2025-11-25", capabilities = json.object(),
  clientInfo = { name = "spec", version = "1" } } }

describe("claudelua mcp --http with JWT access tokens", function()
  it("serves a token signed by the set's key, for this resource, and refuses the others",
    function()
      local jwks_body
      local keys = assert(http_server.listen { host = "127.0.0.1", port = 0,
        on_request = function(_, res)
          res:respond(200, { ["content-type"] = "application/json" }, jwks_body)
        end })
      local jwks_url = "http://127.0.0.1:" .. keys:port() .. "/jwks"
      local server <close>, url, stderr = mcp_http.start { "--jwks-url", jwks_url,
        "--issuer", ISSUER, "--required-scopes", "mcp:tools",
        root .. "/spec/support/mcp_http_tools.lua" }
      local mint <close> = assert(process.spawn { root .. "/node_modules/.bin/node",
        args = { root .. "/spec/support/jwt_mint.mjs", ISSUER, url }, stderr = "collect" })
      local minted = json.decode(assert(mint:read_line(60), mint:stderr()))
      jwks_body = json.encode(minted.jwks)
      local t = minted.tokens

      -- the metadata names the issuer as the authorization server
      local prm = assert(http.request { url = url:gsub("/mcp$",
        "/.well-known/oauth-protected-resource/mcp") })
      assert.same({ ISSUER }, json.decode(prm.body).authorization_servers)

      local status, headers, body = request(url, t.good, INIT)
      assert.equal(200, status, body)
      assert.matches("^%x+$", headers["mcp-session-id"])
      for _, name in ipairs { "expired", "other_issuer", "other_audience", "bad_signature",
        "none" } do
        status, headers = request(url, t[name], INIT)
        assert.equal(401, status, name)
        assert.matches('^Bearer error="invalid_token"', headers["www-authenticate"], name)
      end
      status, headers = request(url, t.no_scope, INIT)
      assert.equal(403, status)
      assert.matches('error="insufficient_scope"', headers["www-authenticate"])

      server:signal("term")
      assert.equal(0, server:wait(10))
      keys:close()
      for _, line in ipairs(stderr) do
        for name, token in pairs(t) do
          assert.is_nil(line:find(token, 1, true), name)
          -- no part of one either (a JWT's signature alone is a credential's tail)
          assert.is_nil(line:find(token:match("[^.]+$") or "\0", 1, true), name)
        end
      end
    end)
end)
