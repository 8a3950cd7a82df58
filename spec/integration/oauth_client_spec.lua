-- claude.mcp.connect with `auth` against a scripted authorization server and
-- protected MCP server (spec/support/oauth_server.lua, on the same loop):
-- the whole flow, the store, refresh before and after expiry, revocation,
-- client credentials, the assertion slot, the loopback helper, and
-- each bad input of issue 15, which must end in an error of kind `auth`
-- that quotes no token, code or secret. The plain step-up is proven against
-- the conformance suite's server instead (auth/scope-step-up, in
-- spec/e2e/mcp_conformance_client_spec.lua).
-- luacheck: ignore 211/_fake (the fake is kept only to be closed)
local claude = require "claude"
local core = require "claude.core"
local http = require "claude.http.client"
local oauth = require "claude.oauth"
local url = require "claude.url"
local harness = require "support.harness"
local fake = require("support.oauth_server").start

local T = 10

local function text(r) return r.content[1].text end

-- What a browser does with the fake's authorization server: one GET, whose
-- redirect (Location) is the answer.
local function follow(authorization_url)
  local resp, err = http.request { url = authorization_url, timeout = T }
  if not resp then return nil, err end
  return resp.headers.location
end

local function auth(extra)
  local a = { client_name = "oauth spec", redirect_uri = "http://127.0.0.1:9/callback",
    on_authorize = follow }
  for k, v in pairs(extra or {}) do a[k] = v end
  return a
end

-- No secret the fake handed out appears in `s`.
local function assert_no_secret(log, s)
  for _, secret in ipairs(log.secrets) do
    assert.is_nil(s:find(secret, 1, true), "a secret leaked into: " .. s)
  end
end

describe("claude.mcp.connect with auth (OAuth client)", function()
  before_each(harness.before)
  after_each(harness.after)

  -- every case runs in a task, so that the in-process servers' tasks run too
  local function case(fn) return harness.task(fn, 6 * T) end

  it("registers, authorizes with PKCE, state and the resource, and calls tools",
    case(function()
      local _fake <close>, u, log = fake()
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
      assert.equal("ok echo", text(assert(c:call_tool("echo"))))
      assert.equal(1, #log.register)
      assert.same({ "authorization_code", "refresh_token" }, log.register[1].grant_types)
      assert.same({ "http://127.0.0.1:9/callback" }, log.register[1].redirect_uris)
      local a = log.authorize[1]
      assert.equal("S256", a.code_challenge_method)
      assert.equal(43, #a.code_challenge)
      assert.truthy(#a.state >= 32)
      assert.equal(u, a.resource)
      assert.equal(1, #log.authorize)
      assert.equal("authorization_code", log.token[1].grant_type)
      assert.equal(u, log.token[1].resource)
      -- the fake registered the client with client_secret_basic by default... but we
      -- asked for none, a public client
      assert.equal("none", log.register[1].token_endpoint_auth_method)
      assert.equal("none", log.token[1].auth_method)
    end))

  it("keeps tokens in a file store (0600) that a second client uses without authorizing",
    case(function()
      local _fake <close>, u, log = fake()
      local dir = harness.tempdir()
      local path = dir .. "/sub/tokens.json"
      local store = oauth.file_store(path)
      do
        local c <close> = assert(claude.mcp.connect { url = u, timeout = T,
          auth = auth { store = store } })
        assert(c:list_tools())
      end
      assert.equal(384, core.stat(path).mode) -- 0600
      assert.equal(448, core.stat(dir .. "/sub").mode) -- 0700
      local saved = store.load(u)
      assert.equal(u, url.canonical(url.parse_canonical(u)))
      assert.equal("string", type(saved.access_token))
      -- the registered client under its issuer (SEP-2352: never shown to another one)
      assert.equal(saved.issuer, _fake.base .. "/as")
      assert.equal("string", type(saved.clients[saved.issuer].client_id))
      local c2 <close> = assert(claude.mcp.connect { url = u, timeout = T,
        auth = auth { store = store, on_authorize = function() error("asked again") end } })
      assert.equal("ok echo", text(assert(c2:call_tool("echo"))))
      assert.equal(1, #log.authorize)
      assert.equal(1, #log.register)
      os.execute("rm -rf " .. harness.quote(dir))
    end))

  it("refreshes a token before it expires, without a 401", case(function()
    local _fake <close>, u, log = fake { expires_in = 5 } -- within the refresh margin
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
    local before = log.unauthorized
    assert.equal("ok echo", text(assert(c:call_tool("echo"))))
    assert.equal(before, log.unauthorized)
    assert.equal("refresh_token", log.token[#log.token].grant_type)
    assert.equal(u, log.token[#log.token].resource)
    assert.equal(1, #log.authorize)
  end))

  it("refreshes an expired token after the 401, then sends the call again", case(function()
    local _fake <close>, u, log = fake()
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
    _fake.expire_all()
    assert.equal("ok echo", text(assert(c:call_tool("echo"))))
    assert.equal("refresh_token", log.token[#log.token].grant_type)
    assert.equal(1, #log.authorize)
  end))

  it("authorizes again when the tokens were revoked (the refresh is refused)", case(function()
    local _fake <close>, u, log = fake()
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
    _fake.revoke_all()
    assert.equal("ok echo", text(assert(c:call_tool("echo"))))
    assert.equal(2, #log.authorize)
    assert.equal(1, #log.register) -- the client stays registered
    local grants = {}
    for _, t in ipairs(log.token) do grants[#grants + 1] = t.grant_type end
    assert.same({ "authorization_code", "refresh_token", "authorization_code" }, grants)
  end))

  it("shares one authorization among concurrent calls", case(function()
    local _fake <close>, u, log = fake()
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
    _fake.revoke_all()
    local tasks = {}
    for i = 1, 4 do
      tasks[i] = claude.spawn(function() return text(assert(c:call_tool("echo"))) end)
    end
    for i = 1, 4 do
      local ok, r = tasks[i]:join(T)
      assert.is_true(ok)
      assert.equal("ok echo", r)
    end
    assert.equal(2, #log.authorize)
  end))

  it("asks for offline_access when the authorization server offers it", case(function()
    local _fake <close>, u, log = fake { scopes = { "read" }, as_scopes = { "read",
      "offline_access" } }
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth() })
    assert(c:list_tools())
    assert.equal("read offline_access", log.authorize[1].scope)
    assert.equal("consent", log.authorize[1].prompt)
  end))

  it("gets tokens with client credentials (client_secret_basic)", case(function()
    local _fake <close>, u, log = fake { client_id = "machine", client_secret = "s3cr:et" }
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
      grant = "client_credentials", client_id = "machine", client_secret = "s3cr:et",
      scope = "read" } })
    assert.equal("ok echo", text(assert(c:call_tool("echo"))))
    assert.equal(0, #log.authorize)
    assert.equal("client_credentials", log.token[1].grant_type)
    assert.equal("client_secret_basic", log.token[1].auth_method)
    assert.equal("read", log.token[1].scope)
    assert.equal(u, log.token[1].resource)
  end))

  it("sends a client assertion from auth.client_assertion (private_key_jwt)", case(function()
    local _fake <close>, u, log = fake { client_id = "machine" }
    local seen
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
      grant = "client_credentials", client_id = "machine",
      client_assertion = function(ctx)
        seen = ctx
        return "header.payload.signature"
      end } })
    assert(c:list_tools())
    assert.equal("private_key_jwt", log.token[1].auth_method)
    assert.equal("header.payload.signature", log.assertion)
    assert.equal("machine", seen.client_id)
    assert.equal(_fake.base .. "/as", seen.audience)
    assert.equal(_fake.base .. "/as/token", seen.token_endpoint)
  end))

  it("gets tokens with an assertion the application brings (jwt_bearer grant)",
    case(function()
      local _fake <close>, u, log = fake { client_id = "xaa", client_secret = "xaa-secret",
        expires_in = 5 }
      local asked = {}
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = {
        grant = "jwt_bearer", client_id = "xaa", client_secret = "xaa-secret", scope = "read",
        assertion = function(ctx)
          asked[#asked + 1] = ctx
          return "an-id-jag"
        end } })
      assert(c:list_tools()) -- the token expires within the margin: a new assertion
      assert.equal("urn:ietf:params:oauth:grant-type:jwt-bearer", log.token[1].grant_type)
      assert.equal("client_secret_basic", log.token[1].auth_method)
      assert.equal(u, log.token[1].resource)
      assert.truthy(#asked >= 2)
      assert.equal(_fake.base .. "/as", asked[1].issuer)
      assert.equal(u, asked[1].resource)
      assert.equal("read", asked[1].scope)
      assert.equal(0, #log.authorize)
    end))

  it("uses pre-registered credentials with client_secret_post when that is all the server takes",
    case(function()
      local _fake <close>, u, log = fake { client_id = "pre", client_secret = "pre-secret",
        auth_methods = { "client_secret_post" } }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T,
        auth = auth { client_id = "pre", client_secret = "pre-secret" } })
      assert(c:list_tools())
      assert.equal(0, #log.register)
      assert.equal("client_secret_post", log.token[1].auth_method)
    end))

  it("carries the token over the HTTP+SSE transport of 2024-11-05", case(function()
    local _fake <close>, u, log = fake { sse = true, challenge_scope = "read" }
    local c <close> = assert(claude.mcp.connect { url = u, timeout = T, transport = "sse",
      auth = auth() })
    assert.equal("ok echo", text(assert(c:call_tool("echo"))))
    assert.equal("ok admin", text(assert(c:call_tool("admin"))))
    assert.equal(2, #log.authorize)
  end))

  it("leaves the time spent authorizing out of a call's timeout, and only that",
    case(function()
      local _fake <close>, u = fake()
      local c <close> = assert(claude.mcp.connect { url = u, timeout = 0.5,
        connect_timeout = 0.5, auth = auth { on_authorize = function(target)
          claude.sleep(1.5) -- a person signing in, slower than the timeout
          return follow(target)
        end } })
      assert.equal("ok echo", text(assert(c:call_tool("echo"))))
      local r, err, kind = c:call_tool("slow")
      assert.is_nil(r)
      assert.equal("timeout", kind)
      assert.matches("request 'tools/call' timed out after 0.5 s", err.message)
    end))

  it("closing the client ends an authorization that waits for a person", case(function()
    local _fake <close>, u = fake()
    local waiting = require("claude.async").event()
    local first = true
    local c = assert(claude.mcp.connect { url = u, timeout = T, auth = auth {
      on_authorize = function(target)
        if first then
          first = false
          return follow(target)
        end
        waiting:set()
        claude.sleep(3 * T) -- nobody comes
      end } })
    _fake.revoke_all()
    local call = claude.spawn(function() return c:call_tool("echo") end)
    assert(waiting:wait(T))
    c:close()
    local ok, r, err, kind = call:join(T)
    assert.is_true(ok)
    assert.is_nil(r)
    assert.equal("closed", kind, tostring(err))
  end))

  it("without auth, a 401 is an error of kind auth that says what to do", case(function()
    local _fake <close>, u = fake()
    local c, err, kind = claude.mcp.connect { url = u, timeout = T, max_retries = 0 }
    assert.is_nil(c)
    assert.equal("auth", kind)
    assert.matches("requires authorization", err.message)
  end))

  describe("bad input: a clear error of kind auth, and no secret in it", function()
    -- connects, expecting failure; returns the error and everything reported
    local function refused(cfg, a)
      local _fake <close>, u, log = fake(cfg)
      local reported = {}
      local c, err, kind = claude.mcp.connect { url = u, timeout = T, max_retries = 0,
        auth = auth(a), on_error = function(e) reported[#reported + 1] = tostring(e) end }
      assert.is_nil(c)
      assert.equal("auth", kind)
      assert.equal("auth", err.kind)
      assert_no_secret(log, tostring(err))
      for _, r in ipairs(reported) do assert_no_secret(log, r) end
      return err, log
    end

    local function tamper(fn)
      return function(authorization_url)
        local location = assert(follow(authorization_url))
        return fn(location)
      end
    end

    it("a wrong state", case(function()
      local err = refused(nil, { on_authorize = tamper(function(loc)
        return (loc:gsub("state=[^&]+", "state=forged"))
      end) })
      assert.matches("state is not the one sent", err.message)
    end))

    it("a redirect without its state", case(function()
      local err = refused(nil, { on_authorize = tamper(function(loc)
        return (loc:gsub("&?state=[^&]+", ""))
      end) })
      assert.matches("carries no state", err.message)
    end))

    it("a redirect to another place than the redirect_uri", case(function()
      local err = refused(nil, { on_authorize = tamper(function(loc)
        return (loc:gsub("127%.0%.0%.1:9", "evil.example.com"))
      end) })
      assert.matches("not to the redirect_uri", err.message)
    end))

    it("a redirect with a repeated code", case(function()
      local err = refused(nil, { on_authorize = tamper(function(loc)
        return loc .. "&code=injected"
      end) })
      assert.matches("repeats the parameter 'code'", err.message)
    end))

    it("a redirect naming another issuer (RFC 9207)", case(function()
      local err = refused({ iss = true }, { on_authorize = tamper(function(loc)
        return (loc:gsub("iss=[^&]+", "iss=https%%3A%%2F%%2Fevil.example.com"))
      end) })
      assert.matches("a mix%-up is refused", err.message)
    end))

    it("an authorization the user refused", case(function()
      local err = refused(nil, { on_authorize = tamper(function(loc)
        return (loc:gsub("code=[^&]+", "error=access_denied"))
      end) })
      assert.matches("refused the authorization: access_denied", err.message)
      assert.equal("access_denied", err.oauth_error)
    end))

    it("on_authorize giving up", case(function()
      local err = refused(nil, { on_authorize = function() return nil, "the user closed it" end })
      assert.matches("gave no code: the user closed it", err.message)
    end))

    it("a registration refused", case(function()
      local err = refused { refuse_registration = true }
      assert.matches("refused the client registration: invalid_client_metadata %(redirect URI "
        .. "not allowed here%)", err.message)
      assert.equal("invalid_client_metadata", err.oauth_error)
    end))

    it("no registration and no client id", case(function()
      local err = refused { no_registration = true }
      assert.matches("offers no dynamic client registration", err.message)
    end))

    it("resource metadata that points to another origin", case(function()
      local err, log = refused { prm_resource = "https://evil.example.com/mcp" }
      assert.matches("is for resource 'https://evil.example.com/mcp', not for this server",
        err.message)
      assert.equal(0, #log.authorize)
      assert.equal(0, #log.register)
    end))

    it("authorization server metadata naming another issuer", case(function()
      local err, log = refused { issuer = "https://evil.example.com/as" }
      assert.matches("is for issuer 'https://evil.example.com/as'", err.message)
      assert.equal(0, #log.authorize)
    end))

    it("an authorization server over plain HTTP on a non-loopback host", case(function()
      -- refused from the URL alone: nothing is looked up or connected to
      local err, log = refused { as_url = "http://auth.example.com/as" }
      assert.matches("'http://auth.example.com/as' is not HTTPS", err.message)
      assert.equal(0, #log.authorize)
    end))

    it("an authorization server that does not promise PKCE", case(function()
      local err, log = refused { no_pkce = true }
      assert.matches("does not list S256", err.message)
      assert.equal(0, #log.authorize)
    end))

    it("a scope step-up that cannot help, stopped", case(function()
      local _fake <close>, u, log = fake { admin_scope = "root", challenge_scope = "read" }
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T, auth = auth {
        on_authorize = function(target)
          -- the server grants what it is asked for, but never 'root'
          return follow((target:gsub("root", "")))
        end } })
      local r, err, kind = c:call_tool("admin")
      assert.is_nil(r)
      assert.equal("auth", kind)
      assert.matches("insufficient_scope", err.message)
      assert.truthy(#log.authorize <= 1 + 2)
      assert_no_secret(log, tostring(err))
    end))

    it("tokens never reach stderr", case(function()
      local _fake <close>, u, log = fake()
      local script = harness.tempfile(string.format([[
        local claude = require "claude"
        local http = require "claude.http.client"
        local c, err = claude.mcp.connect { url = %q, timeout = 10, max_retries = 0,
          auth = { client_name = "leak", redirect_uri = "http://127.0.0.1:9/cb",
            on_authorize = function(u)
              local loc = http.request { url = u }.headers.location
              return (loc:gsub("state=[^&]+", "state=wrong"))
            end } }
        io.stderr:write(tostring(err), "\n")
        error(err)
      ]], u), ".lua")
      local proc = assert(claude.process.spawn { harness.claudelua, args = { script },
        stderr = "collect", stdout = "ignore", env = { CLAUDELUA_LUA_PATH = os.getenv(
          "CLAUDELUA_LUA_PATH") } })
      proc:wait(3 * T)
      local stderr = proc:stderr()
      proc:close()
      os.remove(script)
      assert.matches("auth:", stderr)
      assert.matches("state", stderr)
      assert.truthy(#log.secrets > 0)
      assert_no_secret(log, stderr)
    end))
  end)

  describe("claude.oauth.loopback", function()
    it("opens the authorization URL and returns the redirect it receives", case(function()
      local _fake <close>, u, log = fake()
      local opened
      local lb = assert(oauth.loopback { open_browser = function(target)
        opened = target
        claude.spawn(function()
          -- the browser: a stray request first, then the real redirect
          local loc = assert(follow(target))
          local stray = http.request { url = (loc:gsub("state=[^&]+", "state=other")) }
          assert.is_nil(stray)
          assert(http.request { url = loc })
        end)
      end })
      assert.matches("^http://127%.0%.0%.1:%d+/callback$", lb.redirect_uri)
      local c <close> = assert(claude.mcp.connect { url = u, timeout = T,
        auth = { redirect_uri = lb.redirect_uri, on_authorize = lb.on_authorize } })
      assert(c:list_tools())
      assert.matches("^" .. _fake.base:gsub("%p", "%%%0") .. "/as/authorize%?", opened)
      assert.same({ lb.redirect_uri }, log.register[1].redirect_uris)
    end))

    it("runs the example: signs in through $BROWSER, then reuses the stored tokens",
      case(function()
        local _fake <close>, u, log = fake()
        local dir = harness.tempdir()
        local browser = dir .. "/browser"
        local f = assert(io.open(browser, "w"))
        f:write('#!/bin/sh\nexec curl -sSfL -o /dev/null "$1"\n') -- follows the redirect
        f:close()
        os.execute("chmod +x " .. harness.quote(browser))
        local function example()
          local proc = assert(claude.process.spawn { harness.claudelua, args = {
            harness.root .. "/examples/mcp_oauth_client.lua", u, dir .. "/tokens.json",
            "echo" }, env = { BROWSER = browser, OAUTH_PORT = "0" }, stderr = "collect" })
          local out = {}
          for line in proc:lines(3 * T) do out[#out + 1] = line end
          local code = proc:wait(T)
          local stderr = proc:stderr()
          proc:close()
          assert.equal(0, code, stderr)
          assert_no_secret(log, stderr)
          return table.concat(out, "\n"), stderr
        end
        local out, stderr = example()
        assert.matches("connected to oauth-fake 1", out, 1, true)
        assert.matches("tool: echo", out, 1, true)
        assert.matches("echo: ok echo", out, 1, true)
        assert.matches("to authorize, open this URL in a browser", stderr, 1, true)
        assert.equal(384, core.stat(dir .. "/tokens.json").mode)
        assert.equal(1, #log.authorize)
        out, stderr = example()
        assert.matches("echo: ok echo", out, 1, true)
        assert.equal("", stderr)
        assert.equal(1, #log.authorize)
        os.execute("rm -rf " .. harness.quote(dir))
      end))

    it("gives up after its timeout", case(function()
      local lb = assert(oauth.loopback { open_browser = function() end, timeout = 0.2 })
      local r, err = lb.on_authorize("https://as.example.com/authorize?state=abc")
      assert.is_nil(r)
      assert.equal("timeout", err.kind)
      assert.matches("no redirect reached", err.message)
    end))
  end)
end)

describe("claude.mcp.connect's auth option (misuse)", function()
  local rows = {
    { { redirect_uri = "http://127.0.0.1/cb" }, "'auth.on_authorize' is needed" },
    { { on_authorize = print, redirect_uri = "not a uri" }, "bad field 'auth.redirect_uri'" },
    { { grant = "password" }, "bad field 'auth.grant'" },
    { { grant = "jwt_bearer", client_id = "x", client_secret = "y" },
      "'auth.assertion' goes with the jwt_bearer grant" },
    { { grant = "client_credentials", client_id = "x" }, "needs 'auth.client_id' and" },
    { { client_secret = "x", on_authorize = print, redirect_uri = "http://127.0.0.1/cb" },
      "'auth.client_secret' to 'connect' %(only with 'auth.client_id'%)" },
    { { on_authorize = print, redirect_uri = "http://127.0.0.1/cb",
      client_metadata_url = "http://example.com/c.json" }, "an https:// URL with a path" },
    { { on_authorize = print, redirect_uri = "http://127.0.0.1/cb", store = {} },
      "bad field 'auth.store'" },
    { { on_authorize = print, redirect_uri = "http://127.0.0.1/cb", scopes = "a" },
      "unknown field 'auth.scopes' to 'connect' %(did you mean 'auth.scope'%?%)" },
  }
  for _, row in ipairs(rows) do
    it("refuses " .. row[2], function()
      local ok, err = pcall(function()
        claude.mcp.connect { url = "http://127.0.0.1:1/mcp", auth = row[1] }
      end)
      assert.is_false(ok)
      assert.matches(row[2], err)
      assert.matches("oauth_client_spec.lua", err, 1, true) -- at the caller's line
    end)
  end

  it("refuses auth with an Authorization header, and auth over stdio", function()
    local a = { on_authorize = print, redirect_uri = "http://127.0.0.1/cb" }
    local ok, err = pcall(claude.mcp.connect, { url = "http://127.0.0.1:1/mcp", auth = a,
      headers = { authorization = "Bearer x" } })
    assert.is_false(ok)
    assert.matches("exclude each other", err)
    ok, err = pcall(claude.mcp.connect, { command = "true", auth = a })
    assert.is_false(ok)
    assert.matches("'auth' to 'connect' %(only with 'url'%)", err)
  end)
end)
