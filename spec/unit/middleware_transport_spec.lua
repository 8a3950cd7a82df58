-- A server's middleware at its transports, with fake ones: who asks without OAuth
-- (ctx.session, ctx.principal_key: the connection, the session, the client's address) and
-- the requests a transport answers itself (legacy logging/setLevel and the subscriptions,
-- the modern era's server/discover, subscriptions/listen, tasks/* and skills/*).
local claude = require "claude"
local json = require "claude.json"
local errors = require "claude.errors"
local connection = require "claude.mcp.server.connection"
local modern = require "claude.mcp.server.modern"
local era = require "claude.mcp.era"
local mw = require "claude.mcp.middleware"
local harness = require "support.harness"

local PV, CAPS = era.META.protocol_version, era.META.client_capabilities
local TASKS = "io.modelcontextprotocol/tasks"

local function init(id)
  return { jsonrpc = "2.0", id = id or 0, method = "initialize", params = {
    protocolVersion = "2025-11-25", capabilities = {},
    clientInfo = { name = "spec", version = "1" } } }
end

local function req(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or {} }
end

-- a modern request: the envelope of the version we speak
local function modern_req(id, method, params, caps)
  params = params or {}
  params._meta = { [PV] = era.LATEST_MODERN, [CAPS] = caps or {} }
  return req(id, method, params)
end

-- a legacy connection (initialized) whose answers land in `sent`, by id
local function open(server, opts)
  local sent = {}
  opts = opts or {}
  opts.server = server
  opts.send = function(msg)
    sent[#sent + 1] = json.decode(json.encode(msg))
    return true
  end
  local conn = connection.new(opts)
  conn:receive(init())
  return conn, sent
end

local function answer(sent, id)
  for _, m in ipairs(sent) do
    if m.id == id and m.method == nil then return m end
  end
end

-- an out of the modern server that keeps what it is sent
local function recorder(client)
  local sent = {}
  return { own_ids = true, client = client, sent = sent,
    send = function(_, msg) sent[#sent + 1] = json.decode(json.encode(msg)) return true end }
end

local function whoami()
  return claude.tool("whoami", function(_, ctx)
    return tostring(ctx.session) .. " " .. tostring(ctx.principal_key)
  end)
end

describe("middleware at the transports", function()
  before_each(harness.before)
  after_each(harness.after)

  describe("who asks", function()
    it("is the connection over stdio: each has a session of its own", harness.task(function()
      local seen = {}
      local server = claude.server("s", { whoami() }, { middleware = {
        function(r, ctx, next)
          seen[#seen + 1] = ctx.principal_key
          return next(r)
        end } })
      local a, sa = open(server)
      local b, sb = open(server)
      a:receive(req(1, "tools/call", { name = "whoami" }))
      b:receive(req(1, "tools/call", { name = "whoami" }))
      claude.sleep(0)
      local ta, tb = answer(sa, 1).result.content[1].text, answer(sb, 1).result.content[1].text
      assert.truthy(ta:match("^connection%-%d+ session:connection%-%d+$"), ta)
      assert.not_equal(ta, tb)
      assert.same({ ta:match(" (.*)$"), tb:match(" (.*)$") }, seen)
    end))

    it("is the session for legacy HTTP, the address when stateless", harness.task(function()
      local server = claude.server("s", { whoami() }, { middleware = {
        function(r, _, next) return next(r) end } })
      local session, s1 = open(server, { session = "abc", client_address = "10.0.0.1" })
      local stateless, s2 = open(server, { stateless = true, client_address = "10.0.0.2" })
      session:receive(req(1, "tools/call", { name = "whoami" }))
      stateless:receive(req(2, "tools/call", { name = "whoami" }))
      claude.sleep(0)
      assert.equal("abc session:abc", answer(s1, 1).result.content[1].text)
      assert.equal("nil address:10.0.0.2", answer(s2, 2).result.content[1].text)
    end))

    it("is the principal of a verified token first", harness.task(function()
      local server = claude.server("s", { whoami() }, { middleware = {
        function(r, _, next) return next(r) end } })
      local conn, sent = open(server, { session = "abc" })
      conn:receive(req(4, "tools/call", { name = "whoami" }), { subject = "alice",
        issuer = "https://as.example" })
      claude.sleep(0)
      local text = answer(sent, 4).result.content[1].text
      assert.truthy(text:find("^abc principal:"), text)
      assert.truthy(text:find("alice", 1, true), text)
    end))

    it("is the client's address in the modern era over HTTP (no session)",
      harness.task(function()
        local server = claude.server("s", { whoami() }, { middleware = {
          function(r, _, next) return next(r) end } })
        local m = modern.new(server)
        local out = recorder("192.0.2.7")
        m:handle(modern_req(1, "tools/call", { name = "whoami" }), out)
        claude.sleep(0)
        assert.equal("nil address:192.0.2.7", out.sent[1].result.content[1].text)
        m:close()
      end))

    it("keeps a rate limit's buckets apart per connection", harness.task(function()
      local server = claude.server("s", { whoami() }, { middleware = {
        mw.rate_limit { rate = 0.001, burst = 1 } } })
      local a, sa = open(server)
      local b, sb = open(server)
      for id = 1, 2 do
        a:receive(req(id, "ping"))
        b:receive(req(id, "ping"))
      end
      claude.sleep(0)
      assert.is_table(answer(sa, 1).result)
      assert.is_table(answer(sb, 1).result)
      assert.equal(-32000, answer(sa, 2).error.code)
      assert.equal(-32000, answer(sb, 2).error.code)
    end))
  end)

  describe("wraps what a transport answers itself", function()
    -- a middleware that records each method, refuses those in `refuse`, and marks results
    local function recording(seen, refuse)
      return function(r, _, next)
        seen[#seen + 1] = r.method
        if refuse and refuse[r.method] then
          return nil, errors.new("rpc", "Forbidden: " .. r.method, { code = -32001 })
        end
        local result, err = next(r)
        if result then result.wrapped = true end
        return result, err
      end
    end

    it("legacy logging/setLevel and the subscriptions", harness.task(function()
      local seen = {}
      local server = claude.server("s", {
        claude.resource { uri = "mem://a", name = "a", text = "A" },
      }, { subscribe = true, middleware = { recording(seen,
        { ["resources/unsubscribe"] = true }) } })
      local conn, sent = open(server)
      conn:receive(req(1, "logging/setLevel", { level = "error" }))
      conn:receive(req(2, "resources/subscribe", { uri = "mem://a" }))
      conn:receive(req(3, "resources/unsubscribe", { uri = "mem://a" }))
      claude.sleep(0)
      assert.same({ "logging/setLevel", "resources/subscribe", "resources/unsubscribe" }, seen)
      assert.is_true(answer(sent, 1).result.wrapped)
      assert.equal("error", conn.log_level)
      assert.is_true(answer(sent, 2).result.wrapped)
      assert.is_true(conn.subscriptions["mem://a"])
      assert.equal(-32001, answer(sent, 3).error.code)
      assert.is_true(conn.subscriptions["mem://a"]) -- (refused: still subscribed)
    end))

    it("a refused setLevel leaves the level as it was", harness.task(function()
      local server = claude.server("s", {}, { middleware = {
        { level = function() return nil, errors.new("rpc", "no", { code = -32001 }) end } } })
      local conn, sent = open(server)
      conn:receive(req(1, "logging/setLevel", { level = "error" }))
      claude.sleep(0)
      assert.equal(-32001, answer(sent, 1).error.code)
      assert.is_nil(conn.log_level)
    end))

    it("the modern era's discover, skills, tasks and listen", harness.task(function()
      local seen = {}
      local server = claude.server("s", {
        claude.tool("slow", function()
          claude.sleep(0.05)
          return "done"
        end, { task = true }),
      }, { middleware = { recording(seen, { ["skills/list"] = true }) } })
      local m = modern.new(server)
      local out = recorder()
      m:handle(modern_req(1, "server/discover"), out)
      m:handle(modern_req(2, "skills/list"), out)
      local caps = { extensions = { [TASKS] = {} } }
      m:handle(modern_req(3, "tools/call", { name = "slow" }, caps), out)
      claude.sleep(0)
      local created
      for _, msg in ipairs(out.sent) do
        if msg.id == 3 then created = msg.result end
      end
      m:handle(modern_req(4, "tasks/get", { taskId = created.taskId }, caps), out)
      m:handle(modern_req(5, "subscriptions/listen", { notifications = {
        toolsListChanged = true } }), out)
      claude.sleep(0)
      local by = {}
      for _, msg in ipairs(out.sent) do
        if msg.id ~= nil and msg.method == nil then by[msg.id] = msg end
      end
      assert.is_true(by[1].result.wrapped)
      assert.truthy(by[1].result.supportedVersions)
      assert.equal(-32001, by[2].error.code)
      assert.is_true(by[4].result.wrapped)
      assert.equal(created.taskId, by[4].result.taskId)
      assert.is_nil(by[5]) -- a listen answers at its end
      assert.equal(1, #m:listens())
      assert.same({ "server/discover", "skills/list", "tools/call", "tasks/get",
        "subscriptions/listen" }, seen)
      m:close()
      claude.sleep(0.1)
    end))

    it("a refused listen does not open", harness.task(function()
      local server = claude.server("s", {}, { middleware = {
        { subscribe = function() return nil, errors.new("rpc", "no", { code = -32001 }) end } } })
      local m = modern.new(server)
      local out = recorder()
      m:handle(modern_req(1, "subscriptions/listen", { notifications = {
        toolsListChanged = true } }), out)
      claude.sleep(0)
      assert.equal(-32001, out.sent[1].error.code)
      assert.equal(0, #m:listens())
      m:close()
    end))
  end)
end)
