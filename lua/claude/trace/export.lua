--- The batching exporter of finished spans: a bounded queue, emptied from the loop (a timer,
-- or a full batch) into OTLP/HTTP JSON posts through libcurl, one at a time. Ending a span
-- only queues it: the encoding and the post happen on a later turn of the loop, and a full
-- queue drops the span (counted) rather than wait.
-- @module claude.trace.export
local core = require "claude.core"
local json = require "claude.json"
local async = require "claude.async"

local M = {}

local mtype = math.type

-- OTLP/JSON's AnyValue of a Lua value (a 64-bit integer travels as a decimal string)
local function any_value(v)
  local t = type(v)
  if t == "string" then return { stringValue = v } end
  if t == "boolean" then return { boolValue = v } end
  if t == "number" then
    if mtype(v) == "integer" then return { intValue = tostring(v) } end
    return { doubleValue = v }
  end
  if t == "table" then
    local values = json.array()
    for i = 1, #v do values[i] = any_value(v[i]) end
    return { arrayValue = { values = values } }
  end
  return { stringValue = tostring(v) }
end

local function key_values(attributes)
  local list, keys = json.array(), {}
  for k in pairs(attributes or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  for i = 1, #keys do
    list[i] = { key = keys[i], value = any_value(attributes[keys[i]]) }
  end
  return list
end
M.key_values = key_values

local KIND = { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 }

local function otlp_span(s)
  local o = { traceId = s.trace_id, spanId = s.span_id, name = s.name, kind = KIND[s.kind],
    startTimeUnixNano = tostring(s.start_time), endTimeUnixNano = tostring(s.end_time),
    attributes = key_values(s.attributes), parentSpanId = s.parent_id,
    traceState = s.tracestate, flags = 0x100 + (s.sampled and 1 or 0) }
  if s.status == "error" then
    o.status = { code = 2, message = s.status_message }
  else
    o.status = json.object()
  end
  if s.events then
    local events = json.array()
    for i, e in ipairs(s.events) do
      events[i] = { name = e.name, timeUnixNano = tostring(e.time),
        attributes = key_values(e.attributes) }
    end
    o.events = events
  end
  if s.links then
    local links = json.array()
    for i, l in ipairs(s.links) do
      links[i] = { traceId = l.trace_id, spanId = l.span_id, attributes = key_values(l.attributes) }
    end
    o.links = links
  end
  return o
end

--- The OTLP/JSON `ExportTraceServiceRequest` of `spans` (finished spans) under `resource`
-- (attributes).
-- @treturn string
function M.encode(spans, resource)
  local list = json.array()
  for i = 1, #spans do list[i] = otlp_span(spans[i]) end
  return json.encode { resourceSpans = { {
    resource = { attributes = key_values(resource) },
    scopeSpans = { { scope = { name = "claudelua", version = core.version }, spans = list } },
  } } }
end

--- A new exporter for the settings `c` (claude.trace.config): `push(span)`, `flush(timeout)`,
-- `stats()`.
function M.new(c)
  local queue, n = {}, 0
  local exported, dropped, failed = 0, 0, 0
  local posting = false -- one post at a time
  local timer = nil
  local flushed = { waiters = false } -- what flush waits on (async.wait_woken)
  local export

  -- the timer holds the loop only while spans wait: a script's last spans still go
  local function arm(delay)
    if not timer then timer = core.timer() end
    timer:start(delay, function() export() end)
  end

  local function take()
    local batch = {}
    local m = math.min(n, c.max_batch)
    for i = 1, m do batch[i] = queue[i] end
    table.move(queue, m + 1, n + m, 1) -- (the slots past n are nil: they clear the tail)
    n = n - m
    return batch
  end

  local function done_one(ok, count, why)
    posting = false
    if ok then exported = exported + count else
      failed = failed + count
      io.stderr:write("claude: tracing: exporting ", tostring(count), " spans failed: ",
        tostring(why), "\n")
    end
    if n > 0 then return export() end
    async.wake_all(flushed)
  end

  export = function()
    if posting or n == 0 then
      if n == 0 and not posting then async.wake_all(flushed) end
      return
    end
    if timer then timer:stop() end
    local batch = take()
    posting = true
    if c.exporter then -- a sink of the caller's (in a task of its own: it may wait)
      async.spawn(function()
        local ok, err = pcall(c.exporter, batch)
        done_one(ok, #batch, err)
      end)
      return
    end
    local headers = { ["content-type"] = "application/json" }
    for k, v in pairs(c.headers) do headers[k] = v end
    local req, err = core.http_request { method = "POST", url = c.endpoint, headers = headers,
      body = M.encode(batch, c.resource), timeout = c.timeout, max_body = 1024 * 1024,
      on_done = function(ok, resp, kind)
        if ok and resp.status >= 300 then
          ok, resp = false, "HTTP " .. tostring(resp.status) .. " " .. tostring(resp.body)
        elseif not ok then
          resp = tostring(resp) .. " (" .. tostring(kind) .. ")"
        end
        done_one(ok, #batch, resp)
      end }
    if not req then done_one(false, #batch, err) end
  end

  local self = {}

  function self.push(span)
    if n >= c.max_queue then
      dropped = dropped + 1
      return
    end
    n = n + 1
    queue[n] = span
    if posting then return end
    if n >= c.max_batch then core.defer(export) elseif n == 1 then arm(c.schedule_delay) end
  end

  function self.flush(timeout)
    if n == 0 and not posting then return true end
    core.defer(export)
    local ok = async.wait_woken(flushed, timeout or c.timeout)
    if not ok then return nil, "the spans were not all sent in time" end
    return true
  end

  -- its timer closed once the queue is sent (or `timeout` is over)
  function self.close(timeout)
    local ok, err = self.flush(timeout)
    if timer then
      timer:close()
      timer = nil
    end
    return ok, err
  end

  function self.stats()
    return { exported = exported, dropped = dropped, failed = failed, queued = n }
  end

  return self
end

return M
