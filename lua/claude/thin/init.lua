--- The thin client: what `require` gives for "claude" in Lua 5.1, LuaJIT and Neovim
-- (docs/embedding.md).
-- The same `claude.query`, `claude.tool`, `claude.server` and `claude.mcp` as on Lua 5.4,
-- run by a `claudelua remote` process over its own pipe, on the host's own loop (Neovim's
-- `vim.loop`, or luv). The tools run here, inside the host, called across the pipe.
-- Waits are tasks (coroutines): the host's loop never blocks.
-- @module claude.thin
local json = require "claude.thin.json"
local peer_mod = require "claude.thin.peer"
local process = require "claude.thin.process"
local tasks = require "claude.thin.tasks"

local M = { _NAME = "claude", _VERSION = "claude thin 0.1.0", json = json, thin = true }

M.PROTOCOL = 1 -- claude.remote's

local config = { cmd = "claudelua", env = {} }
local state = { peer = nil, proc = nil, servers = {} }

local function misuse(level, fmt, ...)
  error(string.format(fmt, ...), level + 1)
end

local function default_host()
  local vim = rawget(_G, "vim")
  if vim and vim.loop then
    return vim.loop, vim.schedule, function(err)
      vim.schedule(function() vim.notify("claude: " .. tostring(err), vim.log.levels.ERROR) end)
    end
  end
  local ok, uv = pcall(require, "luv")
  return ok and uv or nil, nil, nil
end

--- Sets up the client before its first use (all optional): `claudelua` (the command,
-- default "claudelua" on PATH), `demo` (true, or a scenario file: every query runs in demo
-- mode), `env` (changes to the remote's environment), `uv` (the loop's luv module, default
-- `vim.loop` or `require "luv"`), `schedule(fn)` (where callbacks may use the host's API,
-- default `vim.schedule` in Neovim), `on_error(err)` (errors nobody waits for).
function M.setup(opts)
  opts = opts or {}
  if type(opts) ~= "table" then misuse(2, "bad argument #1 to 'setup' (table expected)") end
  if opts.claudelua then config.cmd = opts.claudelua end
  for k, v in pairs(opts.env or {}) do config.env[k] = v end
  if opts.demo ~= nil then
    config.env.CLAUDELUA_DEMO = opts.demo == true and "1" or opts.demo or false
  end
  local host = tasks.host
  if opts.uv then host.uv = opts.uv end
  if opts.schedule then host.schedule = opts.schedule end
  if opts.on_error then host.report = opts.on_error end
  return M
end

do -- the host's loop, found once
  local uv, schedule, report = default_host()
  tasks.host.uv = uv
  if schedule then tasks.host.schedule = schedule end
  if report then tasks.host.report = report end
end

M.spawn, M.sleep, M.current = tasks.spawn, tasks.sleep, tasks.current

--- As on Lua 5.4: `arm(done)`; returns true, ... or false, err (a `timeout`).
function M.await(arm, timeout) return tasks.await(arm, timeout) end

---------------------------------------------------------------------------
-- Tools and servers: described here, served by the remote, run here.

local Server = {}
Server.__index = Server
Server.__tostring = function(s) return "claude.thin.Server (" .. s.name .. ")" end

--- `claude.tool(name, [description,] [schema,] execute [, options])`, or the table form
-- `claude.tool{ name =, description =, input_schema =, execute =, ... }`.
function M.tool(name, ...)
  local spec
  if type(name) == "table" then
    spec = {}
    for k, v in pairs(name) do spec[k] = v end
  else
    spec = { name = name }
    local args, n, i = { ... }, select("#", ...), 1
    if type(args[i]) == "string" then spec.description, i = args[i], i + 1 end
    if type(args[i]) == "table" then spec.input_schema, i = args[i], i + 1 end
    spec.execute, i = args[i], i + 1
    if i <= n and type(args[i]) == "table" then
      for k, v in pairs(args[i]) do spec[k] = v end
    end
  end
  if type(spec.name) ~= "string" then
    misuse(2, "bad field 'name' to 'tool' (string expected, got %s)", type(spec.name))
  end
  if type(spec.execute) ~= "function" then
    misuse(2, "bad field 'execute' to 'tool' (function expected, got %s)", type(spec.execute))
  end
  return spec
end

--- `claude.server(name, tools)`: an in-process server of the tools; give it to a session
-- in `mcp_servers`.
function M.server(name, items, options)
  if type(name) ~= "string" then
    misuse(2, "bad argument #1 to 'server' (string expected, got %s)", type(name))
  end
  if options ~= nil then
    misuse(2, "bad argument #3 to 'server' (server options do not cross the pipe yet)")
  end
  local by_name = {}
  for i, t in ipairs(items or {}) do
    if type(t) ~= "table" or type(t.execute) ~= "function" then
      misuse(2, "bad item #%d to 'server' (a claude.tool expected)", i)
    end
    by_name[t.name] = t
  end
  return setmetatable({ name = name, tools = items or {}, by_name = by_name }, Server)
end

--- The names the CLI knows the tools by, for `allowed_tools`.
function Server:tool_names()
  local names = {}
  for i, t in ipairs(self.tools) do names[i] = "mcp__" .. self.name .. "__" .. t.name end
  return names
end

-- What the remote needs of a server: each tool without its function.
local function describe(server)
  local tools = json.array()
  for i, t in ipairs(server.tools) do
    local d = {}
    for k, v in pairs(t) do
      if k ~= "execute" then d[k] = v end
    end
    tools[i] = d
  end
  return { tools = tools }
end

-- The remote asks for a tool of ours: runs it in this task and answers with its result.
local function run_tool(params)
  local server = state.servers[params.server]
  local t = server and server.by_name[params.tool]
  if not t then error("no tool '" .. tostring(params.tool) .. "' on this host", 0) end
  local args = params.arguments
  if args == json.null then args = {} end
  local result, err = t.execute(args, { server = params.server, tool = params.tool })
  if result == nil and err ~= nil then error(tostring(err), 0) end
  return result
end

---------------------------------------------------------------------------
-- The remote process, started on first use.

local streams = {} -- a query's id -> the query waiting for its messages

local function on_notification(method, params)
  if method ~= "message" or type(params) ~= "table" then return end
  local q = streams[params.stream]
  if q then q:push(params.message) end
end

local function connection()
  if state.peer then return state.peer end
  if not tasks.host.uv then
    error("claude: no event loop: run inside Neovim, or give claude.setup{ uv = require 'luv' }",
      3)
  end
  local peer, proc = process.start { cmd = config.cmd, env = config.env,
    handlers = { tool = run_tool }, on_notification = on_notification,
    on_exit = function() state.peer, state.proc = nil, nil end }
  if not peer then error(tostring(proc), 3) end
  state.peer, state.proc = peer, proc
  peer:start("initialize", { protocol = M.PROTOCOL }, function(result, err)
    if err then return end -- (the requests after it fail the same way)
    if type(result) ~= "table" or result.protocol ~= M.PROTOCOL then
      peer:fail(peer_mod.error("protocol", "claudelua remote speaks protocol "
        .. tostring(result and result.protocol) .. ", this client " .. M.PROTOCOL))
    end
  end)
  return peer
end

--- Stops the remote process (it is started again when needed).
function M.close()
  if state.proc then state.proc.close() end
  state.peer, state.proc = nil, nil
end

---------------------------------------------------------------------------
-- Queries

local Query = {}
Query.__index = Query

function Query:push(msg)
  self.tail = self.tail + 1
  self.queue[self.tail] = msg
  self:wake()
end

function Query:wake()
  local w = self.waiter
  if w then
    self.waiter = nil
    w()
  end
end

--- Stops the query (after a `break`: Lua 5.1 has no to-be-closed variables).
function Query:close()
  if self.finished then return end
  self.finished = true
  streams[self.id] = nil
  self.peer:cancel(self.id, "the host closed the query")
  self:wake()
end

local function check_data(value, where, seen)
  local t = type(value)
  if t == "function" or t == "userdata" or t == "thread" then
    misuse(4, "bad option '%s' to 'query' (a %s cannot cross the pipe to claudelua remote)",
      where, t)
  end
  if t == "table" and not seen[value] then
    seen[value] = true
    for k, v in pairs(value) do check_data(v, where .. "." .. tostring(k), seen) end
  end
end

-- The options as the remote takes them: our servers described, the rest as data.
local function wire_options(options)
  local wired, servers = {}, {}
  for k, v in pairs(options or {}) do
    if k == "mcp_servers" then
      local entries = {}
      for name, entry in pairs(v) do
        if getmetatable(entry) == Server then
          servers[name] = describe(entry)
          state.servers[name] = entry
        elseif type(entry) == "table" and entry.remote_client then
          entries[name] = { remote_client = entry.remote_client }
        else
          check_data(entry, "mcp_servers." .. name, {})
          entries[name] = entry
        end
      end
      wired.mcp_servers = entries
    else
      check_data(v, k, {})
      wired[k] = v
    end
  end
  return wired, servers
end

--- `for msg in claude.query(prompt, options) do ... end`, inside a task (`claude.spawn`):
-- each message waits without blocking the loop. Options are those of Lua 5.4 that are data,
-- and `mcp_servers` may hold `claude.server`s and `claude.mcp` clients.
-- @return iterator, nil, nil, query (`query:close()` stops it)
function M.query(prompt, options)
  if type(prompt) ~= "string" and type(prompt) ~= "table" then
    misuse(2, "bad argument #1 to 'query' (string or table expected, got %s)", type(prompt))
  end
  if options ~= nil and type(options) ~= "table" then
    misuse(2, "bad argument #2 to 'query' (table expected, got %s)", type(options))
  end
  local wired, servers = wire_options(options)
  local peer = connection()
  local q = setmetatable({ queue = {}, head = 1, tail = 0, finished = false, peer = peer }, Query)
  q.id = peer:start("query", { prompt = prompt, options = wired, servers = servers },
    function(_, err)
      streams[q.id] = nil
      q.finished, q.error = true, err
      q:wake()
    end)
  if not q.finished then streams[q.id] = q end
  -- (params.stream: the id the messages come under, the request's own)
  local function iterate()
    while true do
      local msg = q.queue[q.head]
      if msg ~= nil then
        q.queue[q.head] = nil
        q.head = q.head + 1
        return msg
      end
      if q.finished then
        if q.error and q.error.kind ~= "cancelled" then error(q.error, 0) end
        return nil
      end
      tasks.await(function(done) q.waiter = done end)
    end
  end
  return iterate, nil, nil, q
end

--- The text of a message, as on Lua 5.4.
function M.text(msg)
  if type(msg) ~= "table" then return nil end
  if msg.type == "result" then return type(msg.result) == "string" and msg.result or nil end
  local m = msg.message
  local content = type(m) == "table" and m.content
  if type(content) == "string" then return content end
  if type(content) ~= "table" then return nil end
  local parts = {}
  for _, block in ipairs(content) do
    if type(block) == "table" and block.type == "text" then parts[#parts + 1] = block.text end
  end
  return #parts > 0 and table.concat(parts) or nil
end

M.mcp = require("claude.thin.mcp")(M, connection)

return M
