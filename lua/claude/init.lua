--- claudelua: drive the Claude Code CLI from Lua and serve MCP tools
-- written in Lua, on one libuv loop.
--
-- `local claude = require "claude"` gives this table; submodules load on
-- first use.
-- @module claude
local core = require "claude.core"
local async = require "claude.async"

local M = {
  _NAME = "claude",
  _VERSION = "claude " .. core.version,
  core = core,
}

-- Submodules loaded on first use, so that `require "claude"` stays cheap.
local lazy = {
  json = "claude.json",
  content = "claude.content",
  schema = "claude.schema",
  process = "claude.process",
  errors = "claude.errors",
  queue = "claude.queue",
}

-- Functions of submodules, also loaded on first use: the tool DSL.
local lazy_functions = {
  tool = "claude.tool", server = "claude.tool", resource = "claude.tool",
  resource_template = "claude.tool", prompt = "claude.tool",
}

setmetatable(M, {
  __index = function(t, k)
    local name = lazy[k]
    if name then
      local mod = require(name)
      rawset(t, k, mod)
      return mod
    end
    name = lazy_functions[k]
    if name then
      local f = require(name)[k]
      rawset(t, k, f)
      return f
    end
  end,
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

--- Events to poll `pollfd` for (always "r").
function M.events() return "r" end

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
-- SIGINT cancelling it, then waits for the tasks it left running.
-- @return true | false, message, exit code
function M._main(chunk, ...)
  local main = async.spawn_observed(chunk, ...)
  local interrupted = false
  local sigint = core.signal("int", function()
    if interrupted then os.exit(130, true) end
    interrupted = true
    main:cancel("interrupted")
  end, true)
  local ok, err
  local pok, jok, jerr = pcall(main.join, main)
  if pok then ok, err = jok, jerr else ok, err = false, jok end
  if ok and not interrupted then
    -- like a program whose threads are still running: wait for them
    local rok, rerr = pcall(M.run)
    if not rok then ok, err = false, rerr end
  end
  sigint:close()
  if interrupted then return false, "interrupted", 130 end
  if ok then return true end
  local msg = tostring(err)
  if type(err) == "table" and err.traceback then msg = msg .. "\n" .. err.traceback end
  return false, msg, 1
end

return M
