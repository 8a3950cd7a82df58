--- The batching exporter of finished spans: a bounded queue, emptied from the loop (a timer,
-- or a full batch) into OTLP/HTTP posts through libcurl, one at a time, each batch encoded
-- in one C call (core.otlp_encode: protobuf, or JSON) straight into one buffer. Ending a span
-- only queues it: the encoding and the post happen on a later turn of the loop, and a full
-- queue drops the span (counted) rather than wait.
-- @module claude.trace.export
local core = require "claude.core"
local async = require "claude.async"

local M = {}

local otlp_encode = core.otlp_encode

-- the body's media type, by `OTEL_EXPORTER_OTLP_PROTOCOL`'s value
local CONTENT_TYPE = { ["http/protobuf"] = "application/x-protobuf",
  ["http/json"] = "application/json" }
M.CONTENT_TYPE = CONTENT_TYPE

--- The OTLP `ExportTraceServiceRequest` of `spans` (finished spans) under `resource`
-- (attributes): protobuf when `protocol` is "http/protobuf", else OTLP/JSON.
-- @tparam table spans
-- @tparam table resource
-- @tparam[opt] string protocol
-- @treturn string
function M.encode(spans, resource, protocol)
  return otlp_encode(spans, resource, core.version, protocol == "http/protobuf")
end

--- A new exporter for the settings `c` (claude.trace.config): `push(span)`, `flush(timeout)`,
-- `stats()`.
function M.new(c)
  local queue, n = {}, 0
  local headers = { ["content-type"] = CONTENT_TYPE[c.protocol] }
  for k, v in pairs(c.headers) do headers[k] = v end
  local exported, dropped, failed = 0, 0, 0
  local posting = false -- one post at a time
  local timer = nil
  local flushed = { waiters = false } -- what flush waits on (async.wait_woken)
  local flushing = false -- a flush waits: every span queued goes now
  local export

  -- the timer holds the loop only while spans wait: a script's last spans still go
  local function arm(delay)
    if not timer then timer = core.timer() end
    timer:start(delay, function() export() end)
  end

  local function take()
    local batch = queue
    if n <= c.max_batch then -- (the usual case: the whole queue goes)
      queue, n = {}, 0
      return batch
    end
    batch = table.move(queue, 1, c.max_batch, 1, {})
    table.move(queue, c.max_batch + 1, n + c.max_batch, 1) -- (the nil slots past n clear the tail)
    n = n - c.max_batch
    return batch
  end

  local function done_one(ok, count, why)
    posting = false
    if ok then exported = exported + count else
      failed = failed + count
      io.stderr:write("claude: tracing: exporting ", tostring(count), " spans failed: ",
        tostring(why), "\n")
    end
    -- a full batch goes at once; fewer spans wait for the timer (one post for many), unless
    -- a flush waits for them
    if n >= c.max_batch or (n > 0 and flushing) then return export() end
    if n > 0 then return arm(c.schedule_delay) end
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
    local req, err = core.http_request { method = "POST", url = c.endpoint, headers = headers,
      body = M.encode(batch, c.resource, c.protocol), timeout = c.timeout,
      max_body = 1024 * 1024,
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
    flushing = true
    local ok = async.wait_woken(flushed, timeout or c.timeout)
    flushing = false
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
