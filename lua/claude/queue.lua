--- A FIFO that tasks (or plain code) can wait on.
-- `push` never blocks; `pop` waits for a value, the queue's end, or a
-- timeout. Closing the queue lets waiting and later pops drain what is left
-- and then see the end (or the error given to `close`).
-- @module claude.queue
local async = require "claude.async"

local M = {}
local Queue = {}
Queue.__index = Queue
Queue.__name = "claude.Queue"

--- Makes an empty queue.
function M.new()
  return setmetatable({ head = 1, tail = 0, items = {}, waiters = {}, wfirst = 1, wlast = 0 },
    Queue)
end

--- Appends a value (not nil) and wakes the first waiter.
function Queue:push(v)
  if self.closed then return false end
  local w = self.waiters
  local first = self.wfirst
  while first <= self.wlast do
    local done = w[first]
    w[first] = nil
    first = first + 1
    if done then -- false marks a waiter that gave up
      self.wfirst = first
      done(v)
      return true
    end
  end
  self.wfirst = first
  local tail = self.tail + 1
  self.tail = tail
  self.items[tail] = v
  return true
end

--- Number of values waiting to be popped.
function Queue:size()
  return self.tail - self.head + 1
end

--- Takes the next value, waiting at most `timeout` seconds (nil: forever).
-- @return the value; or nil, err at the end (err is the close reason, nil
--   for a clean end) or on timeout
function Queue:pop(timeout)
  local head = self.head
  if head <= self.tail then
    local v = self.items[head]
    self.items[head] = nil
    self.head = head + 1
    return v
  end
  if self.closed then return nil, self.close_error end
  local ok, v = async.await(function(done)
    local last = self.wlast + 1
    self.wlast = last
    self.waiters[last] = done
    return function() self.waiters[last] = false end -- timed out or cancelled
  end, timeout)
  if not ok then return nil, v end
  if v == nil then return nil, self.close_error end
  return v
end

--- Ends the queue: values already queued can still be popped, then pops
-- return nil, err.
function Queue:close(err)
  if self.closed then return end
  self.closed = true
  self.close_error = err
  local w = self.waiters
  for i = self.wfirst, self.wlast do
    local done = w[i]
    w[i] = nil
    if done then done(nil) end
  end
  self.wfirst, self.wlast = 1, 0
end

M.Queue = Queue
return M
