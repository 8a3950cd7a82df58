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
-- @treturn string|nil the path, or nil and a message
function M.which(cmd, path)
  if cmd:find("/", 1, true) then
    -- absolute, so that a child with another cwd still finds it
    if cmd:sub(1, 1) ~= "/" then cmd = core.cwd() .. "/" .. cmd end
    if is_executable(cmd) then return cmd end
    return nil, "ENOENT: no such file: " .. cmd, "ENOENT"
  end
  path = path or os.getenv("PATH") or "/usr/local/bin:/usr/bin:/bin"
  for dir in path:gmatch("[^:]+") do
    local candidate = dir .. "/" .. cmd
    if is_executable(candidate) then
      if candidate:sub(1, 1) ~= "/" then candidate = core.cwd() .. "/" .. candidate end
      return candidate
    end
  end
  return nil, "ENOENT: command not found on PATH: " .. cmd, "ENOENT"
end

local Process = {}
Process.__index = Process
Process.__name = "claude.Process"

function Process:__tostring()
  return string.format("claude.Process (pid %s, %s)", tostring(self.pid),
    self.finished and "finished" or "running")
end

local function tail_append(self, line)
  local parts = self.stderr_parts
  parts[#parts + 1] = line
  self.stderr_bytes = self.stderr_bytes + #line + 1
  while self.stderr_bytes > STDERR_KEEP and #parts > 1 do
    self.stderr_bytes = self.stderr_bytes - #table.remove(parts, 1) - 1
  end
end

--- Starts a process.
-- @tparam table spec `{ cmd, args = {...}, env = {...}, clear_env = false,
--   cwd = dir, stdin = "pipe"|"ignore"|"inherit", stdout = "lines"|"json"|
--   "inherit"|"ignore", stderr = "collect"|"lines"|"inherit"|"ignore"|fn,
--   max_line = bytes (default 64 MiB), group = true, pdeathsig = true,
--   eof_grace = seconds (after the exit, stop waiting for EOF on pipes a
--   grandchild keeps open; default: wait), user = name }`
-- @return the process, or nil, message, code
function M.spawn(spec)
  if type(spec) ~= "table" then
    error("bad argument #1 to 'spawn' (table expected, got " .. type(spec) .. ")", 2)
  end
  local cmd = spec[1] or spec.cmd
  if type(cmd) ~= "string" then
    error("bad field [1] to 'spawn' (command string expected, got " .. type(cmd) .. ")", 2)
  end
  local env = M.environment(spec.env, spec.clear_env)
  local file, err, code = M.which(cmd, env.PATH)
  if not file then return nil, err, code end

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
  local q = self.lines_q
  local raw, serr, scode = core.spawn_process {
    file = file, args = spec.args, env = env, cwd = spec.cwd, stdin = spec.stdin,
    stdout = spec.stdout or "lines", stderr = stderr_mode, max_line = spec.max_line,
    group = spec.group, pdeathsig = spec.pdeathsig, eof_grace = spec.eof_grace, user = spec.user,
    on_stdout = function(value, e, line, kind)
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
      self.exit_code, self.signal = status, signal
      if self.kill_timer then self.kill_timer:close(); self.kill_timer = nil end
      self.exited:set()
    end,
  }
  if not raw then return nil, serr, scode end
  self.raw = raw
  self.pid = raw:pid()
  return self
end

--- Writes data to stdin (queued when the pipe is full).
-- @return true | nil, err, code
function Process:write(data)
  return self.raw:write(data)
end

--- Closes stdin (the child sees EOF).
function Process:close_stdin()
  if not self.closed then self.raw:close_stdin() end
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
    if err then error(err, 2) end
    return line
  end
end

--- Reads the next stderr line (when spawned with `stderr = "lines"`).
function Process:read_stderr_line(timeout)
  if not self.stderr_q then
    error("stderr is not read as lines (spawn with stderr = \"lines\")", 2)
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
  return self.exit_code, self.signal
end

--- Sends a signal ("term", "kill", "int", "hup", ... or a number).
function Process:signal(sig)
  if self.finished then return nil, "process has exited", "ESRCH" end
  return self.raw:kill(sig)
end

--- Stops the child: SIGTERM now, SIGKILL if it is still running after
-- `grace` seconds (default 2). Does not wait; see `wait`.
function Process:kill(grace)
  if self.finished then return false end
  self.raw:kill("term")
  if not self.kill_timer then
    self.kill_timer = core.timer()
    self.kill_timer:start(grace or DEFAULT_GRACE, function()
      if not self.finished then self.raw:kill("kill") end
    end)
  end
  return true
end

--- Ends the process and frees it: a running child gets SIGTERM, then
-- SIGKILL after `grace` seconds. Idempotent; also the `<close>` handler.
function Process:close(grace)
  if self.closed then return end
  self.closed = true
  if not self.finished then
    self.raw:close_stdin()
    self:kill(grace)
    -- wait when waiting is possible here (not from inside a callback)
    pcall(self.wait, self, (grace or DEFAULT_GRACE) + 1)
  end
  if self.kill_timer then self.kill_timer:close(); self.kill_timer = nil end
  self.raw:close()
end
Process.__close = Process.close

M.Process = Process
return M
