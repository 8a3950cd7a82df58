-- The modern era of the server side (claude.mcp.server.modern) with a fake transport: the
-- envelope ladder, server/discover, the stamps of each result, the per-request log level,
-- multi round-trip input with a signed requestState, listens, tasks, and the trace context.
local claude = require "claude"
local json = require "claude.json"
local modern = require "claude.mcp.server.modern"
local state = require "claude.mcp.server.state"
local era = require "claude.mcp.era"
local harness = require "support.harness"

local PV, CAPS, LEVEL, INFO, SUB = era.META.protocol_version, era.META.client_capabilities,
  era.META.log_level, era.META.server_info, era.META.subscription_id
local TASKS = "io.modelcontextprotocol/tasks"

local function envelope(caps, extra)
  local m = { [PV] = "2026-07-28", [CAPS] = caps or {} }
  for k, v in pairs(extra or {}) do m[k] = v end
  return m
end

local function request(id, method, params, caps, extra)
  params = params or {}
  params._meta = envelope(caps, extra)
  return { jsonrpc = "2.0", id = id, method = method, params = params }
end

-- An out that records what it is sent (decoded again: what a client would see).
local function recorder()
  local sent = {}
  local out = { own_ids = true, sent = sent,
    send = function(_, msg) sent[#sent + 1] = json.decode(json.encode(msg)) return true end }
  return out
end

local function server(opts)
  local items = {
    claude.tool("echo", { text = "string" }, function(a) return a.text end),
    claude.tool("table", function() return { content = { claude.content.text("t") } } end),
    claude.tool("logs", function(_, ctx)
      ctx.log("debug", "fine")
      ctx.log("error", "bad")
      return "logged"
    end),
    claude.tool("ask", function(_, ctx)
      local r, err = ctx.elicit { message = "name?", requestedSchema = { type = "object" } }
      if not r then return nil, err end
      local s = ctx.sample { messages = {}, maxTokens = 5 }
      return r.content.name .. " and " .. s.content.text
    end),
    claude.tool("both", function(_, ctx)
      local r = ctx.input {
        a = { method = "elicitation/create", params = { message = "a?" } },
        b = { method = "roots/list" },
      }
      return r.a.action .. " " .. #r.b.roots
    end),
    claude.tool("trace", function(_, ctx)
      return tostring(ctx.traceparent) .. " " .. tostring(ctx.tracestate) .. " " .. ctx.era
    end),
    claude.tool("broken", function()
      error(claude.errors.new("rpc", "it broke", { code = -32603, data = { why = "x" } }))
    end),
    claude.tool("slow", function() claude.sleep(0.05) return "slow done" end, { task = true }),
    claude.tool("must", function() return "quick" end, { task = "required" }),
    claude.tool("confirm", function(_, ctx)
      ctx.task()
      local r = ctx.elicit { message = "sure?" }
      return "confirmed " .. r.action
    end, { task = true }),
    claude.resource { uri = "mem://a", name = "a", text = "A" },
    claude.resource { uri = "mem://hot", name = "hot", text = "H",
      cache = { ttl_ms = 5000, scope = "public" } },
    claude.prompt { name = "p", get = function() return "hi" end },
  }
  return claude.server("s", items, opts or { subscribe = true, version = "2.0.0" })
end

local function run(m, msg, out)
  out = out or recorder()
  m:handle(msg, out)
  return out.sent, out
end

describe("claude.mcp.server.modern", function()
  before_each(harness.before)
  after_each(harness.after)

  it("checks the envelope as the ladder says (-32602, -32020, -32022)", function()
    local check = modern.check
    assert.equal(-32602, (check({ method = "x", params = {} }, "2026-07-28")))
    assert.equal(-32602, (check({ method = "x", params = { _meta = {} } }, "2026-07-28")))
    local ok = { method = "x", params = { _meta = envelope() } }
    assert.is_nil(check(ok, "2026-07-28"))
    assert.is_nil(check(ok, false)) -- stdio: no headers
    assert.equal(-32020, (check(ok, "2025-11-25")))
    assert.equal(-32020, (check(ok, nil))) -- HTTP without the header
    local v999 = { method = "x", params = { _meta = { [PV] = "v999", [CAPS] = {} } } }
    local code, _, data = check(v999, "v999")
    assert.equal(-32022, code)
    assert.same({ "2026-07-28" }, data.supported)
    assert.equal("v999", data.requested)
    assert.equal(-32602, (check({ method = "x", params = { _meta = { [PV] = "2026-07-28" } } },
      false)))
    assert.equal(-32602, (check({ method = "x", params = { _meta = envelope({},
      { [LEVEL] = "loud" }) } }, false)))
    assert.is_true(modern.is_modern(ok))
    assert.is_false(modern.is_modern({ method = "initialize", params = {} }))
    assert.is_true(modern.is_modern({ method = "x", params = {} }, "2026-07-28"))
  end)

  it("answers server/discover and stamps every result", harness.task(function()
    local m = modern.new(server())
    local d = run(m, request(1, "server/discover"))[1].result
    assert.same({ "2026-07-28" }, d.supportedVersions)
    assert.same({ listChanged = true }, d.capabilities.tools)
    assert.is_true(d.capabilities.resources.subscribe)
    assert.same({}, d.capabilities.extensions[TASKS])
    assert.equal("complete", d.resultType)
    assert.same({ 0, "private" }, { d.ttlMs, d.cacheScope })
    assert.same({ name = "s", version = "2.0.0" }, d._meta[INFO])
    local list = run(m, request(2, "tools/list"))[1].result
    assert.equal("echo", list.tools[1].name)
    assert.same({ "complete", 0, "private" }, { list.resultType, list.ttlMs, list.cacheScope })
    local call = run(m, request(3, "tools/call", { name = "echo", arguments = { text = "x" } }))
    assert.same({ content = { { type = "text", text = "x" } }, resultType = "complete",
      _meta = { [INFO] = { name = "s", version = "2.0.0" } } }, call[1].result)
    assert.equal("complete", run(m, request(4, "tools/call", { name = "table" }))[1]
      .result.resultType)
    local read = run(m, request(5, "resources/read", { uri = "mem://a" }))[1].result
    assert.same({ 0, "private" }, { read.ttlMs, read.cacheScope })
    local hot = run(m, request(6, "resources/read", { uri = "mem://hot" }))[1].result
    assert.same({ 5000, "public" }, { hot.ttlMs, hot.cacheScope })
    local missing = run(m, request(7, "resources/read", { uri = "mem://nope" }))[1].error
    assert.same({ -32602, "mem://nope" }, { missing.code, missing.data.uri })
    m:close()
  end))

  it("gives the server's own caching hints to its lists", harness.task(function()
    local m = modern.new(server { cache = { ttl_ms = 60000, scope = "public" } })
    local list = run(m, request(1, "prompts/list"))[1].result
    assert.same({ 60000, "public" }, { list.ttlMs, list.cacheScope })
    m:close()
  end))

  it("does not know the legacy era's methods (-32601)", harness.task(function()
    local m = modern.new(server())
    for _, method in ipairs { "initialize", "ping", "logging/setLevel", "resources/subscribe",
      "resources/unsubscribe", "no/such" } do
      assert.equal(-32601, run(m, request(1, method))[1].error.code, method)
    end
    m:close()
  end))

  it("logs at the request's level, and nothing without one", harness.task(function()
    local m = modern.new(server())
    local quiet = run(m, request(1, "tools/call", { name = "logs" }))
    assert.equal(1, #quiet)
    local loud = run(m, request(2, "tools/call", { name = "logs" }, {}, { [LEVEL] = "info" }))
    assert.equal(2, #loud)
    assert.same({ "notifications/message", "error" }, { loud[1].method, loud[1].params.level })
    m:close()
  end))

  it("answers a tool that raised an rpc error with that error", harness.task(function()
    local m = modern.new(server())
    local e = run(m, request(1, "tools/call", { name = "broken" }))[1].error
    assert.same({ -32603, "it broke", { why = "x" } }, { e.code, e.message, e.data })
    m:close()
  end))

  it("turns ctx.elicit and ctx.sample into rounds of input_required", harness.task(function()
    local m = modern.new(server())
    local caps = { elicitation = {}, sampling = {} }
    local r1 = run(m, request(1, "tools/call", { name = "ask" }, caps))[1].result
    assert.equal("input_required", r1.resultType)
    assert.equal("elicit-1", (next(r1.inputRequests)))
    assert.is_nil(next(r1.inputRequests, "elicit-1"))
    assert.equal("elicitation/create", r1.inputRequests["elicit-1"].method)
    -- the retry answers the first: the second is asked, the state carries the first
    local r2 = run(m, request(2, "tools/call", { name = "ask", requestState = r1.requestState,
      inputResponses = { ["elicit-1"] = { action = "accept", content = { name = "Ada" } } } },
      caps))[1].result
    assert.equal("input_required", r2.resultType)
    assert.equal("sampling/createMessage", r2.inputRequests["sample-2"].method)
    assert.are_not.equal(r1.requestState, r2.requestState)
    local r3 = run(m, request(3, "tools/call", { name = "ask", requestState = r2.requestState,
      inputResponses = { ["sample-2"] = { role = "assistant",
        content = { type = "text", text = "Bo" } } } }, caps))[1].result
    assert.same({ "complete", "Ada and Bo" }, { r3.resultType, r3.content[1].text })
    -- a malformed answer is asked again; extra answers are ignored
    local again = run(m, request(4, "tools/call", { name = "ask",
      inputResponses = { ["elicit-1"] = 12345, other = { action = "accept" } } }, caps))[1]
    assert.equal("input_required", again.result.resultType)
    m:close()
  end))

  it("refuses a requestState it did not sign, or of another request", harness.task(function()
    local m = modern.new(server())
    local caps = { elicitation = {}, sampling = {}, roots = {} }
    local r1 = run(m, request(1, "tools/call", { name = "ask" }, caps))[1].result
    local tampered = run(m, request(2, "tools/call", { name = "ask",
      requestState = r1.requestState .. "x", inputResponses = {} }, caps))[1].error
    assert.same({ -32602, "invalid_request_state" }, { tampered.code, tampered.data.reason })
    local other = run(m, request(3, "tools/call", { name = "both",
      requestState = r1.requestState }, caps))[1].error
    assert.equal(-32602, other.code)
    local stranger = modern.new(server(), { state = state.new { key = string.rep("k", 32) } })
    local foreign = run(stranger, request(4, "tools/call", { name = "ask",
      requestState = r1.requestState }, caps))[1].error
    assert.equal(-32602, foreign.code)
    m:close()
    stranger:close()
  end))

  it("asks several things at once, and -32021 for what the client lacks", harness.task(function()
    local m = modern.new(server())
    local r1 = run(m, request(1, "tools/call", { name = "both" },
      { elicitation = {}, roots = {} }))[1].result
    assert.same({ "elicitation/create", "roots/list" }, { r1.inputRequests.a.method,
      r1.inputRequests.b.method })
    local done = run(m, request(2, "tools/call", { name = "both", inputResponses = {
      a = { action = "decline" }, b = { roots = { { uri = "file:///x" } } } } },
      { elicitation = {}, roots = {} }))[1].result
    assert.equal("decline 1", done.content[1].text)
    local lacks = run(m, request(3, "tools/call", { name = "both" }, { elicitation = {} }))
    assert.equal(-32021, lacks[1].error.code)
    assert.same({ roots = {} }, lacks[1].error.data.requiredCapabilities)
    m:close()
  end))

  it("hands the trace context of _meta to the tool", harness.task(function()
    local m = modern.new(server())
    local r = run(m, request(1, "tools/call", { name = "trace" }, {}, {
      traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      tracestate = "congo=t61rcWkgMzE" }))[1].result
    assert.equal("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 congo=t61rcWkgMzE "
      .. "modern", r.content[1].text)
    m:close()
  end))

  it("acknowledges a listen and sends it what it asked for, tagged", harness.task(function()
    local srv = server()
    local m = modern.new(srv)
    local out = recorder()
    m:handle(request("L", "subscriptions/listen", { notifications = {
      toolsListChanged = true, resourceSubscriptions = { "mem://a" } } }), out)
    assert.equal("notifications/subscriptions/acknowledged", out.sent[1].method)
    assert.same({ toolsListChanged = true, resourceSubscriptions = { "mem://a" } },
      out.sent[1].params.notifications)
    assert.equal("L", out.sent[1].params._meta[SUB])
    srv:add(claude.tool("new", function() return 1 end))
    srv:add(claude.prompt { name = "p2", get = function() return "x" end }) -- not asked for
    srv:resource_updated("mem://a")
    srv:resource_updated("mem://hot")
    assert.equal(3, #out.sent)
    assert.same({ "notifications/tools/list_changed", "L" }, { out.sent[2].method,
      out.sent[2].params._meta[SUB] })
    assert.same({ "notifications/resources/updated", "mem://a" }, { out.sent[3].method,
      out.sent[3].params.uri })
    -- a cancellation of the listen ends it
    m:handle({ jsonrpc = "2.0", method = "notifications/cancelled",
      params = { requestId = "L" } }, out)
    srv:add(claude.tool("newer", function() return 1 end))
    assert.equal(3, #out.sent)
    m:close()
  end))

  it("runs a call that waits as a task: tasks/get, tasks/cancel", harness.task(function()
    local m = modern.new(server())
    local caps = { extensions = { [TASKS] = {} }, elicitation = {} }
    local created = run(m, request(1, "tools/call", { name = "slow" }, caps))[1].result
    assert.equal("task", created.resultType)
    assert.matches("^%d%d%d%d%-%d%d%-%d%dT", created.createdAt)
    assert.is_nil(created.requestState)
    local got = run(m, request(2, "tasks/get", { taskId = created.taskId }, caps))[1].result
    assert.same({ "complete", "working" }, { got.resultType, got.status })
    claude.sleep(0.1)
    got = run(m, request(3, "tasks/get", { taskId = created.taskId }, caps))[1].result
    assert.same({ "completed", "slow done" }, { got.status, got.result.content[1].text })
    -- without the extension: no task, the call answers; tasks/* are refused (-32021)
    local plain = run(m, request(4, "tools/call", { name = "slow" }))
    claude.sleep(0.1)
    assert.equal("slow done", plain[1].result.content[1].text)
    assert.equal(-32021, run(m, request(5, "tasks/get", { taskId = created.taskId }))[1]
      .error.code)
    assert.equal(-32021, run(m, request(6, "tools/call", { name = "must" }))[1].error.code)
    assert.equal("quick", run(m, request(7, "tools/call", { name = "must" }, caps))[1]
      .result.content[1].text)
    assert.equal(-32602, run(m, request(8, "tasks/get", { taskId = "nope" }, caps))[1]
      .error.code)
    m:close()
  end))

  it("bounds the tasks of each client: its principal, else its address", harness.task(function()
    local m = modern.new(server(), { limits = { max_client_tasks = 1, max_tasks = 3 } })
    local caps = { extensions = { [TASKS] = {} }, elicitation = {} }
    local function call(id, client, auth)
      local out = recorder()
      out.client = client
      m:handle(request(id, "tools/call", { name = "confirm" }, caps), out, auth)
      return out.sent[1]
    end
    assert.equal("task", call(1, "10.0.0.1").result.resultType)
    local refused = call(2, "10.0.0.1")
    assert.same({ -32602, "max_client_tasks", 1 }, { refused.error.code,
      refused.error.data.bound, refused.error.data.max })
    assert.equal("task", call(3, "10.0.0.2").result.resultType)
    -- a principal is one client from any address; the server's bound is all of them
    local alice = { subject = "alice", issuer = "https://as.example" }
    assert.equal("task", call(4, "10.0.0.1", alice).result.resultType)
    assert.equal("max_client_tasks", call(5, "10.0.0.9", alice).error.data.bound)
    assert.equal("max_tasks", call(6, "10.0.0.3").error.data.bound)
    m:close()
  end))

  it("parks a task on its input until tasks/update brings it", harness.task(function()
    local m = modern.new(server())
    local caps = { extensions = { [TASKS] = {} }, elicitation = {} }
    local created = run(m, request(1, "tools/call", { name = "confirm" }, caps))[1].result
    local id = created.taskId
    local got = run(m, request(2, "tasks/get", { taskId = id }, caps))[1].result
    assert.equal("input_required", got.status)
    assert.equal("elicitation/create", got.inputRequests["elicit-1"].method)
    local ack = run(m, request(3, "tasks/update", { taskId = id,
      inputResponses = { ["elicit-1"] = { action = "accept" } } }, caps))[1].result
    assert.same({ "complete" }, { ack.resultType, ack.taskId })
    got = run(m, request(4, "tasks/get", { taskId = id }, caps))[1].result
    assert.same({ "completed", "confirmed accept" }, { got.status, got.result.content[1].text })
    -- another one, cancelled while it waits; cancel is idempotent
    local second = run(m, request(5, "tools/call", { name = "confirm" }, caps))[1].result
    run(m, request(6, "tasks/cancel", { taskId = second.taskId }, caps))
    local again = run(m, request(7, "tasks/cancel", { taskId = second.taskId }, caps))[1]
    assert.equal("complete", again.result.resultType)
    assert.equal("cancelled", run(m, request(8, "tasks/get", { taskId = second.taskId },
      caps))[1].result.status)
    m:close()
  end))
end)

describe("claude.mcp.server.state", function()
  it("seals and opens, bound to its request, with a shared key", function()
    local a = state.new { key = string.rep("s", 32) }
    local b = state.new { key = string.rep("s", 32) }
    local token = a:seal({ x = 1 }, "tools/call\0t")
    assert.same({ x = 1 }, b:open(token, "tools/call\0t"))
    assert.same({ nil, "for another request" }, { b:open(token, "tools/call\0u") })
    assert.same({ nil, "bad signature" }, { state.new():open(token, "tools/call\0t") })
    assert.same({ nil, "not a state" }, { a:open("v1.x", "tools/call\0t") })
    local short = state.new { key = string.rep("s", 32), ttl = 0.001 }
    local old = short:seal({}, "b")
    assert.is_nil(short:open(old:gsub("%.(%w)", ".%1", 1), "c"))
    assert.has_error(function() state.new { key = "short" } end,
      "bad field 'key' to 'new' (a key of at least 16 bytes expected, got 5)")
  end)
end)
