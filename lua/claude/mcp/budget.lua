--- Tool budgets: how long a tool call may hold the loop, how long it may take, how many
-- instructions it may run and how much it may allocate (docs/budgets.md). A budget is given
-- per tool (`claude.tool{ budget = ... }`), per server (`claude.server(name, tools,
-- { budget = ... })`) and per session (option `tool_budget`); each field comes from the most
-- specific level that sets it, else from the defaults (run 1 s, memory 256 MiB). `false`
-- turns a field off, and `budget = false` every field of that level and above.
-- @module claude.mcp.budget
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

--- Marks `fn` as an xpcall message handler that returns at once, and returns it: an error
-- a budget raises where the call cannot yield calls it with hooks off (a handler that is not
-- marked gets a memory error instead, which calls none; docs/budgets.md). For the handlers
-- that report a tool's failure.
M.trusted_handler = core.trusted_handler

local FIELDS = { "run", "seconds", "instructions", "memory" }
local KNOWN = { run = true, seconds = true, instructions = true, memory = true }

--- The defaults, for every tool call (a session's in-process servers, `claudelua mcp` over
-- stdio and HTTP): `run` 1 s (one stretch holding the loop without yielding: a spinning tool)
-- and `memory` 256 MiB (net, over the call). Neither bites a normal tool, and together they
-- cost about 1% of a tool call (50,110 instructions against 49,494 without a budget,
-- callgrind, bench/budget_cost; docs/budgets.md): the watchdog sets the count hook only once
-- `run` has passed, the host's allocator keeps the memory limit. No `seconds` (a tool may
-- wait as long as it likes) and no `instructions` (it needs the count hook, which makes Lua
-- code about 1.5 times as slow). `false` at the tool, the server or the session
-- (`tool_budget`) turns them off; `claudelua mcp` has no session: its servers' and tools'
-- `budget` options do it there.
M.DEFAULTS = { run = 1, memory = 256 * 1024 * 1024 }

--- Checks a `budget` option: a table of limits (each a positive number or false) or false.
-- Raises a misuse naming `where` ("tool 'x'", "server 'y'", "option tool_budget").
-- @return the table (or false), or nil when `b` is nil
function M.check(b, where)
  if b == nil or b == false then return b end
  if type(b) ~= "table" then
    errors.misuse("bad budget for %s (table or false expected, got %s)", where,
      errors.typename(b))
  end
  for k, v in pairs(b) do
    if not KNOWN[k] then
      errors.misuse("bad budget for %s (unknown field '%s'; run, seconds, instructions or "
        .. "memory expected)", where, tostring(k))
    end
    if v ~= false and (type(v) ~= "number" or v ~= v or v <= 0) then
      errors.misuse("bad budget for %s (field '%s': a positive number or false expected, got "
        .. "%s)", where, k, tostring(v))
    end
  end
  return b
end

--- The limits of a call: each field from the most specific of `tool`, `server`, `session`
-- that sets it, else the default. `false` at a level turns everything off from there up.
-- @return `{ run =, seconds =, instructions =, memory = }` (absent fields: no limit), or
--   nil when no limit is left
function M.resolve(tool, server, session)
  local out, any = {}, false
  local levels = { tool, server, session, M.DEFAULTS } -- with holes: no ipairs
  for _, f in ipairs(FIELDS) do
    local v
    for i = 1, 4 do
      local level = levels[i]
      if level == false then v = false break end
      if level ~= nil and level[f] ~= nil then v = level[f] break end
    end
    if v then out[f], any = v, true end
  end
  return any and out or nil
end

--- The text of the `isError` result of a call its budget stopped.
function M.message(tool_name, err)
  local reason = err.reason or "budget"
  local what = {
    run = "held the event loop too long without yielding",
    seconds = "took longer than its time budget",
    instructions = "ran more instructions than its budget",
    memory = "allocated more memory than its budget",
  }
  return string.format("Tool '%s' was stopped: it %s (budget '%s' exceeded).", tool_name,
    what[reason] or "exceeded its budget", reason)
end

return M
