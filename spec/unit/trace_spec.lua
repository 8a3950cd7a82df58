-- claude.trace without a collector: W3C trace context, the OTEL_* settings, spans and their
-- parents, the OTLP/JSON encoding, the bounded queue (an exporter function of the spec's).
local trace = require "claude.trace"
local config = require "claude.trace.config"
local export = require "claude.trace.export"
local json = require "claude.json"
local async = require "claude.async"

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
