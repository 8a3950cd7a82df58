--- Running the CLI somewhere else: the `spawn` session option and `claude.ssh`.
--
-- A session starts its CLI through `spawn(spec)`, by default `claude.process.spawn`. The
-- spec is what `claude.process.spawn` takes (the command, `args`, `env`, `cwd`, and the
-- session's readers: `stdout = "json"`, `on_stdout`, `stderr`, `on_exit`, ...) plus
-- `command` and `env_changes` (the variables the session sets, over those the CLI would
-- inherit: its entrypoint, `options.env`, ...). A custom `spawn` returns a
-- `claude.process` (or nil, err): usually `claude.process.spawn` of another command that
-- runs the CLI where it should, with the same readers.
--
-- `claude.ssh(opts)` is such a function for another host: `ssh host sh -c '...'` where a
-- small POSIX shell wrapper reads the variables from the first lines of its input (so no
-- secret is on a command line), enters the working directory, says its process id on
-- stderr, and execs the CLI. Signals for the CLI (an interrupt by SIGINT, the stop
-- ladder's SIGTERM and SIGKILL) go to that process group on the host by a second ssh.
-- @module claude.session.spawn
local async = require "claude.async"
local process = require "claude.process"
local errors = require "claude.errors"

local M = {}

local PID_MARK = "claudelua-remote-pid "

-- The wrapper, as the remote login shell receives it: `sh -c SCRIPT claudelua DIR CMD ARGS`.
-- Lines `NAME=value` export a variable, `-NAME` removes one, an empty line ends them.
local WRAPPER = table.concat({
  'echo "' .. PID_MARK .. '$$" >&2',
  'while IFS= read -r l && [ -n "$l" ]; do',
  '  case "$l" in -*) unset "${l#-}" ;; *) export "$l" ;; esac',
  'done',
  'if [ -n "$1" ]; then cd "$1" || exit 126; fi',
  'shift',
  'exec "$@"',
}, "\n")

--- Quotes `s` for a POSIX shell.
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
local quote = M.quote

local SIGNALS = { int = "INT", term = "TERM", kill = "KILL", hup = "HUP", quit = "QUIT",
  usr1 = "USR1", usr2 = "USR2", stop = "STOP", cont = "CONT" }

local SSH_OPTS = { host = "string", port = "number|string", user = "string",
  identity = "string", options = "table", ssh = "string", forward = "table",
  connect_timeout = "number" }

-- The ssh command line up to the host: `ssh [-p P] [-i K] [-l U] -o ... -T host`.
local function ssh_argv(opts)
  local argv = { "-T", "-o", "BatchMode=yes" }
  if opts.port then argv[#argv + 1] = "-p"; argv[#argv + 1] = tostring(opts.port) end
  if opts.identity then argv[#argv + 1] = "-i"; argv[#argv + 1] = opts.identity end
  if opts.user then argv[#argv + 1] = "-l"; argv[#argv + 1] = opts.user end
  if opts.connect_timeout then
    argv[#argv + 1] = "-o"
    argv[#argv + 1] = "ConnectTimeout=" .. tostring(math.ceil(opts.connect_timeout))
  end
  for _, o in ipairs(opts.options or {}) do
    argv[#argv + 1] = "-o"
    argv[#argv + 1] = o
  end
  argv[#argv + 1] = "--"
  argv[#argv + 1] = opts.host
  return argv
end

-- The variables for the remote CLI, as the wrapper's input lines.
local function env_lines(changes, forward)
  local names = {}
  for k in pairs(changes or {}) do names[#names + 1] = k end
  table.sort(names)
  local out = {}
  local function line(k, v)
    if not k:match("^[%a_][%w_]*$") then
      errors.misuse("bad field 'env' to 'connect' (%q cannot be sent over ssh: not a shell "
        .. "variable name)", k)
    end
    if v == false then
      out[#out + 1] = "-" .. k
    else
      v = tostring(v)
      if v:find("[\n\r%z]") then
        errors.misuse("bad field 'env' to 'connect' (the value of %s cannot be sent over ssh: "
          .. "it holds a line break)", k)
      end
      out[#out + 1] = k .. "=" .. v
    end
  end
  for _, k in ipairs(names) do line(k, changes[k]) end
  for _, k in ipairs(forward or {}) do
    local v = os.getenv(k)
    if v and (changes or {})[k] == nil then line(k, v) end
  end
  out[#out + 1] = ""
  return table.concat(out, "\n") .. "\n"
end

--- A `spawn` function that runs the CLI on another host over OpenSSH.
-- @tparam table opts `{ host = name (required), port =, user =, identity = key file,
--   options = { "Name=value", ... } (ssh -o), ssh = path ("ssh"), connect_timeout = s,
--   forward = { "NAME", ... } (variables of this process to send as well) }`
-- @return function(spec) -> process | nil, err, kind
-- @function ssh
M.ssh = errors.public(function(opts)
  errors.check(opts, 1, "ssh", "table")
  for k, v in pairs(opts) do
    local want = type(k) == "string" and SSH_OPTS[k]
    if not want then errors.unknown_field(k, SSH_OPTS, "ssh") end
    errors.check_field(v, k, "ssh", want)
  end
  if type(opts.host) ~= "string" or opts.host == "" then
    errors.bad_field("host", "ssh", "a host name expected")
  end
  local ssh = opts.ssh or "ssh"
  local base = ssh_argv(opts)

  return function(spec)
    local input = env_lines(spec.env_changes, opts.forward)
    local remote = { "exec", "sh", "-c", quote(WRAPPER), "claudelua",
      quote(spec.cwd or "") }
    remote[#remote + 1] = quote(spec.command or spec[1])
    for _, a in ipairs(spec.args or {}) do remote[#remote + 1] = quote(a) end
    local args = {}
    for i, a in ipairs(base) do args[i] = a end
    args[#args + 1] = table.concat(remote, " ")

    local remote_pid, proc
    -- a second ssh carries a signal to the CLI's process group on the host
    local function remote_kill(sig)
      if not remote_pid then return nil end
      local name = type(sig) == "number" and tostring(sig) or SIGNALS[sig] or tostring(sig)
      local kill_args = {}
      for i, a in ipairs(base) do kill_args[i] = a end
      kill_args[#kill_args + 1] = "kill -s " .. name .. " -- -" .. remote_pid
        .. " 2>/dev/null || kill -s " .. name .. " " .. remote_pid
      if type(sig) == "number" then
        kill_args[#kill_args] = "kill -" .. name .. " -- -" .. remote_pid
      end
      local p = process.spawn { ssh, args = kill_args, stdin = "ignore", stdout = "ignore",
        stderr = "ignore" }
      if not p then return false end
      -- it runs on by itself (the stop ladder signals from a callback, where no wait is
      -- possible); a task frees it once it is done
      async.spawn(function()
        p:wait(10)
        p:close(0)
      end)
      return true
    end

    local user_stderr = spec.stderr
    local child = {}
    for k, v in pairs(spec) do child[k] = v end
    child[1], child.cmd, child.command = ssh, nil, nil
    child.args, child.env, child.clear_env, child.cwd = args, process.environment(), true, nil
    child.env_changes = nil
    child.stderr = function(line)
      if not remote_pid and line:sub(1, #PID_MARK) == PID_MARK then
        local pid = line:sub(#PID_MARK + 1):match("^(%d+)$")
        if pid then
          remote_pid = pid
          if proc then proc.remote_pid = tonumber(pid) end
          return
        end
      end
      if type(user_stderr) == "function" then return user_stderr(line) end
    end
    child.signal = function(sig, deliver)
      -- the local ssh goes too on SIGKILL (the ladder's last step), or when the host cannot
      -- be told (the CLI has not said where it is yet)
      local sent = remote_kill(sig)
      if sig == "kill" or sig == 9 or not sent then return deliver(sig) end
      return true
    end
    local err, kind
    proc, err, kind = process.spawn(child)
    if not proc then return nil, err, kind end
    proc.remote_pid = tonumber(remote_pid)
    local ok, werr, wkind = proc:write(input)
    if not ok then
      proc:close(0)
      return nil, werr, wkind
    end
    return proc
  end
end)

--- Runs a custom `spawn` for the session; its failure (an error raised, or nil, err) is
-- a `connection` error, and a result that is not a `claude.process` a misuse.
function M.run(spawn, spec)
  local ok, proc, err = pcall(spawn, spec)
  if not ok then
    return errors.fail("connection", "the spawn function failed: " .. errors.message(proc))
  end
  if proc == nil then
    return errors.fail("connection", "the spawn function could not start the CLI: "
      .. errors.message(err))
  end
  if getmetatable(proc) ~= process.Process then
    errors.misuse("bad field 'spawn' (the function must return a claude.process, got %s)",
      errors.typename(proc))
  end
  return proc
end

return M
