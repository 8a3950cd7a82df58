--- OpenTelemetry traces: spans, their W3C trace context, and the current span.
--
--     local trace = require "claude.trace"    -- or claude.trace
--     trace.enable { service_name = "hotel" } -- or the OTEL_* variables
--     trace.span("lookup", function(span)
--       span:set("hotel.city", "Lyon")
--     end)
--
-- Off unless `enable` is called or the environment asks for it (`OTEL_TRACES_EXPORTER=otlp`,
-- or an OTLP endpoint variable; `OTEL_SDK_DISABLED=true` wins): off, `span` hands back one
-- shared span that records nothing and the MCP router, client and session keep their plain
-- paths. On, finished spans go to the batching exporter (claude.trace.export), which posts
-- them as OTLP/HTTP JSON from the loop, never from the code that ended them.
--
-- The current span is kept per task (a coroutine) and outside tasks: `span(name, fn)` makes
-- its span current while `fn` runs, and the MCP router makes a call's span current in the
-- tool's task.
-- @module claude.trace
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local misuse = errors.misuse
local unix_nanos, span_start = core.unix_nanos, core.span_start
local running = coroutine.running
local fmt = string.format

--- Whether spans are recorded (read it, do not set it: `enable`, `disable`).
M.enabled = false

local exporter = nil -- claude.trace.export's, once enabled
local installers = {} -- what instrumented modules do when tracing turns on

-- the current span: by coroutine (a task's), and outside any task
local current_of = setmetatable({}, { __mode = "k" })
local main_current = nil
-- a span handed to the code that runs before a task's first wait (the router's call: its
-- task is known only once it waits)
local pending = nil

-- W3C trace context ------------------------------------------------------------------------

local ZERO_TRACE, ZERO_SPAN = string.rep("0", 32), string.rep("0", 16)

--- The parts of a `traceparent` header (W3C Trace Context, version 00 and later versions
-- read as 00): trace id, parent span id, and whether it is sampled; nil when it is not one.
-- @tparam string tp
-- @treturn string trace id (32 hex digits)
-- @treturn string span id (16 hex digits)
-- @treturn boolean sampled
function M.parse_traceparent(tp)
  if type(tp) ~= "string" then return nil end
  local version, trace_id, span_id, flags =
    tp:match("^(%x%x)%-(%x+)%-(%x+)%-(%x%x)")
  if not version or version == "ff" or #trace_id ~= 32 or #span_id ~= 16 then return nil end
  if version == "00" and #tp ~= 55 then return nil end
  trace_id, span_id = trace_id:lower(), span_id:lower()
  if trace_id == ZERO_TRACE or span_id == ZERO_SPAN then return nil end
  return trace_id, span_id, tonumber(flags, 16) % 2 == 1
end

-- Spans ---------------------------------------------------------------------------------------

local Span = { __name = "claude.trace.Span" }
Span.__index = Span

function Span:__tostring()
  return fmt("claude.trace.Span (%s %s/%s)", self.name, self.trace_id, self.span_id)
end

--- The span's `traceparent` (W3C), for a request that carries it on.
function Span:traceparent()
  return "00-" .. self.trace_id .. "-" .. self.span_id .. (self.sampled and "-01" or "-00")
end

--- Sets attribute `key` (a string, a number, a boolean, or a list of one of them); a nil
-- value is left out. Returns the span.
function Span:set(key, value)
  if value ~= nil and self.recording then self.attributes[key] = value end
  return self
end

--- Adds an event (`name`, attributes) at this moment. Returns the span.
function Span:event(name, attributes)
  if self.recording then
    local events = self.events or {}
    self.events = events
    events[#events + 1] = { name = tostring(name), time = unix_nanos(), attributes = attributes }
  end
  return self
end

--- Marks the span failed with `message` (its status ERROR; `error.type` set to `kind` when
-- given, as the conventions ask). Returns the span.
function Span:fail(message, kind)
  if self.recording then
    self.status, self.status_message = "error", message ~= nil and tostring(message) or nil
    if kind ~= nil then self.attributes["error.type"] = tostring(kind) end
  end
  return self
end

--- Ends the span (once; later calls do nothing) and hands it to the exporter.
function Span:finish()
  if self.end_time then return self end
  self.end_time = unix_nanos()
  local co = self.co
  if co then
    if current_of[co] == self then current_of[co] = self.previous or nil end
    self.co = nil
  end
  if self.recording and exporter then exporter.push(self) end
  return self
end
Span.__close = function(self) self:finish() end

-- the span of everything while tracing is off, or that a parent's flags leave out
local NOOP = setmetatable({ name = "", trace_id = ZERO_TRACE, span_id = ZERO_SPAN,
  sampled = false, recording = false, attributes = {} }, Span)
function NOOP.finish() return NOOP end
M.NOOP = NOOP

-- the metatable of a call's options that hold only a trace context (claude.trace.mcp's, for
-- claude.mcp.client.call's usual call)
M._CONTEXT = { __name = "claude.trace.Context" }

local KINDS = { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 }
M.KINDS = KINDS

--- The current span: the running task's, else the one outside tasks; nil when none.
function M.current()
  local co = running()
  return current_of[co] or pending or main_current
end

--- Makes `span` current in the running task (or outside tasks) until it finishes, or until
-- `set_current` is called again; returns the span that was current.
function M.set_current(span)
  local co, main = running()
  local previous
  if main then
    previous, main_current = main_current, span
  else
    previous = current_of[co]
    current_of[co] = span
    if span then span.co, span.previous = co, previous end
  end
  return previous
end

-- (the router: its call's span, current before the task is known, then in the task)
function M._pending(span)
  local previous = pending
  pending = span
  return previous
end
function M._adopt(span, co)
  span.co, span.previous = co, current_of[co]
  current_of[co] = span
end

-- The one maker of spans: `start` (its options checked) and the MCP paths, which hand over
-- their attributes table (made whole by one constructor: the span keeps it). A remote
-- parent (`tp`, `ts`: the W3C header values) wins over `parent` (a span; nil: the current
-- one; false: none). The ids and the start time come from one C call (core.span_start).
local function open(name, kind, parent, tp, ts, attributes, links)
  local trace_id, parent_id, sampled, remote
  if tp then trace_id, parent_id, sampled = M.parse_traceparent(tp) end
  if trace_id then
    remote = true
  else
    ts = nil
    if parent == nil then parent = M.current() end
    if parent and parent ~= NOOP then
      trace_id, parent_id, sampled, ts = parent.trace_id, parent.span_id, parent.sampled,
        parent.tracestate
    end
  end
  local span_id, now, new_trace = span_start(trace_id == nil)
  if not trace_id then trace_id, sampled = new_trace, true end
  return setmetatable({ name = name, kind = kind, trace_id = trace_id, span_id = span_id,
    parent_id = parent_id, sampled = sampled, remote = remote, recording = sampled,
    tracestate = type(ts) == "string" and ts or nil, start_time = now,
    attributes = attributes or {}, links = links }, Span)
end
M._open = open

local START_OPTIONS = { kind = true, parent = true, attributes = true, traceparent = true,
  tracestate = true, links = true }

--- A new span, started now. `opts`: `kind` ("internal" (default), "server", "client",
-- "producer", "consumer"), `parent` (a span; default the current one; false for a root),
-- `traceparent` and `tracestate` (a remote parent, W3C: they win over `parent`),
-- `attributes` (a table), `links` (a list of `{ trace_id, span_id, attributes }`). Off, or
-- under a parent that is not sampled, it records nothing.
-- @tparam string name
-- @tparam[opt] table opts
-- @treturn claude.trace.Span
function M.start(name, opts)
  if type(name) ~= "string" then
    misuse("bad argument #1 to 'start' (string expected, got %s)", errors.typename(name))
  end
  if opts ~= nil then
    errors.check(opts, 2, "start", "table")
    errors.check_fields(opts, START_OPTIONS, "start")
  end
  if not M.enabled then return NOOP end
  if opts == nil then return open(name, "internal") end
  local kind = opts.kind or "internal"
  if not KINDS[kind] then
    errors.bad_field("kind", "start", "one of internal, server, client, producer, consumer "
      .. "expected, got %s", tostring(kind))
  end
  local attributes = {}
  local given = opts.attributes
  if given then for k, v in pairs(given) do attributes[k] = v end end
  local tp = opts.traceparent
  return open(name, kind, opts.parent, type(tp) == "string" and tp or nil, opts.tracestate,
    attributes, opts.links)
end

--- `span(name, fn)` or `span(name, opts, fn)`: runs `fn(span)` inside a new span (current
-- while `fn` runs, failed when `fn` raises, finished when it returns) and returns what `fn`
-- returns. `span(name [, opts])` without `fn` is `start`.
-- @tparam string name
-- @param[opt] opts as `start`'s
-- @tparam[opt] function fn
function M.span(name, opts, fn)
  if type(opts) == "function" then opts, fn = nil, opts end
  if fn == nil then return M.start(name, opts) end
  if type(fn) ~= "function" then
    misuse("bad argument #3 to 'span' (function expected, got %s)", errors.typename(fn))
  end
  local span = M.start(name, opts)
  if span == NOOP then return fn(span) end
  local previous = M.set_current(span)
  local co, main = running()
  local r = table.pack(pcall(fn, span))
  if main then main_current = previous elseif current_of[co] == span then
    current_of[co] = previous
  end
  if not r[1] then
    local e = r[2]
    span:fail(type(e) == "string" and e or tostring(e), errors.is(e) and e.kind or "error")
    span:finish()
    error(e, 0)
  end
  span:finish()
  return table.unpack(r, 2, r.n)
end

--- The current trace context, W3C: `traceparent`, `tracestate` (nil outside any span), to
-- hand to a request the caller makes itself.
-- @treturn string|nil
-- @treturn string|nil
function M.context()
  local span = M.current()
  if not span or span == NOOP then return nil end
  return span:traceparent(), span.tracestate
end

-- Turning it on -------------------------------------------------------------------------------

--- Runs `fn()` when tracing turns on (now, when it is on): how an instrumented module puts
-- its traced paths in front of its plain ones.
-- @tparam function fn
function M.instrument(fn)
  installers[#installers + 1] = fn
  if M.enabled then fn() end
end

--- Turns tracing on. `opts` (all optional) override the environment's `OTEL_*` settings:
-- `endpoint` (the traces URL), `headers`, `service_name`, `resource` (attributes),
-- `timeout`, `schedule_delay`, `max_queue`, `max_batch` (seconds and counts), `exporter`
-- (a function given each batch of finished spans instead of OTLP: tests, a custom sink),
-- `cli` (true: the sessions' CLIs export their own spans to the same place).
-- Returns true, or nil and why when the environment disables it (`OTEL_SDK_DISABLED`).
function M.enable(opts)
  if opts ~= nil then errors.check(opts, 1, "enable", "table") end
  local config = require("claude.trace.config")
  local c, err = config.resolve(opts or {}, os.getenv)
  if not c then return nil, err, "disabled" end
  exporter = require("claude.trace.export").new(c)
  M.config = c
  if not M.enabled then
    M.enabled = true
    for i = 1, #installers do installers[i]() end
  end
  return true
end

--- Sends what is queued now and waits for it (at most `timeout` seconds, default the
-- exporter's timeout). Returns true, or nil and why.
function M.flush(timeout)
  if not exporter then return true end
  return exporter.flush(timeout)
end

--- What the exporter has done: `{ exported, dropped, failed, queued }` span counts.
function M.stats()
  if not exporter then return { exported = 0, dropped = 0, failed = 0, queued = 0 } end
  return exporter.stats()
end

--- Sends what is queued (at most `timeout` seconds), then turns tracing off and lets go
-- of the exporter's timer: a script or a test that ends its tracing. Returns as `flush`.
function M.shutdown(timeout)
  M.enabled = false
  local e = exporter
  if not e then return true end
  exporter = nil
  M.config = nil
  return e.close(timeout)
end

--- Turns tracing off for spans started from now on (what is queued is still sent; the
-- paths already instrumented stay, recording nothing).
function M.disable()
  M.enabled = false
end

-- the environment may turn it on (read once, when the first instrumented module loads us)
if require("claude.trace.config").wanted(os.getenv) then
  local ok, err = M.enable()
  if not ok and err then io.stderr:write("claude: tracing: ", tostring(err), "\n") end
end

return M
