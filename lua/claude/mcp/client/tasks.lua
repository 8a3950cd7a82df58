--- Tasks: a tool call the server runs in the background, followed through a handle
-- (`call_tool(name, args, { task = true })`). In the modern era it is the tasks extension
-- (SEP-2663, `io.modelcontextprotocol/tasks` in the client's capabilities): the call's
-- result is `resultType = "task"` with the task's id, `tasks/get` says how it goes (with
-- the result, the error or the input it needs inlined), `tasks/update` brings the input,
-- `tasks/cancel` stops it. In the legacy era (2025-11-25) it is the `task` param of
-- `tools/call`: `tasks/get` polls, `tasks/result` brings the result (the server's requests
-- for input come on its stream, to the client's usual callbacks), `tasks/cancel` stops it.
--
-- The handle: `t.id`, `t.status` (`working`, `input_required`, `completed`, `failed`,
-- `cancelled`), `t.status_message`, `t:get()`, `t:update(responses)`, `t:cancel()`,
-- `t:wait()` (the CallToolResult). Status notifications refresh it and reach `on_status`.
-- @module claude.mcp.client.tasks
local async = require "claude.async"
local core = require "claude.core"
local errors = require "claude.errors"
local json = require "claude.json"
local era = require "claude.mcp.era"
local input = require "claude.mcp.client.input"

local M = {}

M.POLL = 1          -- seconds between polls when the server suggests none
M.MAX_POLL = 30     -- the longest pause between two polls a server may ask for

local TERMINAL = { completed = true, failed = true, cancelled = true }
M.TERMINAL = TERMINAL
local STATUSES = { working = true, input_required = true, completed = true, failed = true,
  cancelled = true }

local null = json.null

-- Why a task as the server describes it is malformed, or nil. `need_status`: an answer about
-- the task (tasks/get, tasks/cancel) must say its status; `need_id`: a new task its id.
-- The optional fields a handle reads are checked for their type only when present.
local function malformed(info, need_id, need_status)
  if type(info) ~= "table" then return "a task that is not an object" end
  local id = info.taskId
  if need_id and type(id) ~= "string" then
    return id == nil and "a task without taskId" or "a task whose taskId is not a string"
  end
  local status = info.status
  if status == nil then
    if need_status then return "a task without status" end
  elseif not STATUSES[status] then
    return "a task whose status is " .. (type(status) == "string"
      and ("'" .. status:sub(1, 40) .. "', which is none of the protocol's") or "not a string")
  end
  local result = info.result
  if result ~= nil and result ~= null and type(result) ~= "table" then
    return "a task whose result is not an object"
  end
  local reqs = info.inputRequests
  if reqs ~= nil and reqs ~= null and type(reqs) ~= "table" then
    return "a task whose inputRequests is not an object"
  end
  return nil
end

local function protocol(client, method, why)
  return errors.fail("protocol", string.format("the MCP server '%s' answered %s with %s",
    tostring(client.name), method, why))
end

local Task = {}
Task.__index = Task
Task.__name = "claude.mcp.Task"

function Task:__tostring()
  return string.format("claude.mcp.Task (%s, %s)", tostring(self.id), tostring(self.status))
end

local EXT = { [era.TASKS] = json.object() }

local function fields_from(t, info)
  if type(info) ~= "table" then return end
  local changed = false
  -- a status that ended is final: a notification or a poll answer sent before the end and
  -- read after it is stale, not a task that went back to work
  if type(info.status) == "string" and info.status ~= t.status and not TERMINAL[t.status] then
    t.status, changed = info.status, true
  end
  if type(info.statusMessage) == "string" then t.status_message = info.statusMessage end
  local poll = info.pollIntervalMs or info.pollInterval
  if type(poll) == "number" and poll > 0 then
    t.poll_interval = math.min(poll / 1000, M.MAX_POLL)
  end
  local ttl = info.ttlMs or info.ttl
  if type(ttl) == "number" then t.ttl = ttl / 1000 end
  if info.result ~= nil and info.result ~= json.null then t.result = info.result end
  if type(info.error) == "table" then t.error = info.error end
  if type(info.inputRequests) == "table" then
    t.input_requests = info.inputRequests
  elseif info.status and info.status ~= "input_required" then
    t.input_requests = nil
  end
  if changed and t.on_status then
    local ok, err = pcall(t.on_status, t)
    if not ok then t.report(err) end
  end
  if TERMINAL[t.status] and t.client.tasks_live then t.client.tasks_live[t.id] = nil end
end

--- A handle for a task the server created.
-- @param client the client
-- @tparam function request `request(method, params, timeout)` of the client (its era)
-- @tparam table info the task as the server described it (flat, or legacy `result.task`)
-- @tparam table opts `name` (the tool), `timeout`, `on_status`, `report`, `on_request`
--   (the call's: it answers the server's requests for input while the task is waited for)
-- @return the handle | nil, err, "protocol" (a malformed task: no string taskId, ...)
function M.new(client, request, info, opts)
  local why = malformed(info, true, false)
  if why then return protocol(client, "tools/call", why) end
  local t = setmetatable({ id = info.taskId, client = client, request = request,
    tool = opts.name, timeout = opts.timeout, on_status = opts.on_status,
    report = opts.report or function() end, era = client.era, status = nil,
    poll_interval = M.POLL, on_request = opts.on_request }, Task)
  fields_from(t, info)
  if not TERMINAL[t.status] then
    client.tasks_live = client.tasks_live or {}
    client.tasks_live[t.id] = t
  end
  return t
end

--- A handle for a call the server answered at once: already completed with `result`.
function M.done(client, result, opts)
  local t = setmetatable({ id = nil, client = client, tool = opts.name, status = "completed",
    result = result, era = client.era, report = function() end }, Task)
  return t
end

-- A request about this task (the modern ones declare the extension they belong to).
function Task:call(method, params, timeout)
  if timeout == nil then timeout = self.timeout end
  return self.request(method, params, timeout, self.era == "modern"
    and { extensions = EXT, name = self.id } or nil)
end

--- A status notification of this task (`notifications/tasks/status`, or the modern
-- `notifications/tasks`).
function Task:notified(method, params)
  local why = malformed(params, false, true)
  if why then
    return self.report(errors.new("protocol", string.format("the MCP server '%s' sent %s "
      .. "about task %s with %s; it was dropped", tostring(self.client.name), method,
      self.id, why)))
  end
  fields_from(self, params)
end

--- The task as the server describes it now (and the handle refreshed).
-- @return the task's description | nil, err, kind
function Task:get(opts)
  if not self.id then return { status = self.status, result = self.result } end
  local r, err, kind = self:call("tasks/get", { taskId = self.id }, opts and opts.timeout)
  if r == nil then return nil, err, kind end
  local why = malformed(r, false, true)
  if why then return protocol(self.client, "tasks/get", why) end
  fields_from(self, r)
  return r
end

--- Brings input the task waits for (modern era): `responses` is `{ key = result }` for the
-- keys of its `input_requests`.
-- @return true | nil, err, kind
function Task:update(responses, opts)
  if self.era ~= "modern" then
    return errors.fail("unsupported", "tasks/update is of the modern era; a legacy server "
      .. "asks for input on the task's stream")
  end
  if type(responses) ~= "table" then
    errors.misuse("bad argument #1 to 'update' (table expected, got %s)",
      errors.typename(responses))
  end
  local r, err, kind = self:call("tasks/update", { taskId = self.id,
    inputResponses = responses }, opts and opts.timeout)
  if r == nil then return nil, err, kind end
  return true
end

--- Asks the server to stop the task (idempotent once it has ended).
-- @return true | nil, err, kind
function Task:cancel(opts)
  if not self.id or TERMINAL[self.status] then return true end
  local r, err, kind = self:call("tasks/cancel", { taskId = self.id }, opts and opts.timeout)
  if r == nil then return nil, err, kind end
  if self.era ~= "modern" then
    local why = malformed(r, false, false)
    if why then return protocol(self.client, "tasks/cancel", why) end
    fields_from(self, r)
  end
  return true
end

-- A legacy task's CallToolResult (tasks/result): an object, else `protocol`.
local function legacy_result(self, timeout)
  local r, err, kind = self:call("tasks/result", { taskId = self.id }, timeout)
  if r ~= nil and type(r) ~= "table" then
    return protocol(self.client, "tasks/result", "a result that is not an object")
  end
  return r, err, kind
end

-- The outcome of a task that has ended.
local function outcome(self)
  if self.status == "completed" then
    if self.result ~= nil then return self.result end
  elseif self.status == "failed" then
    local e = self.error or {}
    return errors.fail("remote", string.format("the task %s of tool '%s' failed: %s",
      tostring(self.id), tostring(self.tool), tostring(e.message or self.status_message
      or "no reason given")), { code = e.code, data = e.data, remote_message = e.message })
  elseif self.status == "cancelled" then
    return errors.fail("cancelled", string.format("the task %s of tool '%s' was cancelled",
      tostring(self.id), tostring(self.tool)))
  end
  return nil
end

local function wait(self, opts)
  local limit = opts and opts.timeout
  local deadline = limit and (core.now() + limit)
  local function left()
    return deadline and math.max(0, deadline - core.now()) or false
  end
  while true do
    if TERMINAL[self.status] then
      -- a notification tells the status alone: a failure's reason comes with tasks/get
      if self.status == "failed" and self.error == nil and self.status_message == nil
          and self.era == "modern" and not self.asked_end then
        self.asked_end = true
        local g, gerr, gkind = self:get()
        if not g then return nil, gerr, gkind end
      end
      local r, err, kind = outcome(self)
      if r ~= nil or err then return r, err, kind end
      if self.era ~= "modern" then
        -- a legacy task's result comes from tasks/result
        return legacy_result(self, left())
      end
      local g, gerr, gkind = self:get()
      if not g then return nil, gerr, gkind end
      if self.result == nil then
        return errors.fail("protocol", "the server says task " .. tostring(self.id)
          .. " completed without its result")
      end
    elseif self.status == "input_required" then
      if self.era == "modern" then
        local reqs = self.input_requests
        if reqs and next(reqs) then
          local responses, err, kind = input.answer(self.client, reqs, { method = "tools/call",
            name = self.tool, on_request = self.on_request })
          if not responses then return nil, err, kind end
          local ok, uerr, ukind = self:update(responses)
          if not ok then return nil, uerr, ukind end
        end
        local g, gerr, gkind = self:get()
        if not g then return nil, gerr, gkind end
      else
        -- the server's requests for input come on the stream of tasks/result
        local r, err, kind = legacy_result(self, left())
        if r then fields_from(self, { status = "completed" }) end
        return r, err, kind
      end
    else
      local pause = self.poll_interval or M.POLL
      if deadline then
        local rest = left()
        if rest <= 0 then
          return errors.fail("timeout", string.format("the task %s of tool '%s' did not end "
            .. "within %g s", tostring(self.id), tostring(self.tool), limit))
        end
        pause = math.min(pause, rest)
      end
      async.sleep(pause)
      local g, gerr, gkind = self:get()
      if not g then return nil, gerr, gkind end
    end
  end
end

--- Waits for the task to end.
-- @tparam[opt] table opts `timeout` (seconds for the whole wait; default: none)
-- @return the CallToolResult | nil, err, kind (`remote` when it failed, `cancelled`)
function Task:wait(opts)
  local on_request, client = self.on_request, self.client
  if not on_request then return wait(self, opts) end
  -- the legacy era's requests for input, meanwhile, are the call's (claude.mcp.client.inbound)
  client.forwarding = client.forwarding or {}
  client.forwarding[self] = on_request
  local r = table.pack(pcall(wait, self, opts))
  client.forwarding[self] = nil
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

M.Task = Task
return M
