--- The event streams of the Streamable HTTP transport: one per POST answered with
-- `text/event-stream` and one standalone stream per session (the GET), each keeping the events
-- it sent so that a client that reconnects with `Last-Event-ID` gets the rest.
--
-- An event id is `<stream>-<seq>`: the stream's number in its session and the event's number
-- in the stream, so that the id alone says which stream to resume (the specification forbids
-- replaying another stream's events).
--
-- What a stream keeps is bounded twice: `history` events, and the bytes of its session (a
-- `keep` account shared by the session's streams: `{bytes =, max =, over = function(keep,
-- stream)}`, called when a send puts the session over `max`; it drops what the session can do
-- without, see claude.mcp.server.http). A stream whose response has more queued than its high
-- water mark is `full`: `M.backpressure` makes the task that writes to it wait until the client
-- took it (or left).
-- @module claude.mcp.server.events
local json = require "claude.json"
local async = require "claude.async"

local M = {}

local encode, fmt, concat = json.encode, string.format, table.concat
local current, isyieldable = async.current, coroutine.isyieldable
local wait_woken, wake_all = async.wait_woken, async.wake_all

local Stream = { __name = "claude.mcp.SseStream" }
Stream.__index = Stream
Stream.__tostring = function(s)
  return fmt("claude.mcp.SseStream (%d, %d events, %s)", s.number, s.seq,
    s.res and "attached" or "detached")
end

--- Make a stream.
-- @tparam integer number the stream's number in its session (0: the standalone stream)
-- @tparam integer history how many events are kept for replay
-- @tparam[opt] integer retry milliseconds the client should wait before reconnecting
-- @tparam[opt] table keep the session's account of bytes kept (see the top)
function M.new(number, history, retry, keep)
  return setmetatable({ number = number, seq = 0, first = 1, events = {}, bytes = 0,
    history = history, retry = retry, keep = keep, res = nil, full = false }, Stream)
end

--- Parse a `Last-Event-ID`.
-- @treturn integer|nil the stream's number
-- @treturn integer the event's number
function M.parse_id(id)
  local s, n = string.match(id or "", "^(%d+)%-(%d+)$")
  if not s then return nil end
  return math.tointeger(tonumber(s)), math.tointeger(tonumber(n))
end

local function event_text(self, seq, data)
  return fmt("id: %d-%d\nevent: message\ndata: %s\n\n", self.number, seq, data)
end

---------------------------------------------------------------------------------------------
-- Back pressure
---------------------------------------------------------------------------------------------

-- Wakes what waits for `holder`'s response to drain.
local function wake(holder)
  holder.full = false
  wake_all(holder)
end
M.wake = wake

--- `res:write` returned false (more than its high water mark waits): `holder` (a stream, or
-- a modern exchange) is `full` until `res.on_drain`; a task that may wait waits for it here,
-- so that a tool writing faster than its client reads (logs, progress) goes at the client's
-- pace instead of queueing. Outside a task (a callback of the loop) nothing waits: the
-- transport's `max_queued` bounds that queue. `M.wake(holder)` ends the wait (the response
-- closed).
-- @tparam table holder
-- @param res the response written to
function M.backpressure(holder, res)
  holder.full = true
  if not holder.drain_set then
    holder.drain_set = true
    res.on_drain = function() wake(holder) end
  end
  if not (current() and isyieldable()) then return end
  wait_woken(holder)
end

---------------------------------------------------------------------------------------------
-- The stream
---------------------------------------------------------------------------------------------

--- Attach a response that has not started: starts it as an event stream with `headers`,
-- sends the priming event (an id and empty data, with `retry`) when `prime`, then the events
-- after `after` (a replay).
-- @return true, or nil, err when the response is gone
function Stream:attach(res, headers, prime, after)
  local ok, err = res:start(200, headers)
  if not ok then return nil, err end
  self.res, self.full, self.drain_set = res, false, false
  local parts = {}
  if prime then
    -- the priming event takes a number of its own, so that resuming from it replays all
    self.seq = self.seq + 1
    local first = fmt("id: %d-%d\n", self.number, self.seq)
    if self.retry then first = first .. fmt("retry: %d\n", self.retry) end
    parts[1] = first .. "data: \n\n"
  end
  if after then
    local events = self.events
    for seq = math.max(after + 1, self.first), self.seq do
      local e = events[seq]
      if e then parts[#parts + 1] = event_text(self, seq, e) end
    end
  end
  if #parts > 0 then
    local w = res:write(concat(parts))
    if w == nil then
      self.res = nil
      return nil
    end
    if w == false then self.full = true end
  end
  return true
end

-- Forgets the events from the oldest kept up to `upto` (included); returns the bytes freed.
local function drop_upto(self, upto)
  local events, freed = self.events, 0
  for seq = self.first, upto do
    local e = events[seq]
    if e then
      freed = freed + #e
      events[seq] = nil
    end
  end
  if upto >= self.first then self.first = upto + 1 end
  self.bytes = self.bytes - freed
  local keep = self.keep
  if keep then keep.bytes = keep.bytes - freed end
  return freed
end

--- Forget the oldest events until at least `want` bytes are freed (or none is left).
-- @tparam integer want
-- @treturn integer the bytes freed
function Stream:trim(want)
  local events, freed, seq = self.events, 0, self.first
  while freed < want and seq <= self.seq do
    local e = events[seq]
    if e then freed = freed + #e end
    seq = seq + 1
  end
  return drop_upto(self, seq - 1)
end

--- Forget every event kept (the stream cannot be resumed any more).
-- @treturn integer the bytes freed
function Stream:forget()
  return drop_upto(self, self.seq)
end

--- Send one JSON-RPC message (a table) as an event; kept for replay. Written when a response
-- is attached. `self.full` says afterwards whether the response's queue is over its high water
-- mark (`M.backpressure`).
function Stream:send(msg)
  return self:send_text(encode(msg))
end

--- `send`, of a message given as its JSON text.
-- @tparam string data
function Stream:send_text(data)
  local seq = self.seq + 1
  self.seq = seq
  local events, n = self.events, #data
  events[seq] = data
  self.bytes = self.bytes + n
  local keep = self.keep
  if seq - self.first >= self.history then drop_upto(self, self.first) end
  if keep then
    local total = keep.bytes + n
    keep.bytes = total
    if total > keep.max then keep:over(self) end
  end
  local res = self.res
  if res then
    local w = res:write(event_text(self, seq, data))
    if w == nil then
      self:detach()
    elseif w == false then
      self.full = true
    end
  end
  return true
end

--- Detach the response (it closed, or the stream ends); a task waiting for it to drain goes
-- on.
-- @tparam[opt] boolean finish end the response's body cleanly
function Stream:detach(finish)
  local res = self.res
  self.res = nil
  if self.full or self.waiters then wake(self) end
  if res and finish then res:finish() end
  return res
end

return M
