--- The event streams of the Streamable HTTP transport: one per POST answered with
-- `text/event-stream` and one standalone stream per session (the GET), each keeping the events
-- it sent so that a client that reconnects with `Last-Event-ID` gets the rest.
--
-- An event id is `<stream>-<seq>`: the stream's number in its session and the event's number
-- in the stream, so that the id alone says which stream to resume (the specification forbids
-- replaying another stream's events).
-- @module claude.mcp.server.events
local json = require "claude.json"

local M = {}

local encode, fmt, concat = json.encode, string.format, table.concat

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
function M.new(number, history, retry)
  return setmetatable({ number = number, seq = 0, first = 1, events = {}, history = history,
    retry = retry, res = nil }, Stream)
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

--- Attach a response that has not started: starts it as an event stream with `headers`,
-- sends the priming event (an id and empty data, with `retry`) when `prime`, then the events
-- after `after` (a replay).
-- @return true, or nil, err when the response is gone
function Stream:attach(res, headers, prime, after)
  local ok, err = res:start(200, headers)
  if not ok then return nil, err end
  self.res = res
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
  if #parts > 0 then return res:write(concat(parts)) ~= nil or nil end
  return true
end

--- Send one JSON-RPC message (a table) as an event; kept for replay. Written when a response
-- is attached.
function Stream:send(msg)
  local data = encode(msg)
  local seq = self.seq + 1
  self.seq = seq
  local events = self.events
  events[seq] = data
  if seq - self.first >= self.history then
    events[self.first] = nil
    self.first = self.first + 1
  end
  local res = self.res
  if res then
    if res:write(event_text(self, seq, data)) == nil then self.res = nil end
  end
  return true
end

--- Detach the response (it closed, or the stream ends).
-- @tparam[opt] boolean finish end the response's body cleanly
function Stream:detach(finish)
  local res = self.res
  self.res = nil
  if res and finish then res:finish() end
  return res
end

return M
