local claude = require "claude"
local json = require "claude.json"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
local call_mod = require "claude.mcp.call"
local tool = require "claude.mcp.tool"
local router = require "claude.mcp.router"
local mw = require "claude.mcp.middleware"
local harness = require "support.harness"

local function call(id, name, args)
  return { jsonrpc = "2.0", id = id, method = "tools/call",
    params = { name = name, arguments = args or {} } }
end

local function req(id, method, params)
  return { jsonrpc = "2.0", id = id, method = method, params = params or {} }
end

local function text_of(response)
  return response.result.content[1].text
end

local add = tool.tool("add", "Add two numbers", { a = "number", b = "number" },
  function(args) return args.a + args.b end)

-- a router over one server "s" of `items` with `middleware`
local function serve(middleware, items, opts)
  opts = opts or {}
  opts.middleware = middleware
  return router.new { s = tool.server("s", items or { add }, opts) }
end

-- handle_async, waiting for its answer (auth: the request's principal)
local function ask(r, message, auth)
  return claude.async.await(function(done)
    r:handle_async("s", message, function(_, response, id)
      if id ~= nil then
        if type(response) == "string" then response = content.text_result(response) end
        response = { jsonrpc = "2.0", id = id, result = response }
      end
      done(response)
    end, nil, auth)
  end)
end

local function ask1(r, message, auth)
  local _, response = ask(r, message, auth)
  return response
end

describe("middleware", function()
  before_each(harness.before)
  after_each(harness.after)

  describe("order", function()
    it("runs the first declared outermost, in and out", harness.task(function()
      local log = {}
      local function named(name)
        return function(_, _, next)
          log[#log + 1] = name .. " in"
          local r, err = next()
          log[#log + 1] = name .. " out"
          return r, err
        end
      end
      local r = serve { named("a"), { request = named("b"), call = named("c"),
        ["tools/call"] = named("d") }, named("e") }
      assert.equal("3", text_of(ask1(r, call(1, "add", { a = 1, b = 2 }))))
      assert.same({ "a in", "b in", "c in", "d in", "e in", "e out", "d out", "c out",
        "b out", "a out" }, log)
    end))

    it("wraps only the kinds a table names", harness.task(function()
      local seen = {}
      local r = serve({ { list = function(q, _, next)
        seen[#seen + 1] = q.method
        return next()
      end } }, { add, tool.prompt { name = "p", get = function() return "hi" end } })
      ask1(r, call(1, "add", { a = 1, b = 1 }))
      ask1(r, req(2, "tools/list"))
      ask1(r, req(3, "prompts/list"))
      ask1(r, req(4, "prompts/get", { name = "p" }))
      assert.same({ "tools/list", "prompts/list" }, seen)
    end))

    it("sees the request and its ctx", harness.task(function()
      local got
      local r = serve { function(q, ctx, next)
        got = { method = q.method, id = q.id, name = q.params.name, a = q.params.arguments.a,
          era = ctx.era, server = ctx.server, principal = ctx.principal,
          traceparent = ctx.traceparent }
        return next()
      end }
      local m = call(7, "add", { a = 1, b = 2 })
      m.params._meta = { traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }
      ask1(r, m, setmetatable({ subject = "alice", issuer = "https://as" }, {}))
      assert.same({ method = "tools/call", id = 7, name = "add", a = 1, era = "legacy",
        server = "s", principal = "https://as\nsub:alice",
        traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }, got)
    end))
  end)

  describe("answers", function()
    it("may answer itself: the tool does not run", harness.task(function()
      local ran = false
      local r = serve({ { call = function() return "from the middleware" end } },
        { tool.tool("t", function() ran = true end) })
      assert.equal("from the middleware", text_of(ask1(r, call(1, "t"))))
      assert.is_false(ran)
    end))

    it("may change the request and the result", harness.task(function()
      local r = serve { { call = function(q, _, next)
        q.params.arguments.b = 40
        local result = next(q)
        result.content[1].text = result.content[1].text .. "!"
        return result
      end } }
      assert.equal("42!", text_of(ask1(r, call(1, "add", { a = 2, b = 0 }))))
    end))

    it("may hand next a new request", harness.task(function()
      local r = serve { function(q, _, next)
        return next { method = q.method, id = q.id, params = { name = "add",
          arguments = { a = 5, b = 5 } } }
      end }
      assert.equal("10", text_of(ask1(r, call(1, "nothing-by-this-name"))))
    end))

    it("wraps lists, reads and prompts", harness.task(function()
      local motd = tool.resource { uri = "mem://motd", name = "motd", text = "Hello" }
      local p = tool.prompt { name = "p", get = function() return "hi" end }
      local r = serve({ {
        list = function(_, _, next)
          local result = next()
          result.tools = json.array() -- hides every tool
          return result
        end,
        read = function(_, _, next)
          local result = next()
          result.contents[1].text = result.contents[1].text:upper()
          return result
        end,
        get = function() return { messages = json.array() } end,
      } }, { add, motd, p })
      assert.equal(0, #ask1(r, req(1, "tools/list")).result.tools)
      assert.equal("HELLO", ask1(r, req(2, "resources/read", { uri = "mem://motd" }))
        .result.contents[1].text)
      assert.equal(0, #ask1(r, req(3, "prompts/get", { name = "p" })).result.messages)
    end))

    it("goes with the call record's way too (router.route)", harness.task(function()
      local r = serve { { call = function(_, _, next)
        local result = next()
        result.content[1].text = "routed " .. result.content[1].text
        return result
      end } }
      local _, result = claude.async.await(function(done)
        local rec = call_mod.new { [call_mod.SERVER] = "s", [call_mod.REPLY] = function(_, res, id)
          done(res, id)
        end }
        call_mod.fill(rec, 3, "add", { a = 1, b = 1 })
        r.route(rec)
      end)
      assert.equal("routed 2", result.content[1].text)
    end))

    it("is added by server:use, after the others", harness.task(function()
      local s = tool.server("s", { add })
      local r = router.new { s = s }
      assert.equal("2", text_of(ask1(r, call(1, "add", { a = 1, b = 1 }))))
      s:use(function(_, _, next)
        local result = next()
        result.content[1].text = "used " .. result.content[1].text
        return result
      end)
      assert.equal("used 2", text_of(ask1(r, call(2, "add", { a = 1, b = 1 }))))
    end))
  end)

  describe("errors", function()
    it("answers a JSON-RPC error a middleware returns or raises", harness.task(function()
      local r = serve { { call = function(q)
        local e = errors.new("rpc", "Forbidden", { code = -32001, data = { why = "x" } })
        if q.id == 1 then return nil, e end
        error(e)
      end } }
      for id = 1, 2 do
        local response = ask1(r, call(id, "add", { a = 1, b = 1 }))
        assert.same({ code = -32001, message = "Forbidden", data = { why = "x" } },
          response.error)
        assert.equal(id, response.id)
      end
    end))

    it("answers an internal error for a plain error(), and goes on", harness.task(function()
      local r = serve { { call = function() error("boom") end } }
      local response
      local stderr = io.stderr
      rawset(io, "stderr", { write = function(self) return self end })
      response = ask1(r, call(1, "add", { a = 1, b = 1 }))
      rawset(io, "stderr", stderr)
      assert.equal(-32603, response.error.code)
      assert.truthy(response.error.message:find("^Internal error: .*boom"))
      assert.equal(1, response.id)
    end))

    it("may answer a tool error result", harness.task(function()
      local r = serve { { call = function() return content.error("denied") end } }
      local result = ask1(r, call(1, "add", { a = 1, b = 1 })).result
      assert.is_true(result.isError)
      assert.equal("denied", result.content[1].text)
    end))

    it("sees the inner failures as nil, err", harness.task(function()
      local seen = {}
      local rpc = tool.tool("rpc", function()
        error(errors.new("rpc", "no such thing", { code = -32602 }))
      end)
      local r = serve({ function(_, _, next)
        local result, err = next()
        seen[#seen + 1] = result and "result" or err.code
        return result, err
      end, { call = function(q, _, next)
        if q.params.name == "inner-boom" then
          rawset(io, "stderr", { write = function(self) return self end })
          error("inner")
        end
        return next()
      end } }, { rpc })
      local stderr = io.stderr
      assert.equal(-32602, ask1(r, call(1, "rpc")).error.code)
      assert.equal(-32602, ask1(r, call(2, "nope")).error.code) -- no such tool
      assert.equal(-32603, ask1(r, call(3, "inner-boom")).error.code)
      rawset(io, "stderr", stderr)
      assert.same({ -32602, -32602, -32603 }, seen)
    end))

    it("answers an error for a middleware that returns nothing", harness.task(function()
      local r = serve { function() end }
      local response = ask1(r, req(1, "tools/list"))
      assert.equal(-32603, response.error.code)
    end))

    it("refuses what is no middleware", function()
      assert.has_error(function() tool.server("s", {}, { middleware = { 42 } }) end,
        "bad field 'middleware[1]' to 'server' (a function or a table of functions "
        .. "expected, got number)")
      assert.has_error(function()
        tool.server("s", {}, { middleware = { { calls = function() end } } })
      end)
      assert.has_error(function() tool.server("s"):use({}) end)
      assert.is_nil(tool.server("s", {}, { middleware = {} }).middleware)
    end)
  end)

  describe("waits", function()
    it("may wait, the call in flight until it ends", harness.task(function()
      local r = serve { function(_, _, next)
        claude.sleep(0.01)
        return next()
      end }
      local t = claude.async.spawn(function() return ask1(r, call(1, "add", { a = 1, b = 2 })) end)
      assert.equal(1, r:pending())
      local _, response = t:join(30)
      assert.equal("3", text_of(response))
      assert.equal(0, r:pending())
    end))

    it("is cancelled with its request", harness.task(function()
      local r = serve { function(_, _, next)
        claude.sleep(30)
        return next()
      end }
      local t = claude.async.spawn(function() return ask1(r, call(1, "add", { a = 1, b = 2 })) end)
      r:handle_async("s", { jsonrpc = "2.0", method = "notifications/cancelled",
        params = { requestId = 1, reason = "enough" } }, function() end)
      local _, response = t:join(30)
      assert.is_true(response.result.isError)
      assert.equal("cancelled: enough", text_of(response))
    end))

    it("runs under the called tool's budget", harness.task(function()
      local r = serve({ function()
        local x = 0
        while true do x = x + 1 end
      end }, { add }, { budget = { instructions = 200000 } })
      local response = ask1(r, call(1, "add", { a = 1, b = 2 }))
      assert.is_true(response.result.isError)
      assert.truthy(text_of(response):find("budget"))
    end))
  end)

  describe("in the modern era", function()
    local modern = require "claude.mcp.server.modern"
    local era = require "claude.mcp.era"
    local function request(id, method, params, caps)
      params = params or {}
      params._meta = { [era.META.protocol_version] = "2026-07-28",
        [era.META.client_capabilities] = caps or {} }
      return { jsonrpc = "2.0", id = id, method = method, params = params }
    end
    local function run(m, msg)
      local sent = {}
      m:handle(msg, { own_ids = true, send = function(_, x)
        sent[#sent + 1] = json.decode(json.encode(x))
        return true
      end })
      return sent
    end
    local function mark(_, _, next)
      local result, err = next()
      if result and result.content then
        result.content[1].text = result.content[1].text .. " (mw)"
      end
      return result, err
    end

    it("wraps a call that goes on as a task", harness.task(function()
      local s = tool.server("s", { tool.tool("slow", function()
        claude.sleep(0.05)
        return "slow done"
      end, { task = true }) }, { middleware = { { call = mark } } })
      local m = modern.new(s)
      local caps = { extensions = { ["io.modelcontextprotocol/tasks"] = {} } }
      local created = run(m, request(1, "tools/call", { name = "slow" }, caps))[1].result
      assert.equal("task", created.resultType)
      local got
      for _ = 1, 100 do
        claude.sleep(0.05)
        got = run(m, request(2, "tasks/get", { taskId = created.taskId }, caps))[1].result
        if got.status ~= "working" then break end
      end
      assert.same({ "completed", "slow done (mw)" }, { got.status, got.result.content[1].text })
      m:close()
    end))

    it("may ask the client itself: input_required, then the retry", harness.task(function()
      local s = tool.server("s", { add }, { middleware = { { call = function(_, ctx, next)
        local r = ctx.elicit { message = "sure?", requestedSchema = { type = "object" } }
        if r.action ~= "accept" then return content.error("declined") end
        return next()
      end }, { call = mark } } })
      local m = modern.new(s)
      local caps = { elicitation = {} }
      local first = run(m, request(1, "tools/call", { name = "add",
        arguments = { a = 1, b = 2 } }, caps))[1].result
      assert.equal("input_required", first.resultType)
      local second = run(m, request(2, "tools/call", { name = "add", arguments = { a = 1, b = 2 },
        requestState = first.requestState,
        inputResponses = { ["elicit-1"] = { action = "accept", content = {} } } }, caps))[1]
      assert.same({ "complete", "3 (mw)" }, { second.result.resultType,
        second.result.content[1].text })
      m:close()
    end))
  end)

  describe("log", function()
    it("writes a line per request", harness.task(function()
      local lines, entries = {}, {}
      local r = serve { mw.log { write = function(line, entry)
        lines[#lines + 1] = line
        entries[#entries + 1] = entry
      end } }
      ask1(r, call(1, "add", { a = 1, b = 2 }), { subject = "alice" })
      ask1(r, call(2, "nope"))
      assert.truthy(lines[1]:find("^claude: mcp s tools/call add by alice [%d.]+ ms ok$"))
      assert.truthy(lines[2]:find("^claude: mcp s tools/call nope [%d.]+ ms error %-32602 "))
      assert.equal("ok", entries[1].outcome)
      assert.equal("add", entries[1].name)
      assert.equal("error", entries[2].outcome)
      assert.equal(-32602, entries[2].code)
      assert.equal("number", type(entries[1].seconds))
    end))
  end)

  describe("rate_limit", function()
    it("refuses past the burst, with the wait", harness.task(function()
      local r = serve { mw.rate_limit { rate = 0.001, burst = 2 } }
      assert.equal("3", text_of(ask1(r, call(1, "add", { a = 1, b = 2 }))))
      assert.equal("3", text_of(ask1(r, call(2, "add", { a = 1, b = 2 }))))
      local response = ask1(r, call(3, "add", { a = 1, b = 2 }))
      assert.equal(-32000, response.error.code)
      assert.truthy(response.error.message:find("^Rate limit exceeded: retry in"))
      assert.truthy(response.error.data.retryAfterMs > 900000)
      -- another principal has a bucket of its own
      assert.equal("3", text_of(ask1(r, call(4, "add", { a = 1, b = 2 }), { subject = "bob" })))
    end))

    it("answers calls with a tool error when asked", harness.task(function()
      local r = serve { mw.rate_limit { rate = 0.001, burst = 1, on = "call",
        tool_error = true } }
      ask1(r, call(1, "add", { a = 1, b = 2 }))
      local result = ask1(r, call(2, "add", { a = 1, b = 2 })).result
      assert.is_true(result.isError)
      assert.truthy(ask1(r, req(3, "tools/list")).result.tools)
    end))

    it("checks its options", function()
      assert.has_error(function() mw.rate_limit {} end,
        "bad field 'rate' to 'rate_limit' (number expected, got nil)")
      assert.has_error(function() mw.rate_limit { rate = 1, on = "calls" } end)
    end)
  end)

  describe("cache", function()
    local reads
    local function counting(uri, cache)
      return tool.resource { uri = uri, name = uri, cache = cache, read = function()
        reads = reads + 1
        return "read " .. reads
      end }
    end
    before_each(function() reads = 0 end)

    local function read(r, id, uri, auth)
      return ask1(r, req(id, "resources/read", { uri = uri }), auth).result.contents[1].text
    end

    it("keeps a read as long as its hint says, per principal", harness.task(function()
      local r = serve({ mw.cache() }, { counting("mem://a", { ttl_ms = 60000 }),
        counting("mem://b", { ttl_ms = 60000, scope = "public" }), counting("mem://c") })
      assert.equal("read 1", read(r, 1, "mem://a"))
      assert.equal("read 1", read(r, 2, "mem://a"))
      assert.equal("read 2", read(r, 3, "mem://a", { subject = "bob" })) -- private
      assert.equal("read 3", read(r, 4, "mem://b"))
      assert.equal("read 3", read(r, 5, "mem://b", { subject = "bob" })) -- public
      assert.equal("read 4", read(r, 6, "mem://c")) -- ttl 0: never kept
      assert.equal("read 5", read(r, 7, "mem://c"))
    end))

    it("forgets a read its resource updated, and a list that changed", harness.task(function()
      local s = tool.server("s", { counting("mem://a") }, { cache = { ttl_ms = 60000 },
        subscribe = true, middleware = { mw.cache() } })
      local r = router.new { s = s }
      assert.equal("read 1", read(r, 1, "mem://a"))
      assert.equal("read 1", read(r, 2, "mem://a"))
      s:resource_updated("mem://a")
      assert.equal("read 2", read(r, 3, "mem://a"))
      assert.equal(1, #ask1(r, req(4, "resources/list")).result.resources)
      s:add(counting("mem://z"))
      assert.equal(2, #ask1(r, req(5, "resources/list")).result.resources)
    end))

    it("keeps nothing of a retry with answers", harness.task(function()
      local r = serve({ mw.cache() }, { counting("mem://a", { ttl_ms = 60000 }) })
      local m = req(1, "resources/read", { uri = "mem://a", inputResponses = {} })
      ask1(r, m)
      ask1(r, m)
      assert.equal(2, reads)
    end))

    it("says in the modern era what is left of the hint", harness.task(function()
      local r = serve({ mw.cache() }, { counting("mem://a", { ttl_ms = 60000 }) })
      local modern = { era = "modern" }
      local function modern_read(id)
        return claude.async.await(function(done)
          r:handle_async("s", req(id, "resources/read", { uri = "mem://a" }),
            function(_, response) done(response) end, nil, nil, modern)
        end)
      end
      local _, first = modern_read(1)
      assert.equal(60000, first.result.ttlMs)
      claude.sleep(0.02)
      local _, second = modern_read(2)
      assert.equal(1, reads)
      assert.truthy(second.result.ttlMs < 60000 and second.result.ttlMs > 50000)
      assert.equal("private", second.result.cacheScope)
    end))
  end)
end)
