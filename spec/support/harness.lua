--- Test harness: the path to the built host, running commands, and a guard
-- that fails a spec which leaks a libuv handle, a registry ref or a task.
local core = require "claude.core"
local async = require "claude.async"
require "claude" -- what it opens once (the loop's busy poll) is in every spec's baseline

local M = {}

M.build = os.getenv("CLAUDELUA_BUILD") or "build"
M.claudelua = M.build .. "/claudelua"
M.root = core.cwd()
-- A sanitized core.so needs the sanitizer runtimes preloaded into lua5.4.
local preload = os.getenv("CLAUDELUA_SANITIZER_PRELOAD")
M.lua_preload = preload and ("LD_PRELOAD='" .. preload .. "' ") or ""

--- Runs a shell command; returns exit code, stdout, stderr.
function M.sh(cmd)
  local out, err = os.tmpname(), os.tmpname()
  local ok, how, code = os.execute(cmd .. " >" .. out .. " 2>" .. err)
  local function slurp(p)
    local f = assert(io.open(p, "rb"))
    local s = f:read("a")
    f:close()
    os.remove(p)
    return s
  end
  if how == "signal" then code = 128 + code end
  return ok and 0 or code, slurp(out), slurp(err)
end

--- Single-quotes a string for the shell.
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

--- Makes a new temporary directory; returns its path.
function M.tempdir()
  local p = io.popen("mktemp -d")
  local dir = p:read("l")
  p:close()
  return dir
end

--- Writes `text` to a new temporary file; returns its path.
function M.tempfile(text, suffix)
  local path = os.tmpname() .. (suffix or "")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

-- Lets pending close callbacks run: inside a task (the specs run in one
-- under `busted --lua=claudelua`) by yielding to the loop, else by running it.
--- The values an iterator gives, in a list (e.g. every message of a query).
function M.collect(iter)
  local out = {}
  for msg in iter do out[#out + 1] = msg end
  return out
end

--- The messages of `msgs` of type `t` (and `subtype`, if given).
function M.of_type(msgs, t, subtype)
  local out = {}
  for _, m in ipairs(msgs) do
    if m.type == t and (subtype == nil or m.subtype == subtype) then out[#out + 1] = m end
  end
  return out
end

--- The last message of type `t`.
function M.last_of(msgs, t)
  local list = M.of_type(msgs, t)
  return list[#list]
end

local function drain()
  if async.current() then
    for _ = 1, 3 do async.sleep(0.001) end -- 0 could all run in one timer pass
  else
    for _ = 1, 20 do core.run("nowait") end
  end
end

--- True when the specs run inside a task (busted under claudelua): code
-- written for the outside of tasks cannot be exercised there.
function M.in_task()
  return async.current() ~= nil
end

--- A spec body that runs `fn` in a task and waits for it (at most `timeout` seconds):
-- `it("...", harness.task(function() ... end, 30))`. An error in the task fails the spec.
function M.task(fn, timeout)
  return function()
    local t = async.spawn(fn)
    local ok, err = t:join(timeout)
    if not ok then error(err, 0) end
  end
end

-- Work a support module must do before the first spec's handle count, where it can wait:
-- not while it is being required (the claudelua host runs busted in a task, and a task
-- cannot yield across require's C call).
local prepare = {}
function M.prepare(fn) prepare[#prepare + 1] = fn end

local baseline
--- For before_each: records the handles and refs in use.
function M.before()
  while #prepare > 0 do table.remove(prepare, 1)() end
  drain()
  baseline = core.stats()
  baseline.tasks = async.pending_count()
end

--- For after_each: fails a spec that left handles, refs or tasks behind.
function M.after()
    drain()
    local now = core.stats()
    local tasks = async.pending_count() - baseline.tasks
    assert(tasks == 0, tasks .. " task(s) still pending after the spec")
    if now.handles ~= baseline.handles then
      local kinds = {}
      for kind, n in pairs(now.objects) do kinds[#kinds + 1] = kind .. "=" .. n end
      error(string.format("libuv handles leaked: %d before, %d after (live objects: %s)",
        baseline.handles, now.handles, table.concat(kinds, ", ")), 0)
    end
    assert(now.refs == baseline.refs,
      string.format("registry refs leaked: %d before, %d after", baseline.refs, now.refs))
end

return M
