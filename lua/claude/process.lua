--- Child processes: write stdin, read stdout as lines, stderr as lines or
-- collected, wait for exit (after EOF on every pipe), kill with a grace
-- period. Children run in their own process group and do not outlive the
-- host.
-- @module claude.process
local core = require "claude.core"
local async = require "claude.async"
local queue = require "claude.queue"
local errors = require "claude.errors"

local M = {}

local DEFAULT_GRACE = 2
local STDERR_KEEP = 64 * 1024
local STDERR_LINE_KEEP = 4096

--- The environment for a child: this process's, minus the keys mapped to
-- `false`, plus the others in `env`; only `env` when `clear` is true.
function M.environment(env, clear)
  local out = clear and {} or core.environ()
  if env then
    for k, v in pairs(env) do
      if v == false then out[k] = nil else out[k] = tostring(v) end
    end
  end
  return out
end

local is_executable = core.is_executable

--- Finds `cmd` on PATH (a name with a slash is taken as it is).
-- @treturn string the path, or nil, err, "ENOENT"
function M.which(cmd, path)
  if cmd:find("/", 1, true) then
    -- absolute, so that a child with another cwd still finds it
    if cmd:sub(1, 1) ~= "/" then cmd = core.cwd() .. "/" .. cmd end
    if is_executable(cmd) then return cmd end
    return errors.fail("ENOENT", "no such file: " .. cmd)
  end
  path = path or os.getenv("PATH") or "/usr/local/bin:/usr/bin:/bin"
  for dir in path:gmatch("[^:]+") do
    local candidate = dir .. "/" .. cmd
    if is_executable(candidate) then
      if candidate:sub(1, 1) ~= "/" then candidate = core.cwd() .. "/" .. candidate end
      return candidate
    end
  end
  return errors.fail("ENOENT", "command not found on PATH: " .. cmd)
end

local Process = {}
Process.__index = Process
Process.__name = "claude.Process"

function Process:__tostring()
  return string.format("claude.Process (pid %s, %s)", tostring(self.pid),
    self.finished and "finished" or "running")
end

local function tail_append(self, line)
  if #line > STDERR_LINE_KEEP then -- one huge line must not hold the whole tail
    line = line:sub(1, STDERR_LINE_KEEP) .. string.format(" [%d bytes cut]",
      #line - STDERR_LINE_KEEP)
  end
  local parts = self.stderr_parts
  parts[#parts + 1] = line
  self.stderr_bytes = self.stderr_bytes + #line + 1
  while self.stderr_bytes > STDERR_KEEP and #parts > 1 do
    self.stderr_bytes = self.stderr_bytes - #table.remove(parts, 1) - 1
  end
end

--- Refuses what exec cannot take as given: a NUL ends a C string early (the child would
-- run with something else than asked), and '=' in an environment key sets another
-- variable. Raises (`errors.misuse`) with `what` before the reason, e.g. "bad option".
function M.check_exec_strings(what, cmd, args, env, cwd)
  local function nul(name, v)
    if type(v) == "string" and v:find("\0", 1, true) then
      errors.misuse("%s (%s contains a NUL byte: %q)", what, name,
        (v:gsub("%z", "\\0")):sub(1, 80))
    end
  end
  nul("the command", cmd)
  nul("cwd", cwd)
  if type(args) == "table" then
    for i, a in ipairs(args) do
      local flag = args[i - 1]
      nul(type(flag) == "string" and flag:match("^%-%-") and ("the value of " .. flag)
        or ("argument " .. i), a)
    end
  end
  for k, v in pairs(env) do
    if type(k) ~= "string" or k == "" or k:find("[=%z]") then
      errors.misuse("%s (environment key %q: a name without '=' or NUL expected)", what,
        (tostring(k):gsub("%z", "\\0")))
    end
    nul("the value of environment variable " .. k, v)
  end
end

--- Starts a process.
-- @tparam table spec `{ cmd, args = {...}, env = {...}, clear_env = false,
--   cwd = dir, stdin = "pipe"|"ignore"|"inherit", stdout = "lines"|"json"|
--   "inherit"|"ignore", stderr = "collect"|"lines"|"inherit"|"ignore"|fn,
--   max_line = bytes (default 64 MiB), group = true, pdeathsig = true,
--   eof_grace = seconds (after the exit, stop waiting for EOF on pipes a
--   grandchild keeps open; default: wait), user = name,
--   on_stdout = fn(value, err, line, kind) (each line or decoded value goes
--   to `fn` in place of `read_line`; nil, nil at EOF), on_exit = fn(code,
--   signal) (called once the child has exited and its pipes are done, before
--   `wait` returns), signal = fn(sig, deliver) (every signal for the child goes through
--   it, the stop ladder's too: a child that stands for a process elsewhere, over ssh say,
--   forwards them; `deliver(sig)` sends one to the local child) }`
-- @return the process, or nil, err, kind (a system error name)
local function spawn(spec)
  if type(spec) ~= "table" then
    errors.misuse("bad argument #1 to 'spawn' (table expected, got %s)", type(spec))
  end
  local cmd = spec[1] or spec.cmd
  if type(cmd) ~= "string" then
    errors.misuse("bad field [1] to 'spawn' (command string expected, got %s)", type(cmd))
  end
  local env = M.environment(spec.env, spec.clear_env)
  M.check_exec_strings("bad argument #1 to 'spawn'", cmd, spec.args, env, spec.cwd)
  local file, err, why = M.which(cmd, env.PATH)
  if not file then return nil, err, why end

  local self = setmetatable({ lines_q = queue.new(), stderr_parts = {}, stderr_bytes = 0,
    exited = async.event() }, Process)
  local stderr = spec.stderr or "collect"
  local stderr_mode, on_stderr = stderr, nil
  if type(stderr) == "function" then
    stderr_mode = "lines"
    on_stderr = function(line) if line then stderr(line) end end
  elseif stderr == "collect" then
    stderr_mode = "lines"
    on_stderr = function(line) if line then tail_append(self, line) end end
  elseif stderr == "lines" then
    self.stderr_q = queue.new()
    on_stderr = function(line, e)
      if line then self.stderr_q:push(line) else self.stderr_q:close(e) end
    end
  end
  for _, f in ipairs { "on_stdout", "on_exit", "signal" } do
    if spec[f] ~= nil and type(spec[f]) ~= "function" then
      errors.misuse("bad field '%s' to 'spawn' (function expected, got %s)", f, type(spec[f]))
    end
  end
  local q = self.lines_q
  local user_exit = spec.on_exit
  local raw, serr, scode = core.spawn_process {
    file = file, args = spec.args, env = env, cwd = spec.cwd, stdin = spec.stdin,
    stdout = spec.stdout or "lines", stderr = stderr_mode, max_line = spec.max_line,
    group = spec.group, pdeathsig = spec.pdeathsig, eof_grace = spec.eof_grace, user = spec.user,
    on_stdout = spec.on_stdout or function(value, e, line, kind)
      if value ~= nil then
        q:push(value)
      elseif e then
        -- an oversized line is an error in place of that line; reading goes on
        -- "json" for a line that is not JSON (stdout = "json"), with the line
        q:push(errors.new(kind == "overflow" and "overflow" or kind == "json" and "json_decode"
          or "read", e, { line = line }))
      else
        q:close()
      end
    end,
    on_stderr = on_stderr,
    on_exit = function(status, signal)
      self.finished = true
      -- (not `self.signal`: that would hide the method `signal` once the child exited)
      self.exit_code, self.exit_signal = status, signal
      if self.ladder_timer then self.ladder_timer:close(); self.ladder_timer = nil end
      if user_exit then user_exit(status, signal) end
      self.exited:set()
    end,
  }
  if not raw then return errors.fail(scode, serr) end
  self.raw = raw
  self.pid = raw:pid()
  self.on_signal = spec.signal
  return self
end
M.spawn = errors.public(spawn)

-- The C objects fail with (nil, message, code); ours with (nil, err, kind).
local function checked(ok, message, code)
  if ok then return ok end
  return errors.fail(code, message)
end

--- Writes data to stdin (queued when the pipe is full).
-- @return true | nil, err, kind
function Process:write(data)
  if self.closed then return errors.fail("closed", "process is closed") end
  return checked(self.raw:write(data))
end

--- Writes `value` as one line of JSON to stdin.
-- @return true | nil, err, kind
function Process:write_json(value)
  if self.closed then return errors.fail("closed", "process is closed") end
  return checked(self.raw:write_json(value))
end

--- Closes stdin (the child sees EOF).
function Process:close_stdin()
  if not self.closed and not self.stdin_closed then
    self.stdin_closed = true
    self.raw:close_stdin()
  end
end

--- Reads the next stdout line (with `stdout = "json"`, the next decoded
-- value).
-- @return the line; nil at EOF; nil, err on timeout, for a line over the
--   ceiling, or (json) for a line that is not JSON
function Process:read_line(timeout)
  local v, err = self.lines_q:pop(timeout)
  if v == nil then return nil, err end
  if errors.is(v) then return nil, v end
  return v
end

--- Iterates over stdout lines; raises on errors.
function Process:lines(timeout)
  return function()
    local line, err = self:read_line(timeout)
    if err then errors.blame("%s", errors.message(err)) end
    return line
  end
end

--- Reads the next stderr line (when spawned with `stderr = "lines"`).
function Process:read_stderr_line(timeout)
  if not self.stderr_q then
    return errors.blame("stderr is not read as lines (spawn with stderr = \"lines\")")
  end
  return self.stderr_q:pop(timeout)
end

--- The collected stderr (its last 64 KiB), when spawned with `stderr = "collect"`.
function Process:stderr()
  return table.concat(self.stderr_parts, "\n")
end

--- Waits until the child has exited and every pipe reached EOF.
-- @return exit code, signal number | nil, timeout error
function Process:wait(timeout)
  local ok, err = self.exited:wait(timeout)
  if not ok then return nil, err end
  return self.exit_code, self.exit_signal
end

-- Sends `sig` to the child: through the spec's `signal` function when it has one.
local function deliver(self, sig)
  local raw = self.raw
  if self.on_signal then
    return self.on_signal(sig, function(s) return raw:kill(s) end)
  end
  return raw:kill(sig)
end

--- Sends a signal ("term", "kill", "int", "hup", ... or a number).
function Process:signal(sig)
  if self.finished then return errors.fail("ESRCH", "process has exited") end
  return checked(deliver(self, sig))
end

-- The escalation ladder: each step is taken when the child is still running
-- after the grace period of the step before. One timer drives it, so it goes
-- on from inside a callback, where no wait is possible.
local LADDER_SIGNALS = { false, "term", "kill" }

local function climb(self, step, graces)
  if self.finished or self.closed_raw then return end
  local sig = LADDER_SIGNALS[step]
  if sig then deliver(self, sig) end
  if step == #LADDER_SIGNALS then return end
  if graces[step] == 0 then return climb(self, step + 1, graces) end
  local timer = self.ladder_timer
  if not timer then
    timer = core.timer()
    self.ladder_timer = timer
  end
  timer:start(graces[step], function() climb(self, step + 1, graces) end)
end

local function check_grace(value, name, default, fname)
  if value == nil then return default end
  if type(value) ~= "number" or value < 0 then
    errors.misuse("bad %s to '%s' (non-negative number expected, got %s)", name, fname,
      tostring(value))
  end
  return value
end

-- The ladder's grace periods from `close`'s or `stop`'s argument: a number is
-- the time between SIGTERM and SIGKILL.
local function graces_of(opts, fname)
  if opts == nil or type(opts) == "number" then
    return { 0, check_grace(opts, "argument #1", DEFAULT_GRACE, fname), DEFAULT_GRACE }
  end
  if type(opts) ~= "table" then
    errors.misuse("bad argument #1 to '%s' (number or table expected, got %s)", fname,
      type(opts))
  end
  return { check_grace(opts.eof_grace, "field 'eof_grace'", 0, fname),
    check_grace(opts.term_grace, "field 'term_grace'", DEFAULT_GRACE, fname),
    check_grace(opts.kill_grace, "field 'kill_grace'", DEFAULT_GRACE, fname) }
end

--- Stops the child: SIGTERM now, SIGKILL if it is still running after
-- `grace` seconds (default 2). Does not wait; see `wait`.
Process.kill = errors.public(function(self, grace)
  if self.finished then return false end
  local graces = graces_of(grace, "kill")
  if not self.ladder_timer then climb(self, 2, graces) end
  return true
end)

local function stop(self, graces)
  if self.finished or self.closed then return self.finished == true end
  self:close_stdin()
  if not self.ladder_timer then climb(self, 1, graces) end
  pcall(self.wait, self, graces[1] + graces[2] + graces[3])
  return self.finished == true
end

--- Stops the child and waits for it: closes its stdin, then, each after the
-- grace period of the step before while it is still running, SIGTERM and
-- SIGKILL. `opts` is a number (the grace between SIGTERM and SIGKILL) or
-- `{ eof_grace = 0, term_grace = 2, kill_grace = 2 }` (seconds after EOF,
-- after SIGTERM, after SIGKILL). From inside a callback, where no wait is
-- possible, the ladder goes on by itself and `stop` returns at once.
-- @return true once the child has exited, false if it has not (yet)
Process.stop = errors.public(function(self, opts)
  return stop(self, graces_of(opts, "stop"))
end)

--- Ends the process and frees it: a running child is stopped (see `stop`;
-- same argument), then whatever is left of its group is killed. Idempotent;
-- also the `<close>` handler.
Process.close = errors.public(function(self, opts)
  local graces = graces_of(opts, "close")
  if self.closed then return end
  stop(self, graces)
  self.closed = true
  if self.ladder_timer then self.ladder_timer:close(); self.ladder_timer = nil end
  self.closed_raw = true
  self.raw:close()
end)

Process.__close = function(self) self:close() end

M.Process = Process
return M
