--- Many MCP servers under one name each: stdio and HTTP servers (through
-- `claude.mcp.connect`), in-process `claude.server` values, and clients
-- already connected, all used the same way.
--
--     local m = claude.mcp.manager{
--       fs = { command = "npx", args = { "-y", "@modelcontextprotocol/server-filesystem", "." } },
--       web = { url = "https://example.com/mcp" },
--       calc = claude.server("calc", { add }),
--     }
--     local r = m:call_tool("calc", "add", { a = 1, b = 2 })
--
-- The servers connect concurrently; one that fails to connect is reported
-- by `status()` and its calls fail, the others go on.
-- @module claude.mcp.manager
local async = require "claude.async"
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local tool = require "claude.mcp.tool"
local client_mod = require "claude.mcp.client"

local M = {}

local misuse, public = errors.misuse, errors.public

---------------------------------------------------------------------------------------------
-- In-process servers, behind the client's methods
---------------------------------------------------------------------------------------------

local Local = {}
Local.__index = Local
Local.__name = "claude.mcp.LocalClient"

function Local:__tostring()
  return "claude.mcp.LocalClient (" .. self.name .. ")"
end

local function local_client(name, server)
  local router = require("claude.mcp.router").new({ [name] = server })
  return setmetatable({ name = name, server = server, router = router, counter = 0,
    state = "connected", server_info = { name = server.name, version = server.version },
    capabilities = {}, instructions = server.instructions }, Local)
end

function Local:request(method, params)
  if self.state ~= "connected" then
    return errors.fail("closed", "the in-process server '" .. self.name .. "' is closed")
  end
  self.counter = self.counter + 1
  local r = self.router:handle(self.name, { jsonrpc = "2.0", id = self.counter,
    method = method, params = params })
  if type(r) == "table" and r.error then
    local e = r.error
    return errors.fail("remote", string.format("request '%s' failed: %s (%s)", method,
      tostring(e.message), tostring(e.code)), { code = e.code, data = e.data,
      remote_message = e.message })
  end
  return r.result
end

function Local:list_tools()
  local out, cursor = json.array(), nil
  repeat
    local r, err, kind = self:request("tools/list", cursor and { cursor = cursor } or nil)
    if not r then return nil, err, kind end
    for _, t in ipairs(r.tools) do out[#out + 1] = t end
    cursor = r.nextCursor
  until cursor == nil or cursor == json.null
  return out
end

function Local:call_tool(name, args)
  return self:request("tools/call", { name = name, arguments = args or json.object() })
end

function Local:ping()
  local r, err, kind = self:request("ping")
  if not r then return nil, err, kind end
  return true
end

function Local:close()
  self.state = "disconnected"
  self.router:close("the manager was closed")
  return true
end

---------------------------------------------------------------------------------------------
-- The manager
---------------------------------------------------------------------------------------------

local Manager = {}
Manager.__index = Manager
Manager.__name = "claude.mcp.Manager"

function Manager:__tostring()
  local n = 0
  for _ in pairs(self.entries) do n = n + 1 end
  return string.format("claude.mcp.Manager (%d server%s)", n, n == 1 and "" or "s")
end

local OPTIONS = { timeout = "number", connect_timeout = "number", max_retries = "number",
  on_state = "function", on_notification = "function", on_error = "function",
  health_interval = "number" }

-- Runs fn(item) for every item concurrently and waits for all of them.
local function each_concurrently(items, fn)
  local tasks = {}
  for i, item in ipairs(items) do tasks[i] = async.spawn_observed(fn, item) end
  for _, t in ipairs(tasks) do t:join() end
end

-- The connect options of one entry: the config plus the manager's defaults and hooks.
local function config_for(self, name, config)
  local o = { name = name }
  for k, v in pairs(config) do o[k] = v end
  local mo = self.opts
  for _, k in ipairs { "timeout", "connect_timeout", "max_retries", "on_error" } do
    if o[k] == nil then o[k] = mo[k] end
  end
  if mo.on_state and o.on_state == nil then
    o.on_state = function(old, new) mo.on_state(name, old, new) end
  end
  if mo.on_notification and o.on_notification == nil then
    o.on_notification = function(method, params) mo.on_notification(name, method, params) end
  end
  return o
end

local function check_entry(name, config)
  if type(name) ~= "string" then
    misuse("bad argument #1 to 'manager' (keys are server names, got %s)", errors.typename(name))
  end
  if not (tool.is_server(config) or client_mod.is_client(config) or type(config) == "table") then
    misuse("bad argument #1 to 'manager' (entry '%s': connect options, a claude.server or a "
      .. "client expected, got %s)", name, errors.typename(config))
  end
end

-- Connects one entry (in its own task).
local function start_entry(self, e)
  if e.config then
    local c, err = client_mod.connect(config_for(self, e.name, e.config))
    if self.closed then
      if c then c:close() end
      return
    end
    e.client, e.error = c, err or false
  end
end

local function new_entry(self, name, config)
  local e = { name = name, error = false, healthy = nil }
  if tool.is_server(config) then
    e.client, e.kind = local_client(name, config), "in-process"
  elseif client_mod.is_client(config) then
    e.client, e.kind = config, config.transport_kind
  else
    -- checked now, so a bad option blames the caller of manager() or add()
    local _, kind = require("claude.mcp.client.options").check(config_for(self, name, config),
      "manager")
    e.config, e.kind = config, kind
  end
  self.entries[name] = e
  return e
end

local function health_loop(self)
  while not self.closed do
    async.sleep(self.opts.health_interval)
    if self.closed then return end
    self:ping_all()
  end
end

--- Makes a manager and connects its servers concurrently.
-- @tparam table servers `{ name = connect options | claude.server | client }`
-- @tparam[opt] table opts `timeout`, `connect_timeout`, `max_retries` (defaults for every
--   server), `on_state(name, old, new)`, `on_notification(name, method, params)`,
--   `on_error(err)`, `health_interval` (seconds between pings of every server; off by
--   default)
-- @treturn claude.mcp.Manager
-- @function new
M.new = public(function(servers, opts)
  errors.check(servers, 1, "manager", "table")
  errors.check(opts, 2, "manager", "table", true)
  opts = opts or {}
  for k, v in pairs(opts) do
    local want = OPTIONS[k]
    if not want then errors.unknown_field(k, OPTIONS, "manager") end
    if type(v) ~= want then
      misuse("bad field '%s' to 'manager' (%s expected, got %s)", k, want, errors.typename(v))
    end
  end
  local self = setmetatable({ entries = {}, opts = opts, closed = false }, Manager)
  local pending = {}
  for name, config in pairs(servers) do
    check_entry(name, config)
    pending[#pending + 1] = new_entry(self, name, config)
  end
  each_concurrently(pending, function(e) start_entry(self, e) end)
  if opts.health_interval then self.health = async.spawn(health_loop, self) end
  return self
end)

--- Adds a server (and connects it).
-- @return true | nil, err, kind (it could not connect; it stays listed)
-- @function add
Manager.add = public(function(self, name, config)
  check_entry(name, config)
  if self.entries[name] then misuse("bad argument #1 to 'add' (a server '%s' exists)", name) end
  local e = new_entry(self, name, config)
  start_entry(self, e)
  if e.error then return nil, e.error, e.error.kind end
  return true
end)

--- Removes a server and closes it.
function Manager:remove(name)
  local e = self.entries[name]
  if not e then return false end
  self.entries[name] = nil
  if e.client then e.client:close() end
  return true
end

--- The client of a server (a `claude.mcp.Client`, or for an in-process
-- server an object with the same `list_tools`, `call_tool`, `ping`).
-- @return the client | nil, err, kind
function Manager:client(name)
  local e = self.entries[name]
  if not e then
    return errors.fail("not_found", "no MCP server named '" .. tostring(name) .. "'")
  end
  if not e.client then
    local err = e.error or errors.new("connection", "the MCP server '" .. name
      .. "' is not connected")
    return nil, err, err.kind
  end
  return e.client
end

--- Calls a tool of one server.
-- @return the CallToolResult | nil, err, kind
function Manager:call_tool(server, name, args, opts)
  local c, err, kind = self:client(server)
  if not c then return nil, err, kind end
  return c:call_tool(name, args, opts)
end

local function sorted_names(self)
  local names = {}
  for name in pairs(self.entries) do names[#names + 1] = name end
  table.sort(names)
  return names
end

--- The tools of every server, listed concurrently.
-- @return a list of `{ server = name, name = tool name, tool = description }` (by server,
--   then in each server's order), and a table `{ name = err }` of the servers that failed
function Manager:list_tools()
  local names, per, failed = sorted_names(self), {}, {}
  each_concurrently(names, function(name)
    local c, err = self:client(name)
    local tools
    if c then tools, err = c:list_tools() end
    if tools then per[name] = tools else failed[name] = err end
  end)
  local out = {}
  for _, name in ipairs(names) do
    for _, t in ipairs(per[name] or {}) do
      out[#out + 1] = { server = name, name = t.name, tool = t }
    end
  end
  return out, failed
end

--- Pings every server concurrently; `status()` then shows `healthy` and
-- `latency` (seconds).
-- @treturn boolean true when every server answered
function Manager:ping_all()
  local all = true
  each_concurrently(sorted_names(self), function(name)
    local e = self.entries[name]
    if not e then return end
    local c, err = self:client(name)
    local started = core.now()
    local ok
    if c then ok, err = c:ping() end
    e.healthy = ok == true
    e.latency = ok and core.now() - started or nil
    e.ping_error = err or false
    if not ok then all = false end
  end)
  return all
end

--- The state of every server: `{ name = { state, kind, error, healthy, latency,
-- server_info, reconnects, era, protocol_version } }` (`era`: `"legacy"`, `"modern"`, or
-- `"in-process"`).
function Manager:status()
  local out = {}
  for name, e in pairs(self.entries) do
    local c = e.client
    out[name] = {
      state = c and c.state or "disconnected", kind = e.kind,
      error = (c and c.error) or e.error or nil,
      healthy = e.healthy, latency = e.latency, ping_error = e.ping_error or nil,
      server_info = c and c.server_info or nil, reconnects = c and c.reconnects or 0,
      era = e.kind == "in-process" and "in-process" or (c and c.era) or nil,
      protocol_version = c and c.protocol_version or nil,
    }
  end
  return out
end

--- Closes every server (concurrently). Idempotent; also `<close>`.
function Manager:close()
  if self.closed then return true end
  self.closed = true
  if self.health then self.health:cancel("the manager was closed") end
  local list = {}
  for _, e in pairs(self.entries) do
    if e.client then list[#list + 1] = e.client end
  end
  each_concurrently(list, function(c) c:close() end)
  return true
end
Manager.__close = Manager.close

M.Manager = Manager
return M
