--- The outbound requests of a peer that wait for their answer: their callbacks and methods,
-- by id.
--
-- A plain table keyed by ever-new ids, each removed when its answer comes, is the obvious
-- map and a slow one under load: Lua sizes a table to its live keys when it rehashes, so
-- with N requests in flight and N a power of two the table is exactly full after every
-- rehash, each new id collides, and each insert rehashes the whole table again (at 64 in
-- flight, two rehashes per call were a third of an MCP client's call). Requests are
-- numbered in order, so they live in a ring in Lua's array part, at their number modulo
-- its size: no hashing, no rehash. A request still waiting when the ring comes round to
-- its slot again moves to a hash of its own; the ring doubles when that hash holds many.
-- @module claude.pending
local M = {}

local INITIAL_SIZE = 64
local math_type = math.type

local Pending = {}
Pending.__index = Pending
Pending.__name = "claude.Pending"

local function falses(n)
  local t = {}
  for i = 1, n do t[i] = false end
  return t
end

--- An empty set. `seq_of(id)` gives the number an id that is not an integer was made from,
-- or nil for an id none of ours can be; an integer id is its own number.
function M.new(seq_of)
  local size = INITIAL_SIZE
  return setmetatable({ seq_of = seq_of, size = size, ring_ids = falses(size),
    ring_callbacks = falses(size), ring_methods = falses(size),
    old_callbacks = {}, old_methods = {}, old_count = 0, count = 0 }, Pending)
end

-- The number of `id`, or nil.
local function seq(self, id)
  if math_type(id) == "integer" then return id end
  local seq_of = self.seq_of
  return seq_of and seq_of(id)
end

local grow

--- Adds request `id`, made from number `n` (the peer's count of requests).
function Pending:add(id, n, callback, method)
  local slot = n % self.size + 1
  local ids, callbacks, methods = self.ring_ids, self.ring_callbacks, self.ring_methods
  local held = ids[slot]
  if held ~= false then -- a request one lap older still waits: to the hash with it
    self.old_callbacks[held], self.old_methods[held] = callbacks[slot], methods[slot]
    local old_count = self.old_count + 1
    self.old_count = old_count
    if old_count > self.size // 2 then
      ids[slot], callbacks[slot], methods[slot] = id, callback, method
      self.count = self.count + 1
      return grow(self)
    end
  end
  ids[slot], callbacks[slot], methods[slot] = id, callback, method
  self.count = self.count + 1
end

-- Doubles the ring and places every request again.
grow = function(self)
  local entries = {}
  local ids, callbacks, methods = self.ring_ids, self.ring_callbacks, self.ring_methods
  for slot = 1, self.size do
    if ids[slot] ~= false then
      entries[#entries + 1] = { ids[slot], callbacks[slot], methods[slot] }
    end
  end
  for id, callback in pairs(self.old_callbacks) do
    entries[#entries + 1] = { id, callback, self.old_methods[id] }
  end
  local size = self.size * 2
  self.size, self.ring_ids, self.ring_callbacks, self.ring_methods = size, falses(size),
    falses(size), falses(size)
  self.old_callbacks, self.old_methods, self.old_count, self.count = {}, {}, 0, 0
  for _, e in ipairs(entries) do self:add(e[1], seq(self, e[1]) or 0, e[2], e[3]) end
end

--- The callback and method of request `id`, or nil when it does not wait.
function Pending:get(id)
  local n = seq(self, id)
  if n then
    local slot = n % self.size + 1
    if self.ring_ids[slot] == id then
      return self.ring_callbacks[slot], self.ring_methods[slot]
    end
  end
  return self.old_callbacks[id], self.old_methods[id]
end

--- Removes request `id`; returns its callback and method, or nil when it did not wait.
function Pending:take(id)
  local n = id -- seq(self, id), inlined: this runs once per answer
  if math_type(n) ~= "integer" then n = seq(self, id) end
  if n then
    local slot = n % self.size + 1
    local ids = self.ring_ids
    if ids[slot] == id then
      local callbacks, methods = self.ring_callbacks, self.ring_methods
      local callback, method = callbacks[slot], methods[slot]
      ids[slot], callbacks[slot], methods[slot] = false, false, false
      self.count = self.count - 1
      return callback, method
    end
  end
  local callback = self.old_callbacks[id]
  if callback == nil then return nil end
  local method = self.old_methods[id]
  self.old_callbacks[id], self.old_methods[id] = nil, nil
  self.old_count, self.count = self.old_count - 1, self.count - 1
  return callback, method
end

--- The ids of the requests that wait.
function Pending:ids()
  local list = {}
  local ids = self.ring_ids
  for slot = 1, self.size do
    if ids[slot] ~= false then list[#list + 1] = ids[slot] end
  end
  for id in pairs(self.old_callbacks) do list[#list + 1] = id end
  return list
end

--- The number of requests that wait.
function Pending:waiting()
  return self.count
end

-- For the peer's hot paths: the functions, without the method lookup.
M.add, M.take = Pending.add, Pending.take

return M
