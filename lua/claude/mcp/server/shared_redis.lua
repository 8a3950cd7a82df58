--- The Redis store of claude.mcp.server.shared: the records of the tasks every replica runs,
-- and the event bus of their listens. Per endpoint (`scope`), under the prefix
-- `claudelua:<endpoint>:`:
--
-- * `task:<id>`: a hash, `status` and `doc` (the task's DetailedTask as JSON, with its
--   `principal` and `node`), expiring `task_ttl` after the task was created (Redis TTL);
-- * `running`: the set of the ids of the tasks not ended; `lease:<id>`: a key the replica
--   running the task renews every third of the lease. A replica that finds a lease gone
--   (every third of a lease, after a lease of its own connection) ends the task `failed`;
--   the replica that ran it, back from a stall, finds it so (the event, or its renewal
--   finding the lease gone) and stops the task too;
-- * channel `events`: the events of each replica (a task's status, a list changed, a
--   resource updated), each replica's listens filtering them as their own;
-- * channel `node:<node>`: what other replicas ask of a replica's task (`tasks/update`,
--   `tasks/cancel`) and the replica's acknowledgements, once the change is saved.
--
-- A record is written by a script that leaves an ended task ended, so a replica that comes
-- back after its lease lapsed cannot undo the `failed` another wrote.
-- @module claude.mcp.server.shared_redis
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local redis = require "claude.mcp.server.redis"

local M = {}

local encode, decode, fmt, type = json.encode, json.decode, string.format, type

--- Seconds of a task's lease by default: it fails at most 1.5 leases after its replica died.
M.LEASE = 15

--- Seconds another replica waits for the acknowledgement of a forwarded update or cancel.
M.FORWARD_TIMEOUT = 5

local TERMINAL = { completed = true, failed = true, cancelled = true }

-- KEYS: task, running, lease; ARGV: doc, status, ttl ms (0: none), id, node, lease ms
local SAVE = [[
local cur = redis.call('HGET', KEYS[1], 'status')
if cur == 'completed' or cur == 'failed' or cur == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'doc', ARGV[1])
if not cur and ARGV[3] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
if ARGV[2] == 'completed' or ARGV[2] == 'failed' or ARGV[2] == 'cancelled' then
  redis.call('SREM', KEYS[2], ARGV[4])
  redis.call('DEL', KEYS[3])
else
  redis.call('SADD', KEYS[2], ARGV[4])
  redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[6])
end
return 1
]]

-- KEYS: running; ARGV: the lease keys' prefix. The ids whose lease lapsed, taken out of the
-- set (one replica takes each).
local SWEEP = [[
local dead = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. id) == 0 then
    redis.call('SREM', KEYS[1], id)
    dead[#dead + 1] = id
  end
end
return dead
]]

-- ARGV: the prefix, the node, the lease (ms), then our running tasks' ids. Each lease is
-- renewed if it is still there; for each that lapsed, its id and its record's status ('' for
-- none) come back.
local RENEW = [[
local lapsed = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if not redis.call('SET', ARGV[1] .. 'lease:' .. id, ARGV[2], 'PX', ARGV[3], 'XX') then
    lapsed[#lapsed + 1] = id
    lapsed[#lapsed + 1] = redis.call('HGET', ARGV[1] .. 'task:' .. id, 'status') or ''
  end
end
return lapsed
]]

local Store = { __name = "claude.mcp.SharedRedis", remote = true }
Store.__index = Store

local function iso(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", t) end

-- Writes a record, its view's JSON `doc` (terminal ones stay as they are); `cb` optional.
local function save(self, id, doc, status, ttl_ms, cb)
  return self.client:send({ "EVAL", SAVE, 3, self.prefix .. "task:" .. id,
    self.prefix .. "running", self.prefix .. "lease:" .. id, doc, status,
    ttl_ms == math.huge and 0 or math.floor(ttl_ms), id, self.node,
    math.floor(self.lease * 1000) }, cb)
end

-- Publishes an event whose JSON, without its opening brace, is `rest`: `from` goes first, so
-- that a replica knows its own events by their first bytes, without decoding them.
local function send_event(self, rest)
  self.client:send({ "PUBLISH", self.prefix .. "events", self._from .. rest })
end

--- A task of ours was made or changed.
-- @param rec its record (claude.mcp.server.tasks)
-- @tparam table view its DetailedTask
-- @tparam[opt] function after called once Redis has it (or could not take it: the record
--   goes in when Redis is back)
-- @tparam[opt] boolean tell its status changed: the event for the other replicas' listens
--   too, made of the same JSON
function Store:saved(rec, view, after, tell)
  view.principal, view.node = rec.principal, self.node
  local doc = encode(view)
  local sent = save(self, rec.id, doc, view.status, rec.ttl_ms, after and function() after() end)
  if not sent and after then after() end
  self._mine[rec.id] = rec -- (until forgotten: put back if Redis comes back empty)
  if tell then
    send_event(self, '"kind":"task","principal":' .. encode(rec.principal or json.null)
      .. ',"task":' .. doc .. "}")
  end
end

--- A task of ours was forgotten (its bound or its time): gone for every replica.
function Store:forgot(rec)
  self._mine[rec.id] = nil
  self.client:send({ "DEL", self.prefix .. "task:" .. rec.id })
end

--- Another replica's task, as it last saved it.
-- @return its view (with `principal` and `node`), or nil (none), or nil, err, kind
function Store:find(id)
  local doc, err, kind = self.client:call("HGET", self.prefix .. "task:" .. id, "doc")
  if err then return nil, err, kind end
  if type(doc) ~= "string" then return nil end
  local view = decode(doc)
  if view and view.principal == json.null then view.principal = nil end
  return view
end

--- Publish an event of ours (`{kind = "task" | "changed" | "updated", ...}`).
function Store:publish(event)
  send_event(self, encode(event):sub(2))
end

--- Why tasks cannot be shared now, or nil.
function Store:unavailable()
  local why = self.client:unavailable()
  return why and "Task store unavailable: " .. why
end

--- Ask the replica running a task to update or cancel it, and wait until it saved the change.
-- @tparam table view the task's view (`find`)
-- @tparam string op `"update"` or `"cancel"`
-- @param params the inputResponses of an update
-- @return true, or nil, err
function Store:forward(view, op, params)
  local seq = self._seq + 1
  self._seq = seq
  local w = async.event()
  local slot = { event = w }
  self._waits[seq] = slot
  local n, err = self.client:call("PUBLISH", self.prefix .. "node:" .. view.node, encode {
    op = op, id = view.taskId, responses = params, from = self.node, seq = seq })
  if n == 0 and op == "cancel" then -- its replica is gone: cancelled here, as it would be
    self._waits[seq] = nil
    local t = os.time()
    view.status, view.lastUpdatedAt, view.inputRequests = "cancelled", iso(t), nil
    local _, serr = self.client:call("EVAL", SAVE, 3, self.prefix .. "task:" .. view.taskId,
      self.prefix .. "running", self.prefix .. "lease:" .. view.taskId, encode(view),
      "cancelled", 0, view.taskId, view.node, 1)
    if serr then return nil, serr end
    self:publish { kind = "task", task = view, principal = view.principal }
    return true
  end
  if n == 0 then
    self._waits[seq] = nil
    return nil, fmt("the replica '%s' running the task is not reachable", view.node)
  end
  if not n then
    self._waits[seq] = nil
    return nil, err
  end
  if not w:wait(M.FORWARD_TIMEOUT) then
    self._waits[seq] = nil
    return nil, fmt("the replica '%s' running the task did not answer within %g s",
      view.node, M.FORWARD_TIMEOUT)
  end
  return slot.ok, slot.err
end

-- What another replica asks of a task of ours, or the acknowledgement of what we asked.
local function on_node_message(self, payload)
  local m = decode(payload)
  if type(m) ~= "table" then return end
  if m.op == "ack" then
    local slot = self._waits[m.seq]
    if not slot then return end
    self._waits[m.seq] = nil
    slot.ok, slot.err = m.error == nil or m.error == json.null or nil, m.error
    return slot.event:set()
  end
  local rec, tasks = self._mine[m.id], self.modern and self.modern._tasks
  local ack = { op = "ack", seq = m.seq }
  if not rec or not tasks then
    ack.error = "the task is no longer running on its replica"
  elseif m.op == "update" then
    tasks:answer(rec, m.responses)
  elseif m.op == "cancel" then
    tasks:cancel(rec)
  end
  -- (after the save of the change, on the same connection: Redis keeps the order)
  self.client:send({ "PUBLISH", self.prefix .. "node:" .. tostring(m.from), encode(ack) })
end

-- An event of another replica, for our listens; one that ended a task of ours (we stalled
-- past its lease) ends it here too.
local function on_event(self, payload)
  if payload:sub(1, #self._from) == self._from then return end -- (ours: not decoded)
  local e = decode(payload)
  local m = self.modern
  if type(e) ~= "table" or e.from == self.node or not m or m.closed then return end
  if e.principal == json.null then e.principal = nil end
  local view = e.kind == "task" and type(e.task) == "table" and e.task
  local rec = view and self._mine[view.taskId]
  if rec then return m._tasks:ended_elsewhere(rec, view) end
  m:heard(e)
end

-- The tasks of ours whose lease lapsed (`lapsed`: id, status, ...): this process stalled, or
-- Redis lost them. Ended by another replica: ended here too; else ours again.
local function reclaim(self, lapsed)
  local tasks = self.modern and self.modern._tasks
  if not tasks then return end
  for i = 1, #lapsed, 2 do
    local id, status = lapsed[i], lapsed[i + 1]
    local rec = self._mine[id]
    if rec and not TERMINAL[rec.status] then
      if TERMINAL[status] then
        local view = self:find(id)
        if view then tasks:ended_elsewhere(rec, view) end
      else
        tasks:resave(rec) -- (its lease and its place in the running set back)
      end
    end
  end
end

-- Renew the leases of our running tasks (one script for them all).
local function renew(self)
  local args = { "EVAL", RENEW, 0, self.prefix, self.node, math.floor(self.lease * 1000) }
  for id, rec in pairs(self._mine) do
    if not TERMINAL[rec.status] then args[#args + 1] = id end
  end
  if #args == 6 then return end
  self.client:send(args, function(lapsed)
    if type(lapsed) == "table" and #lapsed > 0 then async.spawn(reclaim, self, lapsed) end
  end)
end

-- End the tasks whose lease lapsed (their replica died): failed, said so.
local function sweep(self)
  if core.now() < self._sweep_after then return end
  local dead = self.client:call("EVAL", SWEEP, 1, self.prefix .. "running",
    self.prefix .. "lease:")
  if type(dead) ~= "table" then return end
  for _, id in ipairs(dead) do
    local view = self:find(id)
    if view and not TERMINAL[view.status] then
      local message = fmt("The replica '%s' running the task stopped: its lease (%g s) lapsed",
        tostring(view.node), self.lease)
      view.status, view.lastUpdatedAt, view.statusMessage = "failed", iso(os.time()), message
      view.inputRequests = nil
      view.error = { code = -32603, message = message }
      save(self, id, encode(view), "failed", 0)
      self:publish { kind = "task", task = view, principal = view.principal }
    end
  end
end

--- The server whose listens hear the other replicas' events, and whose tasks they ask for.
function Store:attach(modern)
  self.modern = modern
end

function Store:close()
  if self.closed then return end
  self.closed = true
  self.modern = nil
  for _, slot in pairs(self._waits) do slot.event:set() end
end

--- Open the Redis store of a transport: one client for all its endpoints.
-- @tparam string url
-- @tparam table opts `node`, `lease` (seconds), `log`
-- @return `scope(name) -> store`, with `.close()`; or nil, err
function M.open(url, opts)
  local stores, lease = {}, opts.lease or M.LEASE
  local log = opts.log or function(line) io.stderr:write(line, "\n") end
  local client, err
  local shown = redis.redact(url) -- (no password in a log line)
  client, err = redis.connect(url, {
    on_up = function()
      log(fmt("claudelua mcp: the task store (Redis at %s) is up", shown))
      for _, s in ipairs(stores) do
        s._sweep_after = core.now() + lease -- (the owners renew first)
        -- what we hold goes back in (Redis may have restarted empty)
        for _, rec in pairs(s._mine) do
          if s.modern then s.modern._tasks:resave(rec) end
        end
      end
    end,
    on_down = function(why)
      log(fmt("claudelua mcp: the task store (Redis at %s) is down (%s); reconnecting",
        shown, tostring(why)))
    end })
  if not client then return nil, err end
  local timer = core.timer()
  local function tick()
    if not client:up() then return end
    for _, s in ipairs(stores) do
      renew(s)
      async.spawn(sweep, s)
    end
  end
  -- (a third of the lease: the renewal; the sweep rides along, the sweep bound is 1.5 leases)
  timer:start(lease / 3, tick, lease / 3)
  timer:ref(false)
  local factory = setmetatable({}, { __call = function(_, name)
    local prefix = "claudelua:" .. name .. ":"
    local s = setmetatable({ client = client, prefix = prefix, node = opts.node,
      lease = lease, _mine = {}, _waits = {}, _seq = 0, _sweep_after = core.now() + lease,
      _from = '{"from":' .. encode(opts.node) .. "," },
      Store)
    stores[#stores + 1] = s
    client:subscribe(prefix .. "events", function(p) on_event(s, p) end)
    client:subscribe(prefix .. "node:" .. opts.node, function(p) on_node_message(s, p) end)
    return s
  end })
  function factory.close()
    timer:close()
    for _, s in ipairs(stores) do s:close() end
    client:close()
  end
  return factory
end

return M
