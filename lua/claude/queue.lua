--- A FIFO that tasks (or plain code) can wait on.
-- `push` never blocks; `pop` waits for a value, the queue's end, or a
-- timeout. Closing the queue lets waiting and later pops drain what is left
-- and then see the end (or the error given to `close`).
-- @module claude.queue
local async = require "claude.async"
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}
local wake -- below: hands queued values to waiting consumers
local Queue = {}
Queue.__index = Queue
Queue.__name = "claude.Queue"

function Queue:__tostring()
  return string.format("claude.Queue (%d queued%s)", self.tail - self.head + 1,
    self.closed and ", closed" or "")
end

--- Makes an empty queue.
function M.new()
  local self = setmetatable({ head = 1, tail = 0, items = {}, waiters = {}, wfirst = 1,
    wlast = 0 }, Queue)
  self.wake = function() wake(self) end
  return self
end

-- Hands queued values to waiting consumers.
function wake(self)
  self.scheduled = false
  local w, items = self.waiters, self.items
  local first, head = self.wfirst, self.head
  while first <= self.wlast and head <= self.tail do
    local done = w[first]
    w[first] = nil
    first = first + 1
    if done then -- false marks a waiter that gave up
      local v = items[head]
      items[head] = nil
      head = head + 1
      self.wfirst, self.head = first, head
      done(v)
      first, head = self.wfirst, self.head
    end
  end
  self.wfirst, self.head = first, head
end

--- Appends a value (not nil). A waiting consumer is woken once the loop has
-- handled this turn's I/O, so a burst of values (many messages in one read)
-- costs it one wake-up, not one per value.
function Queue:push(v)
  if v == nil then return errors.blame("bad argument #1 to 'push' (a value expected, got nil)") end
  if self.closed then return false end
  local tail = self.tail + 1
  self.tail = tail
  self.items[tail] = v
  if self.wfirst <= self.wlast and not self.scheduled then
    self.scheduled = true
    core.defer(self.wake)
  end
  return true
end

--- Number of values waiting to be popped.
function Queue:size()
  return self.tail - self.head + 1
end

-- nil at a clean end; nil, err, kind otherwise.
local function ended(err)
  if err == nil then return nil end
  return nil, err, errors.is(err) and err.kind or nil
end

--- Takes the next value, waiting at most `timeout` seconds (nil: forever).
-- @return the value; nil at a clean end; or nil, err, kind at an end with an error (the
--   close reason; kind is its `kind` when it is a claude error) or on timeout
function Queue:pop(timeout)
  local head = self.head
  if head <= self.tail then
    local v = self.items[head]
    self.items[head] = nil
    self.head = head + 1
    return v
  end
  if self.closed then return ended(self.close_error) end
  local ok, v = async.await(function(done)
    local last = self.wlast + 1
    self.wlast = last
    self.waiters[last] = done
    return function() self.waiters[last] = false end -- timed out or cancelled
  end, timeout)
  if not ok then return ended(v) end
  if v == nil then return ended(self.close_error) end
  return v
end

--- Ends the queue: values already queued can still be popped, then pops
-- return nil, err.
function Queue:close(err)
  if self.closed then return end
  self.closed = true
  self.close_error = err
  wake(self) -- values not handed out yet go first
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
