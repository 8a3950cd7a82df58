-- `claudelua mcp --http` with OAuth bearer checks, driven by claude.http's client: the
-- challenge of an unauthenticated request, the protected resource metadata, bad, expired,
-- early and out-of-scope tokens, a verifier that raises, waits, hangs or cannot tell, a
-- session bound to its subject, ctx.auth in tools, resources and prompts, RFC 7662
-- introspection against an authorization server run here, the command line's refusals
-- (stdio with auth, a public address without it). No token ever shows in an answer or on
-- stderr: every test token holds "SECRET", and the spec greps for it.
local async = require "claude.async"
local json = require "claude.json"
local process = require "claude.process"
local http = require "claude.http.client"
local http_server = require "claude.http.server"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local TOOLS = harness.root .. "/spec/support/mcp_auth_tools.lua"
local JSON_SSE = "application/json, text/event-stream"

-- One request: status, headers, body, whatever the status.
local function request(r)
  local headers = r.headers or {}
  if r.body ~= nil then
    headers["content-type"] = headers["content-type"] or "application/json"
    headers.accept = headers.accept or JSON_SSE
  end
  local resp, err = http.request { method = r.method or (r.body and "POST" or "GET"),
    url = r.url, headers = headers, timeout = 20,
    body = type(r.body) == "table" and json.encode(r.body) or r.body }
  if resp then return resp.status, resp.headers, resp.body end
  assert(err.kind == "http", tostring(err))
  return err.status, err.headers, err.body
end

local function rpc(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or json.object() }
end

local INIT = rpc(0, "initialize", { protocolVersion = "2025-11-25",
  capabilities = json.object(), clientInfo = { name = "spec", version = "1" } })

local function bearer(token, more)
  local h = more or {}
  h.authorization = "Bearer " .. token
  return h
end

-- Opens a session with `token`; returns its id.
local function initialize(url, token)
  local status, headers, body = request { url = url, headers = bearer(token), body = INIT }
  assert.equal(200, status, body)
  local sid = headers["mcp-session-id"]
  assert.equal(202, (request { url = url, headers = bearer(token,
    { ["mcp-session-id"] = sid }), body = { jsonrpc = "2.0",
      method = "notifications/initialized" } }))
  return sid
end

-- tools/call whoami in session `sid` with `token` -> status, decoded answer or body
local function whoami(url, sid, token, id)
  local status, headers, body = request { url = url, headers = bearer(token,
    { ["mcp-session-id"] = sid }), body = rpc(id or 1, "tools/call", { name = "whoami",
      arguments = json.object() }) }
  if status ~= 200 then return status, body, headers end
  return status, json.decode(json.decode(body).result.content[1].text), headers
end

local function message_of(body)
  return json.decode(body).error.message
end

-- An authorization server's introspection endpoint, in this process: `active` maps tokens
-- to their claims; `seen` records each request; `status` forces an error status.
local function start_introspection()
  local as = { active = {}, seen = {} }
  as.server = assert(http_server.listen { host = "127.0.0.1", port = 0,
    on_request = function(req, res)
      local form = {}
      for k, v in req.body:gmatch("([^&=]+)=([^&]*)") do
        form[k] = v:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
      end
      as.seen[#as.seen + 1] = { authorization = req.headers.authorization, form = form,
        content_type = req.headers["content-type"] }
      if as.status then
        return res:respond(as.status, { ["content-type"] = "text/plain" },
          "broken for " .. tostring(form.token))
      end
      local claims = as.active[form.token]
      local doc = claims and { active = true } or { active = false }
      for k, v in pairs(claims or {}) do doc[k] = v end
      res:respond(200, { ["content-type"] = "application/json" }, json.encode(doc))
    end })
  as.url = "http://127.0.0.1:" .. as.server:port() .. "/introspect"
  return as
end

local busted_it = it

describe("claudelua mcp --http with OAuth", function()
  local url, base, stderr, as

  -- Each case gets its own server (and authorization server), started and stopped inside it;
  -- `args` go before the tools file.
  local function it(name, fn, args)
    busted_it(name, function()
      as = start_introspection()
      local argv = {}
      for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
      argv[#argv + 1] = TOOLS
      argv[#argv + 1] = as.url
      local server
      server, url, stderr = mcp_http.start(argv)
      base = url:match("^(http://[^/]+)")
      local ok, err = pcall(fn)
      server:signal("term")
      local code = server:wait(10)
      server:close()
      as.server:close()
      assert(ok, err)
      assert.equal(0, code)
      -- no test token in anything the server wrote
      for _, line in ipairs(stderr) do assert.not_matches("SECRET", line) end
    end)
  end

  local function prm_url(path)
    return base .. "/.well-known/oauth-protected-resource" .. (path or "")
  end

  it("answers a request without a token with 401 and the challenge naming the metadata",
    function()
      local status, headers, body = request { url = url, body = INIT }
      assert.equal(401, status)
      assert.equal('Bearer resource_metadata="' .. prm_url("/mcp")
        .. '", scope="notes:read"', headers["www-authenticate"])
      assert.equal("application/json", headers["content-type"])
      local msg = json.decode(body)
      assert.equal(json.null, msg.id)
      assert.equal(-32000, msg.error.code)
      assert.matches("^Unauthorized: no Authorization header", msg.error.message)
      -- GET and DELETE are protected too, and another scheme is no token
      assert.equal(401, (request { url = url, headers = { accept = "text/event-stream" } }))
      assert.equal(401, (request { method = "DELETE", url = url }))
      status, headers = request { url = url, headers = { authorization = "Basic YTpi" },
        body = INIT }
      assert.equal(401, status)
      assert.not_matches("error=", headers["www-authenticate"])
      -- a server with auth = false needs none
      assert.equal(200, (request { url = url .. "/open", body = INIT }))
    end)

  it("serves the protected resource metadata, path-aware and at the root, without a token",
    function()
      local status, headers, body = request { url = prm_url("/mcp") }
      assert.equal(200, status)
      assert.equal("application/json", headers["content-type"])
      assert.equal("*", headers["access-control-allow-origin"])
      assert.same({ resource = url, authorization_servers = { "https://as.example" },
        scopes_supported = { "notes:read", "notes:write" }, bearer_methods_supported =
        { "header" }, resource_name = "Notes" }, json.decode(body))
      local root_status, _, root_body = request { url = prm_url() }
      assert.equal(200, root_status)
      assert.equal(body, root_body)
      -- each server at its own path, with its own resource
      _, _, body = request { url = prm_url("/mcp/intro") }
      assert.equal(url .. "/intro", json.decode(body).resource)
      _, _, body = request { url = prm_url("/mcp/notes") }
      assert.equal(url .. "/notes", json.decode(body).resource)
      -- no metadata where nothing is protected; the preflight; other methods
      assert.equal(404, (request { url = prm_url("/mcp/open") }))
      assert.equal(404, (request { url = prm_url("/elsewhere") }))
      status, headers = request { method = "OPTIONS", url = prm_url("/mcp") }
      assert.equal(204, status)
      assert.equal("GET, OPTIONS", headers["access-control-allow-methods"])
      status, headers = request { method = "POST", url = prm_url("/mcp"), body = "{}" }
      assert.equal(405, status)
      assert.equal("GET, OPTIONS", headers.allow)
    end)

  it("serves a valid token and hands the tool its claims in ctx.auth (no token in it)",
    function()
      local sid = initialize(url, "alice-SECRET-1")
      local status, who = whoami(url, sid, "alice-SECRET-1")
      assert.equal(200, status)
      assert.same({ server = "notes", subject = "alice", client_id = "app",
        scopes = { "notes:read", "notes:write" }, expires_at = who.expires_at,
        issuer = "https://as.example", resource = url, email = "a@x", write = true,
        token_seen = false }, who)
      assert.is_true(who.expires_at > os.time())
      -- resources and prompts get it too
      local _, _, body = request { url = url, headers = bearer("alice-SECRET-1",
        { ["mcp-session-id"] = sid }), body = rpc(2, "resources/read", { uri = "notes://me" }) }
      assert.equal("resource for alice", json.decode(body).result.contents[1].text)
      _, _, body = request { url = url, headers = bearer("alice-SECRET-1",
        { ["mcp-session-id"] = sid }), body = rpc(3, "prompts/get", { name = "me" }) }
      assert.equal("prompt for alice", json.decode(body).result.messages[1].content.text)
      -- `scp` as a list; a verifier that waits
      local _
      _, who = whoami(url, initialize(url, "list-SECRET-7"), "list-SECRET-7")
      assert.same({ "notes:read", "x" }, who.scopes)
      _, who = whoami(url, initialize(url, "slow-SECRET-11"), "slow-SECRET-11")
      assert.equal("slow", who.subject)
      -- without auth, ctx.auth is nil
      local open = initialize(url .. "/open", "ignored")
      _, who = whoami(url .. "/open", open, "ignored")
      assert.equal(json.null, who.auth)
    end)

  it("refuses bad, expired and early tokens with 401 invalid_token, also in a live session",
    function()
      local sid = initialize(url, "alice-SECRET-1")
      local cases = {
        { "nobody-SECRET-0", "unknown token '[token]'" },
        { "expired-SECRET-4", "the access token expired" },
        { "later-SECRET-6", "the access token is not valid yet" },
      }
      for _, c in ipairs(cases) do
        local status, body, headers = whoami(url, sid, c[1])
        assert.equal(401, status, c[1])
        assert.equal('Bearer error="invalid_token", error_description="' .. c[2]
          .. '", scope="notes:read", resource_metadata="' .. prm_url("/mcp") .. '"',
          headers["www-authenticate"])
        assert.equal("Unauthorized: " .. c[2], message_of(body))
        assert.not_matches("SECRET", body)
        assert.not_matches("SECRET", headers["www-authenticate"])
      end
      -- alice's expired token on alice's live session: refused all the same
      assert.equal(401, (whoami(url, sid, "expired-SECRET-4")))
      assert.equal(200, (whoami(url, sid, "alice-SECRET-1")))
    end)

  it("refuses a token without the required scope with 403 insufficient_scope", function()
    local status, headers, body = request { url = url, headers = bearer("noscope-SECRET-5"),
      body = INIT }
    assert.equal(403, status)
    assert.equal('Bearer error="insufficient_scope", error_description="the access token '
      .. 'lacks scope notes:read", scope="notes:read", resource_metadata="' .. prm_url("/mcp")
      .. '"', headers["www-authenticate"])
    assert.equal("Forbidden: the access token lacks the scope notes:read", message_of(body))
  end)

  it("answers 400 for malformed headers and a token in the URL, 431 for an oversized one",
    function()
      for _, value in ipairs { "Bearer", "Bearer a b", "Bearer a\"b" } do
        local status, headers = request { url = url, headers = { authorization = value },
          body = INIT }
        assert.equal(400, status, value)
        assert.matches('^Bearer error="invalid_request"', headers["www-authenticate"])
      end
      local status, _, body = request { url = url .. "?access_token=alice-SECRET-1",
        body = INIT }
      assert.equal(400, status)
      assert.matches("query string is refused", message_of(body))
      assert.not_matches("SECRET", body)
      local big = "SECRET" .. string.rep("a", 20000)
      status, _, body = request { url = url, headers = bearer(big), body = INIT }
      assert.equal(431, status)
      assert.matches("over 16384 bytes", message_of(body))
      -- beyond the server's limit for a request head (64 KiB), even beyond h2o's own: 431
      -- (it was h2o's 400, or the connection cut while the client still sent); it goes on
      assert.equal(431, (request { url = url, headers = bearer(string.rep("a", 600000)),
        body = INIT }))
      assert.equal(401, (request { url = url, body = INIT }))
    end)

  it("answers 500 for a verifier that raises, 503 for one that cannot tell or hangs, and "
    .. "logs why without the token", function()
      -- stderr comes through a pipe, maybe after the answer: wait (bounded) for the line
      local function logged(pattern)
        for _ = 1, 2000 do
          if table.concat(stderr, "\n"):find(pattern) then return true end
          async.sleep(0.01)
        end
        error("never logged: " .. pattern)
      end
      local _
      local status, headers, body = request { url = url, headers = bearer("raise-SECRET-8"),
        body = INIT }
      assert.equal(500, status)
      assert.is_nil(headers["www-authenticate"])
      assert.equal("Internal Server Error: the access token could not be verified",
        message_of(body))
      logged("auth: the token verifier raised an error: [^\n]*verifier crashed on %[token%]")
      status, _, body = request { url = url, headers = bearer("down-SECRET-9"), body = INIT }
      assert.equal(503, status)
      assert.equal("Service Unavailable: the access token cannot be verified now",
        message_of(body))
      logged("auth: cannot verify tokens now: the key server is down")
      status, _, body = request { url = url, headers = bearer("hang-SECRET-10"), body = INIT }
      assert.equal(503, status)
      assert.matches("could not be verified in time", message_of(body))
      status = request { url = url, headers = bearer("string-SECRET-12"), body = INIT }
      assert.equal(500, status)
      logged("auth: the token verifier returned a string")
      assert.not_matches("SECRET", table.concat(stderr, "\n"))
    end)

  it("binds a session to the subject that opened it", function()
    local sid = initialize(url, "alice-SECRET-1")
    -- bob's token on alice's session: as if the session did not exist
    local status, body = whoami(url, sid, "bob-SECRET-3")
    assert.equal(404, status)
    assert.equal("Session not found", message_of(body))
    assert.equal(404, (request { method = "DELETE", url = url,
      headers = bearer("bob-SECRET-3", { ["mcp-session-id"] = sid }) }))
    assert.equal(404, (request { url = url, headers = bearer("bob-SECRET-3",
      { ["mcp-session-id"] = sid, accept = "text/event-stream" }) }))
    -- alice's other (refreshed) token: the same subject, served
    local who
    status, who = whoami(url, sid, "alice-SECRET-2")
    assert.equal(200, status)
    assert.same({ "notes:read" }, who.scopes)
    -- and alice ends it
    assert.equal(200, (request { method = "DELETE", url = url,
      headers = bearer("alice-SECRET-2", { ["mcp-session-id"] = sid }) }))
  end)

  it("ends a GET stream when the token that opened it expires; resuming needs a fresh one",
    function()
      local sid = initialize(url, "short-SECRET-13")
      local stream = assert(http.stream { url = url, timeout = 30, headers = bearer(
        "short-SECRET-13", { ["mcp-session-id"] = sid, accept = "text/event-stream" }) })
      local last
      for event in stream:events() do last = event.id or last end
      stream:close()
      assert.matches("^0%-%d+$", last) -- the priming event: the stream was open
      -- the token is past its exp now: refused, also for resuming
      local status, headers = request { url = url, headers = bearer("short-SECRET-13",
        { ["mcp-session-id"] = sid, accept = "text/event-stream", ["last-event-id"] = last }) }
      assert.equal(401, status)
      assert.matches('error_description="the access token expired"',
        headers["www-authenticate"])
    end, { "--session-timeout", "2" }) -- the sweep runs every half second

  it("checks every request of a stateless server", function()
    local status, who = whoami(url, nil, "alice-SECRET-1")
    assert.equal(200, status)
    assert.equal("alice", who.subject)
    assert.equal(401, (whoami(url, nil, "expired-SECRET-4")))
    assert.equal(401, (request { url = url, body = rpc(1, "tools/list") }))
  end, { "--stateless" })

  it("checks tokens by introspection (RFC 7662) with client credentials and a cache",
    function()
      local intro = url .. "/intro"
      as.active["intro-SECRET-20"] = { sub = "ivy", scope = "a b", client_id = "app",
        exp = os.time() + 600, aud = intro }
      as.active["wrongaud-SECRET-21"] = { sub = "ivy", aud = "https://other.example/mcp" }
      as.active["parent-SECRET-22"] = { sub = "ivy", aud = url }
      local sid = initialize(intro, "intro-SECRET-20")
      local status, who = whoami(intro, sid, "intro-SECRET-20")
      assert.equal(200, status)
      assert.equal("ivy", who.subject)
      assert.same({ "a", "b" }, who.scopes)
      -- what the authorization server was sent: the token, form-encoded, and our Basic
      -- credentials (each form-encoded first: RFC 6749 section 2.3.1, by claude.oauth.
      -- client_auth as the OAuth client does it: a blank is %20, which a form decoder and a
      -- plain percent-decoder both read as a blank)
      local first = as.seen[1]
      assert.equal("intro-SECRET-20", first.form.token)
      assert.equal("access_token", first.form.token_type_hint)
      assert.equal("application/x-www-form-urlencoded", first.content_type)
      assert.equal("Basic " .. require("claude.mcp.content").base64("rs%20id:rs%3Asecret"),
        first.authorization)
      -- cached: three requests, one introspection
      assert.equal(1, #as.seen)
      -- an audience elsewhere is refused; a token for the resource above is good here
      status = whoami(intro, sid, "wrongaud-SECRET-21")
      assert.equal(401, status)
      assert.equal(200, (request { url = intro, headers = bearer("parent-SECRET-22"),
        body = INIT }))
      -- inactive (revoked, expired, unknown): 401
      local body, headers
      status, body, headers = whoami(intro, sid, "revoked-SECRET-23")
      assert.equal(401, status)
      assert.matches('error="invalid_token", error_description="the access token is not '
        .. 'active', headers["www-authenticate"])
      assert.not_matches("SECRET", body)
      -- the authorization server failing: 503, and its text (which quotes the token) is
      -- never repeated
      as.status = 500
      status, body = whoami(intro, sid, "other-SECRET-24")
      assert.equal(503, status)
      assert.not_matches("SECRET", body)
      for _ = 1, 2000 do
        if table.concat(stderr, "\n"):find("auth: cannot verify tokens now: the "
          .. "introspection endpoint answered HTTP 500") then break end
        async.sleep(0.01)
      end
      assert.matches("auth: cannot verify tokens now: the introspection endpoint answered "
        .. "HTTP 500", table.concat(stderr, "\n"))
    end)
end)

describe("examples/mcp_auth_server.lua", function()
  it("keeps notes per user, each tool seeing its caller in ctx.auth", function()
    local server <close>, url, stderr = mcp_http.start(
      { harness.root .. "/examples/mcp_auth_server.lua" },
      { NOTES_TOKENS = "alice=alice-SECRET-a,bob=bob-SECRET-b" })
    assert.equal(401, (request { url = url, body = INIT }))
    assert.equal(401, (request { url = url, headers = bearer("carol-SECRET-c"), body = INIT }))
    local function call(token, sid, name, args)
      local _, _, body = request { url = url, headers = bearer(token,
        { ["mcp-session-id"] = sid }), body = rpc(1, "tools/call", { name = name,
          arguments = args or json.object() }) }
      return json.decode(body).result.content[1].text
    end
    local a, b = initialize(url, "alice-SECRET-a"), initialize(url, "bob-SECRET-b")
    assert.equal("stored as alice's note #1", call("alice-SECRET-a", a, "add_note",
      { text = "milk" }))
    assert.equal("bob has no notes", call("bob-SECRET-b", b, "list_notes"))
    assert.equal("milk", call("alice-SECRET-a", a, "list_notes"))
    server:signal("term")
    assert.equal(0, server:wait(10))
    for _, line in ipairs(stderr) do assert.not_matches("SECRET", line) end
  end)
end)

describe("claudelua mcp: OAuth on the command line", function()
  local function run(args, stdin)
    local argv = { "mcp" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    local exe = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or harness.root .. "/" .. harness.claudelua
    local p <close> = assert(process.spawn { exe, args = argv, stderr = "collect" })
    if stdin then p:write(stdin) end
    p:close_stdin()
    for _ in p:lines(30) do end
    local code = p:wait(30)
    return code, p:stderr()
  end

  it("refuses a server with auth over stdio", function()
    local code, err = run { "--server", "notes", TOOLS }
    assert.equal(1, code)
    assert.matches("server 'notes' has an auth option: OAuth is for HTTP", err)
    -- the open one is fine
    code = run({ "--server", "open", TOOLS }, "")
    assert.equal(0, code)
  end)

  it("refuses a server without auth on a public address, unless --no-auth", function()
    local code, err = run { "--http", "0.0.0.0:0", harness.root .. "/spec/support/"
      .. "mcp_http_tools.lua" }
    assert.equal(1, code)
    -- the command's own sentence, not listen's misuse
    assert.matches("claudelua mcp: 0%.0%.0%.0 can be reached from other machines, and server "
      .. "'calc' has no authentication", err)
    assert.matches("%-%-no%-auth", err)
    assert.is_nil(err:find("bad field", 1, true))
    -- with auth but no resource: the public URL cannot be guessed from 0.0.0.0
    code, err = run { "--http", "0.0.0.0:0", "--introspection-url", "http://127.0.0.1:1/i",
      "--authorization-server", "https://as.example", harness.root .. "/spec/support/"
      .. "mcp_http_tools.lua" }
    assert.equal(1, code)
    assert.matches("on 0%.0%.0%.0 the server's public URL cannot be guessed: give it with "
      .. "%-%-resource URL", err)
    -- --no-auth: served, with a warning
    local lines, ready = {}, async.event()
    local exe = harness.claudelua:sub(1, 1) == "/" and harness.claudelua
      or harness.root .. "/" .. harness.claudelua
    local p <close> = assert(process.spawn { exe, args = { "mcp", "--http", "0.0.0.0:0",
      "--no-auth", harness.root .. "/spec/support/mcp_http_tools.lua" },
      stderr = function(line)
        lines[#lines + 1] = line
        if line:match("WARNING") then ready:set() end
      end })
    ready:wait(30)
    p:signal("term")
    assert.equal(0, p:wait(10))
    assert.matches("WARNING: calc is served to anyone who reaches 0.0.0.0, without "
      .. "authentication", table.concat(lines, "\n"))
  end)

  it("checks the OAuth options", function()
    local tools = harness.root .. "/spec/support/mcp_http_tools.lua"
    local cases = {
      { { "--introspection-url", "http://x/i", tools }, "the OAuth options need %-%-http" },
      { { "--http", "0", "--required-scopes", "a", tools },
        "need %-%-introspection%-url or %-%-jwks%-url" },
      { { "--http", "0", "--introspection-url", "ftp://x", "--authorization-server",
        "https://as", tools }, "%-%-introspection%-url: an http%(s%) URL" },
      { { "--http", "0", "--introspection-url", "http://x/i", tools },
        "%-%-authorization%-server: needed" },
      { { "--http", "0", "--no-auth", "--introspection-url", "http://x/i", tools },
        "exclude each other" },
      { { "--no-auth", tools }, "%-%-no%-auth needs %-%-http" },
    }
    for _, c in ipairs(cases) do
      local code, err = run(c[1])
      assert.equal(1, code, table.concat(c[1], " "))
      assert.matches(c[2], err)
    end
  end)

  it("needs --issuer with --jwks-url", function()
    local code, err = run { "--http", "0", "--jwks-url", "https://as.example/jwks",
      harness.root .. "/spec/support/mcp_http_tools.lua" }
    assert.equal(1, code)
    assert.matches("%-%-issuer: needed with jwks_url", err)
  end)
end)

describe("claude.mcp.server.auth.introspection", function()
  it("sends the client's credentials in the form with client_auth = 'post'", function()
    local as = start_introspection()
    as.active["post-SECRET-30"] = { sub = "pat", scope = "a" }
    local verify = require("claude.mcp.server.auth").introspection { introspection_url = as.url,
      client_id = "rs id", client_secret = "rs:secret", client_auth = "post" }
    local claims = verify("post-SECRET-30")
    local claims2, err, kind = verify("gone-SECRET-31")
    as.server:close()
    assert.equal("pat", claims.sub)
    assert.is_nil(claims.active)
    assert.is_nil(claims2)
    assert.equal("invalid_token", kind)
    assert.matches("not active", tostring(err))
    assert.equal(2, #as.seen)
    assert.is_nil(as.seen[1].authorization)
    assert.same({ token = "post-SECRET-30", token_type_hint = "access_token",
      client_id = "rs id", client_secret = "rs:secret" }, as.seen[1].form)
  end)
end)
