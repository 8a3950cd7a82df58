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
-- process that created it, under the tool's budgets; its record is kept `ttl_ms` after it
-- was created (default one hour), then forgotten. Behind a load balancer, a task's id starts
-- with the process's `node` name and a dot (`a.3kx...`), so that `tasks/*` requests, whose
-- `Mcp-Name` header is the id, can be routed to the process that has the task. Listens of
-- clients that declared the extension get `notifications/tasks` when a task's status changes.
-- @module claude.mcp.server.tasks
local core = require "claude.core"
local async = require "claude.async"
local json = require "claude.json"
local era = require "claude.mcp.era"
local input = require "claude.mcp.input"

local M = {}

local rpc_error, jobject = core.jsonrpc_error, json.object
local type, fmt, pairs = type, string.format, pairs
local CAPS, SUB = era.META.client_capabilities, era.META.subscription_id

--- The extension's id.
M.ID = "io.modelcontextprotocol/tasks"

--- How long a task is kept after it was created (ms), and how often a client should poll.
M.TTL_MS, M.POLL_MS = 3600 * 1000, 500

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
  t.ttlMs, t.pollIntervalMs = rec.ttl_ms, M.POLL_MS
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

-- Tells the listens of clients that declared the extension (and, on an OAuth server, of the
-- task's subject) that the task's status changed.
local function announce(self, rec)
  for _, sub in ipairs(self._modern:listens()) do
    if sub.tasks and sub.principal == rec.principal then
      local params = detailed(rec, {})
      params._meta = { [SUB] = sub.id }
      sub.out:send({ jsonrpc = "2.0", method = "notifications/tasks", params = params })
    end
  end
end

local function set_status(self, rec, status)
  if rec.status == status then return end
  rec.status, rec.updated_at = status, iso(now())
  announce(self, rec)
end

-- Forgets the tasks whose time is up (those still running stay).
local function sweep(self)
  local t = now()
  for id, rec in pairs(self._store) do
    if TERMINAL[rec.status] and t - rec.created > rec.ttl_ms / 1000 then self._store[id] = nil end
  end
end

--- The extension of one modern server.
-- @param modern its `claude.mcp.server.modern`
-- @treturn claude.mcp.Tasks
function M.new(modern)
  local self = setmetatable({ id = M.ID, _modern = modern, _store = {} }, Tasks)
  local function gate(fn)
    return function(_, msg, out, auth)
      if not M.declared(msg.params._meta[CAPS]) then return out:send(missing(msg.id)) end
      local id = msg.params.taskId
      local rec = type(id) == "string" and self._store[id]
      if not rec or rec.principal ~= M.owner(auth) then
        return out:send(rpc_error(msg.id, -32602, fmt("Invalid params: unknown task '%s'",
          tostring(id)), { taskId = id }))
      end
      return out:send({ jsonrpc = "2.0", id = msg.id, result = fn(rec, msg.params) })
    end
  end
  self.methods = {
    ["tasks/get"] = gate(function(rec)
      return detailed(rec, { resultType = "complete", _meta = modern._meta })
    end),
    ["tasks/update"] = gate(function(rec, params)
      self:answer(rec, params.inputResponses)
      return { resultType = "complete", _meta = modern._meta }
    end),
    ["tasks/cancel"] = gate(function(rec)
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
-- not declare them).
function Tasks:check_call(t, req, id)
  if M.declared(req._meta[CAPS]) then
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
  sweep(self)
  local t = now()
  local node = self._modern.node
  local rec = { id = (node and node .. "." or "") .. core.base64url_encode(assert(
    core.random_bytes(18))), status = "working",
    created = t, created_at = iso(t), ttl_ms = M.TTL_MS, ctx = ctx,
    principal = M.owner(auth) }
  rec.updated_at = rec.created_at
  self._store[rec.id] = rec
  local out = req._out
  req.task = rec
  req._out = { own_ids = false, send = function(_, msg) return self:finish(rec, msg) end }
  out:send({ jsonrpc = "2.0", id = ctx.request_id, result = fields(rec, { resultType = "task",
    _meta = self._modern._meta }) })
  return rec
end

--- The answer of a task's call; of its notifications, a progress message becomes the task's
-- `statusMessage` (there is no stream to send them on).
function Tasks:finish(rec, msg)
  if msg.method ~= nil then
    local p = msg.params
    if msg.method == "notifications/progress" and type(p.message) == "string" then
      rec.message = p.message
    end
    return true
  end
  if TERMINAL[rec.status] then return true end
  rec.ctx, rec.pending = nil, nil
  if msg.error then
    rec.error = msg.error
    set_status(self, rec, "failed")
  else
    rec.result = msg.result
    set_status(self, rec, "completed")
  end
  return true
end

--- Cancel a task (idempotent on a task that ended).
function Tasks:cancel(rec)
  if TERMINAL[rec.status] then return end
  local ctx = rec.ctx
  set_status(self, rec, "cancelled")
  rec.ctx, rec.pending = nil, nil
  local w = rec.waiter
  rec.waiter = nil
  if ctx then self._modern:cancel(ctx, "cancelled by tasks/cancel") end
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
    set_status(self, rec, "input_required")
    while rec.pending and not TERMINAL[rec.status] do
      local w = async.event()
      rec.waiter = w
      w:wait()
    end
  end
  for key in pairs(requests) do
    if got[key] == nil then got[key] = rec.answers[key] end
  end
  return got
end

--- The tasks kept (for a test: how many, and their status).
-- @treturn table id -> status
function Tasks:list()
  local out = {}
  for id, rec in pairs(self._store) do out[id] = rec.status end
  return out
end

return M
