-- In-process MCP tools with the real claude CLI and the scripted Messages API.
local claude = require "claude"
local e2e = require "support.e2e"
local harness = require "support.harness"

local text = e2e.text
local use = e2e.use

-- Runs one query to its end; returns the messages.
local function run(prompt, options)
  return harness.collect(claude.query(prompt, options))
end

local function last_result(messages)
  return harness.last_of(messages, "result")
end

describe("in-process tools with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("read and change the script's live state", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__store__put", { key = "color", value = "blue" }) } },
      { content = { use("mcp__store__get", { key = "color" }) } },
      { content = { text("stored: {{last_tool_result}}") } },
    } }
    local store = { writes = 0 }
    local server = claude.server("store", {
      claude.tool("put", "Store a value", { key = "string", value = "string" }, function(args)
        store[args.key] = args.value
        store.writes = store.writes + 1
        return "ok"
      end),
      claude.tool("get", "Read a value", { key = "string" }, function(args)
        return store[args.key]
      end),
    })
    local messages = run("remember blue", mock:options {
      mcp_servers = { store = server }, allowed_tools = server:tool_names() })
    assert.equal("blue", store.color)
    assert.equal(1, store.writes)
    assert.equal("stored: blue", last_result(messages).result)
  end)

  it("send 15 + 27 to the model as 42", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 15, b = 27 }) } },
      { content = { text("{{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local messages = run("15 + 27?", mock:options {
      mcp_servers = { calc = calc }, allowed_tools = { "mcp__calc__add" } })
    assert.equal("42", last_result(messages).result)
  end)

  it("report a tool's error and a raised error to the model, and go on", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__divide", { a = 1, b = 0 }) } },
      { content = { use("mcp__calc__crash", {}) } },
      { content = { use("mcp__calc__divide", { a = 8, b = "two" }) } },
      { content = { text("done: {{last_tool_result}}") } },
      { content = { text("second turn works") } },
    } }
    local calc = claude.server("calc", {
      claude.tool("divide", "Divide", { a = "number", b = "number" }, function(args)
        if args.b == 0 then return nil, "division by zero" end
        return args.a / args.b
      end),
      claude.tool("crash", "Always fails", {}, function() error("the tool broke") end),
    })
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { calc = calc }, allowed_tools = calc:tool_names(),
      stderr = function() end }))
    s:send("divide")
    local messages = {}
    for msg in s:receive(60) do messages[#messages + 1] = msg end
    local results = mock:tool_results()
    assert.equal(3, #results)
    assert.is_true(results[1].is_error)
    assert.matches("division by zero", results[1].text)
    assert.is_true(results[2].is_error)
    assert.matches("the tool broke", results[2].text)
    assert.is_nil(results[2].text:find("stack traceback", 1, true))
    assert.is_true(results[3].is_error)
    assert.matches("b: expected number, got string", results[3].text)
    assert.matches("^done: ERROR: ", last_result(messages).result)
    s:send("again")
    for msg in s:receive(60) do messages[#messages + 1] = msg end
    assert.equal("second turn works", last_result(messages).result)
  end)

  it("tell a tool it was cancelled when the turn is interrupted", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__slow__wait", {}) } },
      { content = { text("after") } },
    } }
    local seen = {}
    local started = claude.queue.new()
    local slow = claude.server("slow", {
      claude.tool("wait", "Waits a long time", {}, function(_, ctx)
        local _ <close> = setmetatable({}, { __close = function() seen.closed = true end })
        started:push(true)
        local ok = pcall(claude.sleep, 30)
        seen.cancelled = ctx.cancelled
        seen.sleep_ended_early = not ok
        return "finished"
      end),
    })
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { slow = slow }, allowed_tools = slow:tool_names() }))
    s:send("wait")
    assert.is_true(started:pop(30))
    assert.truthy(s:interrupt(30))
    local result
    for msg in s:receive(30) do if msg.type == "result" then result = msg end end
    assert.equal("error_during_execution", result.subtype)
    for _ = 1, 100 do
      if seen.closed then break end
      claude.sleep(0.02)
    end
    assert.is_true(seen.cancelled)
    assert.is_true(seen.sleep_ended_early)
    assert.is_true(seen.closed)
  end)

  it("run read-only calls side by side", function()
    local calls = {}
    for i = 1, 10 do calls[i] = use("mcp__clock__nap", { n = i }) end
    local mock <close> = e2e.start { turns = {
      { content = calls },
      { content = { text("napped") } },
    } }
    -- Each call waits until all ten have started (or 20 s, which only a
    -- serial runner would reach): no timing decides the outcome.
    local log, started, all_started = {}, 0, require("claude.async").event()
    local clock = claude.server("clock", {
      claude.tool { name = "nap", description = "Waits for its siblings",
        input_schema = { n = "integer" }, annotations = { read_only = true },
        execute = function(args)
          log[#log + 1] = "start"
          started = started + 1
          if started == 10 then all_started:set() end
          all_started:wait(20)
          log[#log + 1] = "end"
          return args.n
        end },
    })
    local messages = run("nap", mock:options {
      mcp_servers = { clock = clock }, allowed_tools = clock:tool_names() })
    assert.equal("napped", last_result(messages).result)
    assert.equal(20, #log)
    -- every call had started before the first one finished
    local first_end
    for i, what in ipairs(log) do
      if what == "end" then first_end = i break end
    end
    assert.equal(11, first_end)
  end)

  it("serve two in-process servers and an external stdio server in one session", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("mcp__calc__add", { a = 2, b = 3 }) } },
      { content = { use("mcp__text__upper", { s = "lua" }) } },
      { content = { use("mcp__everything__echo", { message = "hi" }) } },
      { content = { text("{{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local textsrv = claude.server("text", {
      claude.tool("upper", "Upper-case", { s = "string" }, function(a) return a.s:upper() end),
    })
    local everything = harness.root .. "/node_modules/.bin/mcp-server-everything"
    local allowed = { "mcp__calc__add", "mcp__text__upper", "mcp__everything__echo" }
    local messages = run("go", mock:options {
      mcp_servers = { calc = calc, text = textsrv,
        everything = { type = "stdio", command = everything, args = { "stdio" } } },
      allowed_tools = allowed })
    assert.same({ calc = "connected", text = "connected", everything = "connected" },
      e2e.server_status(messages))
    local results = mock:tool_results()
    assert.equal("5", results[1].text)
    assert.equal("LUA", results[2].text)
    assert.equal("Echo: hi", last_result(messages).result)
  end)

  it("serve resources and resource templates to the CLI's MCP resource tools", function()
    local mock <close> = e2e.start { turns = {
      { content = { use("ListMcpResourcesTool", { server = "notes" }) } },
      { content = { use("ReadMcpResourceTool", { server = "notes", uri = "users://7/profile" }) } },
      { content = { text("done") } },
    } }
    local reads = {}
    local notes = claude.server("notes", {
      claude.resource { uri = "mem://notes", name = "notes", mime_type = "text/plain",
        text = "buy milk" },
      claude.resource_template { uri_template = "users://{id}/profile", name = "profile",
        read = function(_, params)
          reads[#reads + 1] = params.id
          return "profile of " .. params.id
        end },
    })
    run("go", mock:options { mcp_servers = { notes = notes },
      allowed_tools = { "ListMcpResourcesTool", "ReadMcpResourceTool" } })
    local results = mock:tool_results()
    assert.equal(2, #results)
    assert.is_false(results[1].is_error)
    local listed = claude.json.decode(results[1].text)
    assert.equal("mem://notes", listed[1].uri)
    assert.equal("text/plain", listed[1].mimeType)
    assert.is_false(results[2].is_error)
    local read = claude.json.decode(results[2].text)
    assert.equal("profile of 7", read.contents[1].text)
    assert.same({ "7" }, reads)
  end)

  it("pick up a tool added while the session runs", function()
    local mock <close> = e2e.start { turns = {
      { content = { text("first") } },
      { content = { use("mcp__calc__mul", { a = 6, b = 7 }) } },
      { content = { text("{{last_tool_result}}") } },
    } }
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local s <close> = assert(claude.connect(mock:options {
      mcp_servers = { calc = calc }, allowed_tools = { "mcp__calc__add", "mcp__calc__mul" } }))
    s:send("one")
    for _ in s:receive(60) do end
    calc:add(claude.tool("mul", "Multiply", { a = "number", b = "number" },
      function(a) return a.a * a.b end))
    assert.truthy(s:refresh_server("calc", 30))
    s:send("two")
    local result
    for msg in s:receive(60) do if msg.type == "result" then result = msg end end
    assert.equal("42", result.result)
    local requests = mock:requests()
    local tools = table.concat(requests[#requests].tools, " ")
    assert.matches("mcp__calc__mul", tools)
  end)
end)
