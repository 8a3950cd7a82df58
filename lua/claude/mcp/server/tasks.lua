--- The tasks extension (`io.modelcontextprotocol/tasks`) of the modern era: a tool call that
-- takes a while answers at once with a task (`resultType = "task"` and its id); the client
-- polls it with `tasks/get` (its status, and once done its result inlined), answers what it
-- asks with `tasks/update`, and may `tasks/cancel` it. Only a client that declares the
-- extension in its request's capabilities gets tasks; the others get the call's result as
-- usual, or -32021 for a tool that requires tasks.
--
-- A tool opts in with `task = true` (or `"optional"`, `"required"`, claude.mcp.tool). Its call
-- becomes a task when it cannot answer at once (the first time it waits: a sleep, a process,
-- a request), or at `ctx.task()`: a call that is done at once answers as usual (the
-- specification's immediate-result shortcut), and an `input_required` round before the task
-- stays one (multi round-trip, then task). In a task, `ctx.elicit`, `ctx.sample`, `ctx.roots`
-- and `ctx.input` wait for the answers `tasks/update` brings (the task's status is then
-- `input_required`, its `inputRequests` the questions not answered yet). A task runs in the
-- process that created it, under the tool's budgets; its record is kept `task_ttl` after it
-- was created (default one hour), then forgotten.
--
-- A task belongs to its creator: the OAuth principal of its request, else the connection
-- (each stdio or in-process connection has its own modern server, hence its own tasks; over
-- HTTP without OAuth the task id, 144 random bits, is the only key). `tasks/*` of another
-- principal get "unknown task"; a listen gets `notifications/tasks` only for the `taskIds`
-- it names, of its own principal. What tasks hold is bounded (claude.mcp.server.limits):
-- tasks kept per client (its principal, else its address) and in the server (past either,
-- the oldest finished one is forgotten, else the call is refused), how long a task waits
-- for input (then it fails), and the bytes of finished results in the server (the oldest
-- are forgotten first).
--
-- Behind a load balancer, a task's id starts with the process's `node` name and a dot
-- (`a.3kx...`), so that `tasks/*` requests, whose `Mcp-Name` header is the id, can be routed
-- to the process that has the task. With a shared store (claude.mcp.server.shared: `--tasks
-- redis://...`) any replica answers them: a task still runs where it was created, its record
-- is mirrored into the store at each change, a `tasks/get` elsewhere reads it there, and a
-- `tasks/update` or `tasks/cancel` elsewhere is forwarded to the task's replica.
-- @module claude.mcp.server.tasks
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local era = require "claude.mcp.era"
local input = require "claude.mcp.input"
local limits_mod = require "claude.mcp.server.limits"
local shared_mod = require "claude.mcp.server.shared"

local M = {}

local rpc_error, jobject = core.jsonrpc_error, json.object
local type, fmt, pairs = type, string.format, pairs
local CAPS, SUB = era.META.client_capabilities, era.META.subscription_id

--- The extension's id.
M.ID = "io.modelcontextprotocol/tasks"

--- How often a client should poll (ms).
M.POLL_MS = 500

local TERMINAL = { completed = true, failed = true, cancelled = true }

-- An ISO 8601 time (UTC) of seconds since the epoch.
local function iso(t)
  return os.date("!%Y-%m-%dT%H:%M:%SZ", t)
end

local now = os.time

--- Did the client declare the extension (in a request's capabilities)?
-- @tparam table|nil caps
-- @treturn boolean
function M.declared(caps)
  local ext = type(caps) == "table" and caps.extensions
  return type(ext) == "table" and type(ext[M.ID]) == "table"
end

--- Whose a task is: the subject (or client) of the request's verified OAuth token at its
-- issuer, as the HTTP transport binds a session; nil without a token.
-- @tparam[opt] table auth `ctx.auth`
-- @treturn string|nil
function M.owner(auth)
  if type(auth) ~= "table" then return nil end
  local who = auth.subject and "sub:" .. auth.subject
    or auth.client_id and "client:" .. auth.client_id
  return who and (auth.issuer or "") .. "\n" .. who or nil
end

-- Whose share of the bounds a task counts in: its principal, else the address of the
-- client that made it (`out.client`, HTTP), else the connection's (stdio: one client).
local function key_of(auth, out)
  local who = M.owner(auth)
  if who then return who end
  local addr = out and out.client
  return addr and "addr:" .. addr or ""
end

local function missing(id)
  return rpc_error(id, era.ERRORS.missing_capability, "Missing required client capability: "
    .. "the " .. M.ID .. " extension", { requiredCapabilities = { extensions = {
      [M.ID] = jobject() } } })
end

local Tasks = { __name = "claude.mcp.Tasks" }
Tasks.__index = Tasks

-- The fields every view of a task carries.
local function fields(rec, t)
  t.taskId, t.status, t.createdAt, t.lastUpdatedAt = rec.id, rec.status, rec.created_at,
    rec.updated_at
  -- (task_ttl = none: kept while the process lives, and no ttlMs to tell)
  if rec.ttl_ms ~= math.huge then t.ttlMs = rec.ttl_ms end
  t.pollIntervalMs = M.POLL_MS
  if rec.message then t.statusMessage = rec.message end
  return t
end

-- The task's DetailedTask (tasks/get, notifications/tasks).
local function detailed(rec, t)
  fields(rec, t)
  if rec.status == "completed" then t.result = rec.result
  elseif rec.status == "failed" then t.error = rec.error
  elseif rec.status == "input_required" then t.inputRequests = rec.pending end
  return t
end

--- Tell this server's listens that named the task (in `taskIds`, which only a client that
-- declared the extension may give) and are of the task's principal that its status changed.
-- @tparam string id the task's id
-- @param principal its owner (`M.owner`)
-- @tparam function view makes the task's DetailedTask (a new table each call)
function Tasks:deliver(id, principal, view)
  for _, sub in ipairs(self._modern:listens()) do
    local ids = sub.task_ids
    if ids and ids[id] and sub.principal == principal then
      local params = view()
      params._meta = { [SUB] = sub.id }
      sub.out:send({ jsonrpc = "2.0", method = "notifications/tasks", params = params })
    end
  end
end

-- The record changed: mirrored into the shared store (nothing to do in memory); `after`,
-- when given, runs once the store has it (at once in memory).
local function sync(self, rec, after)
  local shared = self._shared
  if shared.remote then return shared:saved(rec, detailed(rec, {}), after) end
  if after then after() end
end

local function set_status(self, rec, status)
  if rec.status == status then return end
  rec.status, rec.updated_at = status, iso(now())
  local shared = self._shared
  -- (saved, and told to the other replicas' listens: one view, encoded once)
  if shared.remote then shared:saved(rec, detailed(rec, {}), nil, true) end
  self:deliver(rec.id, rec.principal, function() return detailed(rec, {}) end)
end

-- Forgets a task: its place in the counts and the bytes of its result go with it.
local function forget(self, rec)
  if self._store[rec.id] ~= rec then return end
  self._store[rec.id] = nil
  self._count = self._count - 1
  local key = rec.key
  local n = self._by_client[key] - 1
  self._by_client[key] = n > 0 and n or nil
  self._bytes = self._bytes - (rec.bytes or 0)
  self._shared:forgot(rec)
end

-- Forgets the tasks whose time is up (those still running stay).
local function sweep(self)
  local t = now()
  for _, rec in pairs(self._store) do
    if TERMINAL[rec.status] and t - rec.created > rec.ttl_ms / 1000 then forget(self, rec) end
  end
end

-- The finished task that ended first (of the client `key` when `mine`), or nil.
local function oldest_finished(self, mine, key)
  local best
  for _, rec in pairs(self._store) do
    if rec.ended and (not mine or rec.key == key)
        and (not best or rec.ended < best.ended) then
      best = rec
    end
  end
  return best
end

-- Room for one more task of the client `key`: the oldest finished task goes when a bound
-- is reached; nil, or the refusal's message and bound when every task held still runs.
local function make_room(self, key)
  sweep(self)
  local l = self._limits
  while (self._by_client[key] or 0) >= l.max_client_tasks do
    local old = oldest_finished(self, true, key)
    if not old then
      return fmt("Too many tasks running for this client (%d)", self._by_client[key]),
        "max_client_tasks", l.max_client_tasks
    end
    forget(self, old)
  end
  while self._count >= l.max_tasks do
    local old = oldest_finished(self, false)
    if not old then
      return fmt("Too many tasks running in the server (%d)", self._count), "max_tasks",
        l.max_tasks
    end
    forget(self, old)
  end
  return nil
end

local function unknown(id, task_id)
  return rpc_error(id, -32602, fmt("Invalid params: unknown task '%s'", tostring(task_id)),
    { taskId = task_id })
end

local function store_error(id, err)
  return rpc_error(id, -32603, "Task store unavailable: " .. tostring(err),
    { reason = "task_store_unavailable" })
end

-- `tasks/*` of a task another replica runs (a shared store): read from the store, and an
-- update or a cancel forwarded to that replica. In a task of its own: it waits for Redis.
local function remote(self, method, msg, out, auth)
  local shared, modern, id = self._shared, self._modern, msg.params.taskId
  async.spawn(function()
    local view, err = shared:find(id)
    if err then return out:send(store_error(msg.id, err)) end
    if not view or view.principal ~= M.owner(auth) then return out:send(unknown(msg.id, id)) end
    if method == "tasks/get" then
      view.principal, view.node = nil, nil
      view.resultType, view._meta = "complete", modern._meta
      return out:send({ jsonrpc = "2.0", id = msg.id, result = view })
    end
    local update = method == "tasks/update"
    -- (as for a task of ours: an ended task stays ended, answers to no question are ignored)
    if not TERMINAL[view.status] and (not update or view.status == "input_required") then
      local ok, ferr = shared:forward(view, update and "update" or "cancel",
        msg.params.inputResponses)
      if not ok then
        return out:send(rpc_error(msg.id, -32603, "Could not reach the task's replica: "
          .. tostring(ferr), { reason = "task_replica_unreachable" }))
      end
    end
    return out:send({ jsonrpc = "2.0", id = msg.id, result = { resultType = "complete",
      _meta = modern._meta } })
  end)
end

--- The extension of one modern server.
-- @param modern its `claude.mcp.server.modern`
-- @tparam[opt] table limits `claude.mcp.server.limits.of(...)` (default: the defaults)
-- @param[opt] shared the store the replicas share (claude.mcp.server.shared; default: memory)
-- @treturn claude.mcp.Tasks
function M.new(modern, limits, shared)
  local self = setmetatable({ id = M.ID, _modern = modern, _store = {}, _count = 0,
    _by_client = {}, _bytes = 0, _limits = limits or limits_mod.of(),
    _shared = shared or shared_mod.memory }, Tasks)
  local function gate(method, fn)
    return function(_, msg, out, auth)
      if not M.declared(msg.params._meta[CAPS]) then return out:send(missing(msg.id)) end
      local id = msg.params.taskId
      local rec = type(id) == "string" and self._store[id]
      if not rec and type(id) == "string" and self._shared.remote then
        return remote(self, method, msg, out, auth)
      end
      if not rec or rec.principal ~= M.owner(auth) then return out:send(unknown(msg.id, id)) end
      return out:send({ jsonrpc = "2.0", id = msg.id, result = fn(rec, msg.params) })
    end
  end
  self.methods = {
    ["tasks/get"] = gate("tasks/get", function(rec)
      return detailed(rec, { resultType = "complete", _meta = modern._meta })
    end),
    ["tasks/update"] = gate("tasks/update", function(rec, params)
      self:answer(rec, params.inputResponses)
      return { resultType = "complete", _meta = modern._meta }
    end),
    ["tasks/cancel"] = gate("tasks/cancel", function(rec)
      self:cancel(rec)
      return { resultType = "complete", _meta = modern._meta }
    end),
  }
  return self
end

--- The capability the server declares, or nil when it offers no task (no tool of it has a
-- `task` option).
-- @treturn table|nil
function Tasks:capability()
  for _, t in ipairs(self._modern:server().tool_list) do
    if t.task then return jobject() end
  end
  return nil
end

--- For a `tools/call` of tool `t`: nil when the call may go on (`req.may_task` set when it may
-- become a task), else the error response (-32021: the tool requires tasks, the client does
-- not declare them; -32602: past `max_client_tasks` or `max_tasks`, every task held running).
-- @tparam[opt] table auth the request's verified token
function Tasks:check_call(t, req, id, auth)
  if M.declared(req._meta[CAPS]) then
    local down = self._shared:unavailable() -- (a task no other replica could find: refused)
    if down then return store_error(id, down) end
    local message, bound, max = make_room(self, key_of(auth, req._out))
    if message then return limits_mod.refused(id, message, bound, max) end
    req.may_task, req.tasks = true, self
    return nil
  end
  if t.task == "required" then return missing(id) end
  return nil
end

--- Turn the call of `req` (running as `ctx`) into a task: its client gets the task at once,
-- the call's answer completes the task.
function Tasks:start(req, ctx, auth)
  if req.task then return req.task end
  -- (room was made when the call was let in: check_call; a bound is checked again here, as
  -- calls let in together may start their tasks after it)
  local out = req._out
  local key = key_of(auth, out)
  make_room(self, key)
  local t = now()
  local node = self._modern.node
  local rec = { id = (node and node .. "." or "") .. core.base64url_encode(assert(
    core.random_bytes(18))), status = "working",
    created = t, created_at = iso(t), ttl_ms = self._limits.task_ttl * 1000, ctx = ctx,
    principal = M.owner(auth), key = key }
  rec.updated_at = rec.created_at
  self._store[rec.id] = rec
  self._count = self._count + 1
  self._by_client[key] = (self._by_client[key] or 0) + 1
  req.task = rec
  req._out = { own_ids = false, send = function(_, msg) return self:finish(rec, msg) end }
  local answer = { jsonrpc = "2.0", id = ctx.request_id, result = fields(rec, {
    resultType = "task", _meta = self._modern._meta }) }
  -- (its id goes out once any replica can find the task)
  sync(self, rec, function() out:send(answer) end)
  return rec
end

--- The answer of a task's call; of its notifications, a progress message becomes the task's
-- `statusMessage` (there is no stream to send them on).
function Tasks:finish(rec, msg)
  if msg.method ~= nil then
    local p = msg.params
    if msg.method == "notifications/progress" and type(p.message) == "string" then
      rec.message = p.message
      sync(self, rec)
    end
    return true
  end
  if TERMINAL[rec.status] then return true end
  rec.ctx, rec.pending = nil, nil
  local l, ended = self._limits, msg.error or msg.result
  local ok, text = pcall(json.encode, ended) -- (what cannot be encoded is answered as such)
  local bytes = ok and #text or 0
  if bytes > l.task_result_bytes then -- kept, it would push every other result out
    msg = { error = { code = -32603, message = fmt("The task's result (%d bytes) is larger "
      .. "than the server keeps (task_result_bytes %d)", bytes, l.task_result_bytes) } }
    bytes = #msg.error.message + 64
  end
  rec.bytes, rec.ended = bytes, core.now()
  self._bytes = self._bytes + bytes
  while self._bytes > l.task_result_bytes do
    local old = oldest_finished(self, false)
    if not old then break end
    forget(self, old)
  end
  if msg.error then
    rec.error = msg.error
    set_status(self, rec, "failed")
  else
    rec.result = msg.result
    set_status(self, rec, "completed")
  end
  return true
end

-- A task's end without its call's answer (cancelled): it ended now, holding no result.
local function ended(rec)
  rec.ended, rec.bytes = core.now(), 0
end

--- Cancel a task (idempotent on a task that ended).
function Tasks:cancel(rec)
  if TERMINAL[rec.status] then return end
  local ctx = rec.ctx
  ended(rec)
  set_status(self, rec, "cancelled")
  rec.ctx, rec.pending = nil, nil
  local w = rec.waiter
  rec.waiter = nil
  if ctx then self._modern:cancel(ctx, "cancelled by tasks/cancel") end
  if w then w:set() end
end

--- A task of ours that the shared store says another replica ended (this process stalled
-- past its lease, and another failed it): it stops here too, and reads as the store says.
-- Its call is cancelled (its coroutine and what it holds go); the record stays until its
-- time, as any ended task's.
-- @param rec its record
-- @tparam table view its DetailedTask in the store (ended)
function Tasks:ended_elsewhere(rec, view)
  if TERMINAL[rec.status] or self._store[rec.id] ~= rec or not TERMINAL[view.status] then
    return
  end
  local ctx, w = rec.ctx, rec.waiter
  ended(rec)
  rec.ctx, rec.pending, rec.waiter = nil, nil, nil
  rec.status, rec.updated_at = view.status, view.lastUpdatedAt or iso(now())
  rec.message, rec.error, rec.result = view.statusMessage, view.error, view.result
  self:deliver(rec.id, rec.principal, function() return detailed(rec, {}) end)
  if ctx then
    self._modern:cancel(ctx, "ended by another replica: " .. tostring(view.statusMessage
      or view.status))
  end
  if w then w:set() end
end

--- `tasks/update`: the answers for the questions the task waits on (others are ignored; an
-- answer that is not well formed leaves its question open).
function Tasks:answer(rec, responses)
  local pending = rec.pending
  if type(responses) ~= "table" or not pending then return end
  for key, v in pairs(responses) do
    local q = pending[key]
    if q and input.valid(q.method, v) then
      pending[key] = nil
      rec.answers[key] = v
    end
  end
  rec.updated_at = iso(now())
  if next(pending) ~= nil then sync(self, rec) end -- (else the status change saves it)
  if next(pending) == nil then
    rec.pending = nil
    set_status(self, rec, "working")
    local w = rec.waiter
    rec.waiter = nil
    if w then w:set() end
  end
end

--- `ctx.input` in a task: waits until `tasks/update` has answered every question.
-- @return the answers, key -> answer
function Tasks:ask(req, requests, got)
  local rec = req.task
  local caps = req._meta[CAPS]
  local asked = false
  rec.answers = rec.answers or {}
  for key, r in pairs(requests) do
    if got[key] == nil and rec.answers[key] == nil then
      if not input.declared(caps, r.method) then
        input.unwind("missing_capability", { required = input.required(r.method, r.params) })
      end
      rec.pending = rec.pending or jobject()
      rec.pending[key] = { method = r.method, params = r.params or jobject() }
      asked = true
    end
  end
  if asked then
    if rec.status == "input_required" then sync(self, rec) end -- (more questions)
    set_status(self, rec, "input_required")
    -- a question nobody answers ends the task: it would hold its coroutine and its record
    local limit = self._limits.task_input_timeout
    local deadline = core.now() + limit
    while rec.pending and not TERMINAL[rec.status] do
      local w = async.event()
      rec.waiter = w
      local left = deadline - core.now()
      if left == math.huge then left = nil end -- (none: no timer)
      if left and left <= 0 or not w:wait(left) and rec.pending and not TERMINAL[rec.status] then
        rec.waiter = nil
        local message = fmt("No input within %g s (task_input_timeout)", limit)
        self:finish(rec, { error = { code = -32603, message = message } })
        error(message, 0) -- the tool's call ends; its answer finds the task ended
      end
    end
  end
  for key in pairs(requests) do
    if got[key] == nil then got[key] = rec.answers[key] end
  end
  return got
end

--- Write a task's record into the shared store again (it came back after an outage).
function Tasks:resave(rec)
  if self._store[rec.id] == rec then sync(self, rec) end
end

--- The tasks kept (for a test: how many, and their status).
-- @treturn table id -> status
function Tasks:list()
  local out = {}
  for id, rec in pairs(self._store) do out[id] = rec.status end
  return out
end

return M
