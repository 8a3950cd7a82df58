--- claudelua: drive the Claude Code CLI from Lua and serve MCP tools
-- written in Lua, on one libuv loop.
--
-- `local claude = require "claude"` gives this table; submodules load on
-- first use.
-- @module claude

-- Lua 5.1 and LuaJIT (Neovim) cannot load the core: there `require "claude"` is the thin
-- client, which drives a `claudelua remote` process over a pipe (docs/embedding.md).
if _VERSION == "Lua 5.1" then return require "claude.thin" end

local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"

-- the loop's busy poll, where it can help (src/busy_poll.c; claude.busy_poll)
core.busy_poll_start()

local M = {
  _NAME = "claude",
  _VERSION = "claude " .. core.version,
  core = core,
}

-- Submodules loaded on first use, so that `require "claude"` stays cheap.
local lazy = {
  async = "claude.async",
  http = "claude.http",
  json = "claude.json",
  content = "claude.mcp.content",
  schema = "claude.schema",
  process = "claude.process",
  errors = "claude.errors",
  queue = "claude.queue",
  rpc = "claude.rpc",
  session = "claude.session",
  sessions = "claude.sessions",
  settings = "claude.session.settings",
  testing = "claude.testing",
  guard = "claude.guard",
  mcp = "claude.mcp",
  oauth = "claude.oauth",
  openapi = "claude.openapi",
  trace = "claude.trace",
  yaml = "claude.yaml",
  require = "claude.require", -- a function: `require` that a task may wait inside
}

-- Functions of submodules, also loaded on first use: the tool DSL.
local lazy_functions = {
  tool = "claude.mcp.tool", server = "claude.mcp.tool", resource = "claude.mcp.tool",
  resource_template = "claude.mcp.tool", prompt = "claude.mcp.tool",
  completion = "claude.mcp.tool", view = "claude.mcp.tool", renders_views = "claude.mcp.tool",
  view_result = "claude.mcp.tool",
  ssh = "claude.session.spawn",
  startup = "claude.session.warm", prewarm = "claude.session.warm",
}

-- Not cached in M: `require` is the one cache, so M always agrees with
-- package.loaded (test runners that unload modules between files, say). `__fields` names
-- them for the REPL's Tab (claude.repl), which calls no __index of a name not listed.
local fields = {}
for k in pairs(lazy) do fields[#fields + 1] = k end
for k in pairs(lazy_functions) do fields[#fields + 1] = k end
setmetatable(M, {
  __index = function(_, k)
    local name = lazy[k]
    if name then return require(name) end
    name = lazy_functions[k]
    if name then return require(name)[k] end
  end,
  __fields = fields,
})

--- Starts a task: `fn(...)` in a coroutine that may wait.
-- @function spawn
M.spawn = async.spawn

--- Sleeps; inside a task other tasks run meanwhile.
-- @function sleep
M.sleep = async.sleep

--- Where errors nobody waits for go (default: stderr).
-- @function on_error
M.on_error = async.on_error

--- The running task, or nil.
-- @function current
M.current = async.current

--- Waits for an event; the building block of every wait. See claude.async.
-- @function await
M.await = async.await

--- For an application with its own event loop: a descriptor that becomes
-- readable when claude has work to do.
-- @function pollfd
M.pollfd = core.pollfd

--- Seconds until claude's next timer (nil when none).
-- @function timeout
M.timeout = core.timeout

--- Handles due events, waiting at most `timeout` seconds.
-- @function step
M.step = core.step

--- Sets how long the loop polls before it sleeps while its turns come back
-- fast (microseconds, 0 to 1000; 0: off); returns the window before.
-- @tparam[opt] integer us the window; none: only returns it
function M.busy_poll(us)
  if us ~= nil and (math.type(us) ~= "integer" or us < 0 or us > 1000) then
    return errors.blame("bad argument #1 to 'busy_poll' (microseconds from 0 to 1000 "
      .. "expected, got " .. (math.type(us) or type(us)) .. " " .. tostring(us) .. ")")
  end
  return core.busy_poll(us)
end

--- The busy poll's fast turns and waits so far: {fast=, spins=, hits=, seconds=}.
-- @function busy_poll_stats
M.busy_poll_stats = core.busy_poll_stats

--- Events to poll `pollfd` for (always "r").
function M.events() return "r" end

local session_mod -- loaded on the first query/connect

local function sessions()
  session_mod = session_mod or require "claude.session"
  return session_mod
end

--- Runs one conversation with the CLI and iterates over its messages:
-- `for msg in claude.query("What is 2 + 2?", options) do ... end`.
-- `prompt` is a string, a user message table, or an iterator function that
-- returns user messages (strings or tables) until nil. Breaking out of the
-- loop closes the session (the iterator's fourth value is the session, so a
-- `for` closes it). Raises when the CLI cannot start or dies; the messages
-- are the CLI's own tables (`msg.type`, `msg.subtype`, ...).
-- @tparam string|table|function prompt
-- @tparam[opt] table options see docs/sessions.md
-- @return iterator, nil, nil, session
-- @function query
M.query = errors.public(function(prompt, options)
  local S = sessions()
  if type(prompt) ~= "string" and type(prompt) ~= "table" and type(prompt) ~= "function" then
    errors.misuse("bad argument #1 to 'query' (string, table or function expected, got %s)",
      type(prompt))
  end
  local session, open_err = S.open(options, "query") -- a bad option is a misuse: blames our caller
  if not session then error(open_err, 0) end
  return S.run_query(session, prompt)
end)

--- Starts a session for many turns: `local s <close> = claude.connect(options)`,
-- then `s:send(prompt)` and `for msg in s:receive() do ... end`.
-- Waits until the CLI is ready (its answer to initialize).
-- Raises for bad options (at the caller's line).
-- @return the session, or nil, an error, its kind
-- @function connect
M.connect = errors.public(function(options)
  local S = sessions()
  local session, err = S.open(options, "connect")
  if not session then return nil, err, err.kind end
  local info, ierr = session:wait_ready()
  if not info then
    session:close()
    return nil, ierr, ierr.kind
  end
  return session
end)

--- The text of a message: an assistant message's text blocks joined, a
-- user message's text, or a result's `result`.
function M.text(msg)
  if type(msg) ~= "table" then return nil end
  if msg.type == "result" then
    local r = msg.result
    return type(r) == "string" and r or nil
  end
  local m = msg.message
  if type(m) ~= "table" then return nil end
  local content = m.content
  if type(content) == "string" then return content end
  if type(content) ~= "table" then return nil end
  local first, parts
  for i = 1, #content do
    local block = content[i]
    local text = type(block) == "table" and block.type == "text" and block.text
    if type(text) == "string" then
      if not first then
        first = text -- the usual case: one text block, no table to join
      else
        parts = parts or { first }
        parts[#parts + 1] = text
      end
    end
  end
  return parts and table.concat(parts) or first
end

--- A can_use_tool answer that allows the call (optionally with changed
-- input or new permission rules).
function M.allow(updated_input, updated_permissions)
  return require("claude.session.permissions").allow(updated_input, updated_permissions)
end

--- A can_use_tool answer that denies the call.
function M.deny(message, interrupt)
  return require("claude.session.permissions").deny(message, interrupt)
end

--- Runs the loop until no task is pending (or `timeout` seconds passed).
-- @treturn boolean true when every task finished
function M.run(timeout)
  local deadline = timeout and core.now() + timeout
  while async.pending_count() > 0 do
    if deadline then
      local left = deadline - core.now()
      if left <= 0 then return false end
      core.step(left)
    elseif not core.run("once") then
      return async.pending_count() == 0
    end
  end
  return true
end

--- The `claudelua` host's entry: runs `chunk(...)` as the main task, with
-- SIGINT cancelling it, then waits for the tasks it left running. SIGINT also interrupts
-- Lua that holds the loop (a spinning tool, a loop at the top level): the coroutine
-- running gets the error "interrupted", as in lua.c, so that the loop can cancel; when the
-- loop cannot see the SIGINT within a second, or a second one comes first, the process ends
-- (status 130).
-- @return true | false, message, exit code and, for an error that carries a `command` (the
--   `claudelua mcp` commands' own), that command's name, for the host to put before the message
function M._main(chunk, ...)
  -- so that a module whose main chunk waits can be required from a task
  require = require "claude.require" -- luacheck: ignore 121
  local main
  local interrupted, hooked = false, false
  -- watching before the chunk starts: it runs until its first wait at once
  local sigint = core.signal("int", function()
    if M._on_interrupt and M._on_interrupt() then -- the REPL's (claude.repl)
      hooked = true
      return
    end
    if interrupted then os.exit(130, true) end
    interrupted = true
    if main then main:cancel("interrupted") end
  end, true, true)
  main = async.spawn_observed(chunk, ...)
  if interrupted then main:cancel("interrupted") end
  local ok, err
  local pok, jok, jerr = pcall(main.join, main)
  if pok then ok, err = jok, jerr else ok, err = false, jok end
  -- an interrupt that ended the main task before the loop ran the watcher
  interrupted = interrupted or (not hooked and core.interrupted("int"))
  if ok and not interrupted then
    -- like a program whose threads are still running: wait for them
    local rok, rerr = pcall(M.run)
    if not rok then ok, err = false, rerr end
    -- and, as Node does, for the HTTP servers still listening, until they close (or SIGINT)
    local http_server = package.loaded["claude.http.server"]
    while ok and http_server and http_server.holding() > 0 and not interrupted do
      core.run("once")
      rok, rerr = pcall(M.run)
      if not rok then ok, err = false, rerr end
    end
  end
  if session_mod then pcall(session_mod.close_all) end
  -- the spans still queued (the sessions' last ones among them) go before the end
  local trace_mod = package.loaded["claude.trace"]
  if trace_mod and trace_mod.config then pcall(trace_mod.flush) end
  sigint:close()
  if interrupted then return false, "interrupted", 130 end
  if ok then return true end
  -- a command's own error (claudelua mcp ...): its message, after the command's name
  if errors.is(err) and err.command then return false, err.message, 1, err.command end
  local msg = tostring(err)
  if type(err) == "table" and err.traceback then msg = msg .. "\n" .. err.traceback end
  return false, msg, 1
end

return M
