-- claude.trace without a collector: W3C trace context, the OTEL_* settings, spans and their
-- parents, the OTLP encodings (JSON here; protobuf against protobufjs in
-- spec/e2e/trace_spec.lua), the bounded queue (an exporter function of the spec's), the
-- router's spans (a request as JSON text too, a router made before tracing turned on).
local trace = require "claude.trace"
local config = require "claude.trace.config"
local export = require "claude.trace.export"
local json = require "claude.json"
local async = require "claude.async"
local claude = require "claude"
local core = require "claude.core"

local function env(t) return function(k) return t[k] end end

describe("claude.trace", function()
  after_each(function() trace.shutdown(5) end)

  it("reads a traceparent", function()
    local id, span, sampled = trace.parse_traceparent(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert.same({ "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true },
      { id, span, sampled })
    assert.is_false(select(3, trace.parse_traceparent(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")))
    for _, bad in ipairs { "00-x", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", 7,
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01" } do
      assert.is_nil(trace.parse_traceparent(bad))
    end
  end)

  it("is off unless asked, and off records nothing", function()
    assert.is_false(config.wanted(env {}))
    assert.is_true(config.wanted(env { OTEL_TRACES_EXPORTER = "otlp" }))
    assert.is_true(config.wanted(env { OTEL_EXPORTER_OTLP_ENDPOINT = "http://c:4318" }))
    assert.is_false(config.wanted(env { OTEL_EXPORTER_OTLP_ENDPOINT = "http://c:4318",
      OTEL_TRACES_EXPORTER = "none" }))
    assert.is_false(config.wanted(env { OTEL_TRACES_EXPORTER = "otlp",
      OTEL_SDK_DISABLED = "true" }))
    assert.is_false(trace.enabled)
    assert.equal(trace.NOOP, trace.start("x"))
    assert.equal(3, trace.span("x", function() return 3 end))
    assert.is_nil(trace.context())
  end)

  it("resolves the exporter's settings from OTEL_* and enable's options", function()
    local c = assert(config.resolve({}, env { OTEL_EXPORTER_OTLP_ENDPOINT = "http://c:4318/",
      OTEL_EXPORTER_OTLP_HEADERS = "a=1,b=x%20y", OTEL_EXPORTER_OTLP_TRACES_HEADERS = "b=2",
      OTEL_RESOURCE_ATTRIBUTES = "deployment.environment=test,service.name=r",
      OTEL_SERVICE_NAME = "svc", OTEL_BSP_SCHEDULE_DELAY = "250" }))
    assert.equal("http://c:4318/v1/traces", c.endpoint)
    assert.same({ a = "1", b = "2" }, c.headers)
    assert.equal("svc", c.resource["service.name"])
    assert.equal("test", c.resource["deployment.environment"])
    assert.equal(0.25, c.schedule_delay)
    assert.equal("http://t/x", config.resolve({}, env {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "http://t/x" }).endpoint)
    assert.equal("http://localhost:4318/v1/traces", config.resolve({}, env {}).endpoint)
    assert.equal("unknown_service:claudelua", config.resolve({}, env {}).resource["service.name"])
    assert.same({ nil, "OTEL_SDK_DISABLED is true" },
      { config.resolve({}, env { OTEL_SDK_DISABLED = "TRUE" }) })
    assert.has_error(function() config.resolve({ nope = 1 }, env {}) end)
  end)

  it("nests spans, fails one that raises, and takes a remote parent", function()
    local got = {}
    assert(trace.enable { exporter = function(b)
      for _, s in ipairs(b) do got[#got + 1] = s end
    end })
    local ok = pcall(trace.span, "outer", function(outer)
      assert.equal(outer, trace.current())
      trace.span("inner", function(inner) inner:set("n", 1):event("e", { k = "v" }) end)
      error("boom")
    end)
    assert.is_false(ok)
    assert.is_nil(trace.current())
    local remote = trace.start("remote", { kind = "server",
      traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate = "k=v" })
    remote:finish()
    local unsampled = trace.start("unsampled",
      { traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" })
    unsampled:finish()
    assert(trace.flush(5))
    assert.same({ "inner", "outer", "remote" }, { got[1].name, got[2].name, got[3].name })
    assert.equal(got[2].span_id, got[1].parent_id)
    assert.equal("error", got[2].status)
    assert.equal("4bf92f3577b34da6a3ce929d0e0e4736", got[3].trace_id)
    assert.equal("00f067aa0ba902b7", got[3].parent_id)
    assert.equal("k=v", got[3].tracestate)
    assert.equal(3, #got) -- the unsampled one records nothing
    local doc = json.decode(export.encode(got, { ["service.name"] = "s" }))
    local spans = doc.resourceSpans[1].scopeSpans[1].spans
    assert.equal(2, spans[2].status.code)
    assert.equal(2, spans[3].kind)
    assert.same({ key = "n", value = { intValue = "1" } }, spans[1].attributes[1])
    assert.equal("e", spans[1].events[1].name)
    assert.truthy(tonumber(spans[1].startTimeUnixNano) <= tonumber(spans[1].endTimeUnixNano))
  end)

  it("keeps a task's span current across its waits", function()
    local got = {}
    assert(trace.enable { exporter = function(b)
      for _, s in ipairs(b) do got[#got + 1] = s end
    end })
    local t = async.spawn(function()
      return trace.span("task", function(span)
        async.sleep(0.01)
        assert.equal(span, trace.current())
        return trace.span("after", function() return 1 end)
      end)
    end)
    assert.is_nil(trace.current()) -- outside the task: not its span
    assert.equal(1, t:wait(10))
    assert(trace.flush(5))
    assert.equal("after", got[1].name)
    assert.equal(got[2].span_id, got[1].parent_id)
  end)

  it("takes the protocol from enable, OTEL_EXPORTER_OTLP_*_PROTOCOL, else http/protobuf", function()
    assert.equal("http/protobuf", config.resolve({}, env {}).protocol)
    assert.equal("http/json", config.resolve({}, env {
      OTEL_EXPORTER_OTLP_PROTOCOL = "http/json" }).protocol)
    assert.equal("http/protobuf", config.resolve({}, env {
      OTEL_EXPORTER_OTLP_PROTOCOL = "http/json",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = "http/protobuf" }).protocol)
    assert.equal("http/json", config.resolve({ protocol = "http/json" }, env {
      OTEL_EXPORTER_OTLP_PROTOCOL = "grpc" }).protocol)
    assert.has_error(function() config.resolve({ protocol = "grpc" }, env {}) end)
    -- grpc from the environment: http/protobuf, and one warning a process
    local real, said = io.stderr, {}
    io.stderr = { write = function(_, ...) said[#said + 1] = table.concat({ ... }) end } -- luacheck: ignore
    local ok, a, b = pcall(function()
      local grpc = env { OTEL_EXPORTER_OTLP_PROTOCOL = "grpc" }
      return config.protocol(nil, grpc), config.protocol(nil, grpc)
    end)
    io.stderr = real -- luacheck: ignore
    assert.same({ true, "http/protobuf", "http/protobuf" }, { ok, a, b })
    assert.equal(1, #said)
    assert.truthy(said[1]:find("grpc is not supported", 1, true))
  end)

  it("encodes a span whole as OTLP/JSON: ids, kind, flags, times, attributes, events, links",
    function()
    local span = { name = "s", kind = "client", trace_id = ("ab"):rep(16),
      span_id = ("cd"):rep(8), parent_id = ("ef"):rep(8), tracestate = "k=v", sampled = true,
      remote = true, start_time = 1796667616368224673, end_time = 1796667616368224999,
      status = "error", status_message = "bad \"x\"",
      attributes = { s = "é", i = -3, f = 1.5, b = false, l = { 1, "x", true }, n = 0 / 0 },
      events = { { name = "e", time = 7, attributes = { k = "v" } } },
      links = { { trace_id = ("12"):rep(16), span_id = ("34"):rep(8), tracestate = "a=b" } } }
    local doc = json.decode(export.encode({ span }, { ["service.name"] = "svc" }, "http/json"))
    local rs = doc.resourceSpans[1]
    assert.same({ key = "service.name", value = { stringValue = "svc" } },
      rs.resource.attributes[1])
    assert.same({ name = "claudelua", version = core.version }, rs.scopeSpans[1].scope)
    local s = rs.scopeSpans[1].spans[1]
    assert.same({ ("ab"):rep(16), ("cd"):rep(8), ("ef"):rep(8), "k=v", 3, 0x301 },
      { s.traceId, s.spanId, s.parentSpanId, s.traceState, s.kind, s.flags })
    assert.same({ "1796667616368224673", "1796667616368224999" },
      { s.startTimeUnixNano, s.endTimeUnixNano })
    assert.same({ code = 2, message = 'bad "x"' }, s.status)
    local attrs = {}
    for _, kv in ipairs(s.attributes) do attrs[kv.key] = kv.value end
    assert.same({ stringValue = "é" }, attrs.s)
    assert.same({ intValue = "-3" }, attrs.i)
    assert.same({ doubleValue = 1.5 }, attrs.f)
    assert.same({ boolValue = false }, attrs.b)
    assert.same({ doubleValue = "NaN" }, attrs.n)
    assert.same({ arrayValue = { values = { { intValue = "1" }, { stringValue = "x" },
      { boolValue = true } } } }, attrs.l)
    assert.same({ timeUnixNano = "7", name = "e",
      attributes = { { key = "k", value = { stringValue = "v" } } } }, s.events[1])
    assert.same({ ("12"):rep(16), ("34"):rep(8), "a=b" },
      { s.links[1].traceId, s.links[1].spanId, s.links[1].traceState })
    -- protobuf: bytes (its decoding is the e2e spec's, by protobufjs)
    local pb = export.encode({ span }, { ["service.name"] = "svc" }, "http/protobuf")
    assert.equal(0x0a, pb:byte(1)) -- field 1 (resource_spans), length-delimited
    assert.truthy(pb:find("svc", 1, true) and pb:find(("\xab"):rep(16), 1, true))
  end)

  it("gives ids from core.span_start: random hex, never zero, and the wall clock", function()
    local seen = {}
    for _ = 1, 200 do
      local span_id, now, trace_id = core.span_start(true)
      assert.truthy(span_id:match("^%x+$") and #span_id == 16 and span_id ~= ("0"):rep(16))
      assert.truthy(trace_id:match("^%x+$") and #trace_id == 32)
      assert.is_nil(seen[span_id])
      seen[span_id] = true
      assert.truthy(math.abs(now - core.unix_nanos()) < 60 * 1e9)
    end
    assert.equal(2, select("#", core.span_start(false)))
  end)

  it("traces a router made before tracing turned on, and requests sent as JSON text", function()
    local calc = claude.server("calc", {
      claude.tool("add", "Add", { a = "number", b = "number" }, function(a) return a.a + a.b end),
    })
    local router = require("claude.mcp.router").new({ calc = calc }, { transport = "pipe" })
    local got = {}
    assert(trace.enable { exporter = function(b)
      for _, s in ipairs(b) do got[#got + 1] = s end
    end })
    async.spawn(function()
      router:handle("calc", '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')
      router:handle("calc", { jsonrpc = "2.0", id = 2, method = "tools/call",
        params = { name = "add", arguments = { a = 1, b = 2 },
          _meta = { traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } } })
      trace.span("ambient", function()
        router:handle("calc", '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":'
          .. '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}')
      end)
    end):wait(10)
    assert(trace.flush(5))
    local by = {}
    for _, s in ipairs(got) do by[s.name] = s end
    assert.equal("server", by["tools/list"].kind)
    assert.equal("1", by["tools/list"].attributes["jsonrpc.request.id"])
    assert.equal("pipe", by["tools/list"].attributes["network.transport"])
    local call = by["tools/call add"]
    assert.equal("00f067aa0ba902b7", call.parent_id)
    assert.is_true(call.remote)
    assert.equal("pipe", call.attributes["network.transport"])
    -- a remote parent, and a link to the span that was current where it arrived
    local ping = by["ping"]
    assert.equal("00f067aa0ba902b7", ping.parent_id)
    assert.equal(by.ambient.span_id, ping.links[1].span_id)
  end)

  it("drops spans past the queue's bound rather than wait", function()
    local got = 0
    assert(trace.enable { max_queue = 3, max_batch = 100, schedule_delay = 60,
      exporter = function(b) got = got + #b end })
    for i = 1, 5 do trace.start("s" .. i):finish() end
    assert.same({ exported = 0, dropped = 2, failed = 0, queued = 3 }, trace.stats())
    assert(trace.flush(5))
    assert.equal(3, got)
    assert.equal(3, trace.stats().exported)
  end)
end)
