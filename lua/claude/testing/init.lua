--- Testing agents and tools without the real CLI: session options that run
-- a scripted fake CLI (`claude.testing.fake_cli`) in its place.
--
--     local testing = require "claude.testing"
--     local opts, fake = testing.fake_cli [[
--       cli:expect_initialize()
--       local _, text = cli:expect_user()
--       cli:system_init()
--       cli:assistant("You said: " .. text)
--       cli:result()
--     ]]
--     for msg in claude.query("hi", testing.merge(opts, { model = "m" })) do ... end
--     local log = fake:read_log()   -- what the SDK sent: argv, env, messages
--     fake:cleanup()
--
-- See docs/testing.md.
-- @module claude.testing
local json = require "claude.json"
local errors = require "claude.errors"
local fake_cli = require "claude.testing.fake_cli"

local core = require "claude.core"

local M = {}

local function is_absolute(p) return p:sub(1, 1) == "/" end

-- A relative path made absolute against the current directory, so that it
-- still works when the session runs the CLI in another directory.
local function absolute(p)
  if is_absolute(p) then return p end
  return core.cwd() .. "/" .. p:gsub("^%./", "")
end

-- Each relative template of a search path made absolute.
local function absolute_search_path(path)
  local out = {}
  for template in path:gmatch("[^;]+") do out[#out + 1] = absolute(template) end
  return table.concat(out, ";")
end

-- The directory holding claude/ (this file is claude/testing/init.lua).
local function lua_dir()
  local src = debug.getinfo(1, "S").source
  local file = src:sub(1, 1) == "@" and src:sub(2) or "lua/claude/testing/init.lua"
  local dir = file:match("^(.*)/claude/testing/init%.lua$") or "lua"
  return absolute(dir)
end

-- Loaded from a file, the fake CLI program is the file beside this one;
-- compiled into the host (claudelua, libclaudelua) there is no such file, and
-- the program is a one-line launcher in a temporary file.
local embedded = debug.getinfo(1, "S").source:sub(1, 1) ~= "@"
-- (a plain lua5.3 finds the modules only once `require "claude"` has loaded the 5.3 module)
local LAUNCHER = 'if not package.preload["claude.testing.fake_cli"] then require "claude" end\n'
  .. 'require("claude.testing.fake_cli").main(...)\n'
-- On Lua 5.3 the Lua half is the module's own (build/lua5.3/claude.so, its text for 5.3):
-- the files of lua/ are 5.4's text, which 5.3 cannot load, so they stay off the fake's path.
local LUA53 = _VERSION == "Lua 5.3"

--- The path of the fake CLI program (absolute).
M.fake_cli_path = not embedded and lua_dir() .. "/claude/testing/fake_cli.lua" or nil

--- The Lua interpreter to run the fake with: this process's executable when
-- it is `claudelua` or a `lua`; in an embedding application, `claudelua`
-- from PATH when the modules are compiled in (no files for a `lua5.4` to
-- load), else `lua5.4` from PATH.
function M.interpreter()
  local exe = core.exepath()
  local name = exe and exe:match("[^/]+$") or ""
  if name:match("^claudelua") or name:match("^lua") then return exe end
  return embedded and "claudelua" or "lua5.4"
end

--- The environment the fake needs to find claudelua's modules under a plain
-- `lua5.4` (or `lua5.3`): this process's `package.path` and `package.cpath` (absolute),
-- with the directory of claude/ first (not on 5.3), as LUA_PATH and LUA_PATH_5_4 (_5_3).
function M.lua_env()
  local path = absolute_search_path(package.path)
  if not LUA53 then
    local dir = lua_dir()
    path = dir .. "/?.lua;" .. dir .. "/?/init.lua;" .. path
  end
  local cpath = absolute_search_path(package.cpath)
  local v = LUA53 and "_5_3" or "_5_4"
  return { LUA_PATH = path, ["LUA_PATH" .. v] = path,
    LUA_CPATH = cpath, ["LUA_CPATH" .. v] = cpath }
end

local temps = {}

-- The launcher, made again after `cleanup` removed it.
local function fake_cli_program()
  if not embedded then return M.fake_cli_path end
  local f = M.fake_cli_path and io.open(M.fake_cli_path, "rb")
  if f then
    f:close()
  else
    M.fake_cli_path = os.tmpname()
    f = assert(io.open(M.fake_cli_path, "wb"))
    f:write(LAUNCHER)
    f:close()
    temps[M.fake_cli_path] = true
  end
  return M.fake_cli_path
end

local function tempfile(text)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(text or "")
  f:close()
  temps[path] = true
  return path
end

local function remove(path)
  if path and temps[path] then
    os.remove(path)
    temps[path] = nil
  end
end

--- Removes every temporary file `fake_cli` made (scripts and logs).
function M.cleanup()
  for path in pairs(temps) do os.remove(path) end
  temps = {}
end

local Log = {}
Log.__index = Log
Log.__name = "claude.FakeCliLog"

function Log:__tostring()
  return ("claude.FakeCliLog (%d message%s received, %d run%s)"):format(#self,
    #self == 1 and "" or "s", #(self.runs or { self }), #(self.runs or { self }) == 1 and "" or "s")
end

--- The first message of `kind` matching `what` (a subtype, fields or a
-- predicate, as `cli:expect` takes them), or nil.
-- @function find
Log.find = errors.public(function(self, kind, what)
  for _, msg in ipairs(self) do
    if fake_cli.matches(msg, kind, what) then return msg end
  end
  return nil
end)

--- Every message of `kind` matching `what`, as a list.
-- @function find_all
Log.find_all = errors.public(function(self, kind, what)
  local out = {}
  for _, msg in ipairs(self) do
    if fake_cli.matches(msg, kind, what) then out[#out + 1] = msg end
  end
  return out
end)

--- The value of a flag of the CLI's argv, as `cli:flag` gives it.
Log.flag = fake_cli.Cli.flag
--- Every value of a repeated flag.
Log.flags = fake_cli.Cli.flags
--- True when the CLI got the flag.
Log.has_flag = fake_cli.Cli.has_flag

local function new_run(start)
  return setmetatable({
    argv = start.argv, env = start.env, cwd = start.cwd, pid = start.pid,
    session_id = start.session_id, script = start.script,
    sent = {}, malformed = {}, records = {}, stderr = "", eof = false,
  }, Log)
end

--- Reads a fake CLI's log: the list of messages the SDK sent (decoded), with
-- fields `argv` (the CLI's arguments), `env` (its environment), `sent`
-- (messages the fake sent), `malformed` (lines that were not JSON),
-- `stderr`, `eof` (stdin was closed), `exit_code`, `exit_message`, `records`
-- (every log record) and `runs` (one such list per CLI process, when the
-- SDK started several; the list itself is the first run).
-- Lists have `find(kind, what)` and `find_all(kind, what)`.
-- @return the log, or nil, an error, its kind (`"io"`)
function M.read_log(path)
  local f, err = io.open(path, "rb")
  if not f then return errors.fail("io", err) end
  local runs, run = {}, nil
  for line in f:lines() do
    local rec = json.decode(line)
    if type(rec) == "table" then
      if rec.event == "start" or run == nil then
        run = new_run(rec.event == "start" and rec or {})
        runs[#runs + 1] = run
      end
      run.records[#run.records + 1] = rec
      if rec.event == "received" then
        if rec.line:find("%S") then
          local msg = json.decode(rec.line)
          if type(msg) == "table" then
            run[#run + 1] = msg
          else
            run.malformed[#run.malformed + 1] = rec.line
          end
        end
      elseif rec.event == "sent" then
        run.sent[#run.sent + 1] = json.decode(rec.line) or rec.line
      elseif rec.event == "stderr" then
        run.stderr = run.stderr .. rec.text
      elseif rec.event == "eof" then
        run.eof = true
      elseif rec.event == "exit" then
        run.exit_code, run.exit_message = rec.code, rec.message
      end
    end
  end
  f:close()
  local log = runs[1] or new_run({})
  log.runs = runs
  return log
end

local Fake = {}
Fake.__index = Fake
Fake.__name = "claude.FakeCliHandle"

function Fake:__tostring()
  return "claude.FakeCliHandle (script " .. self.script .. ")"
end

--- Reads this fake's log (see `read_log`).
function Fake:read_log()
  if not self.log then return errors.blame("this fake CLI keeps no log (log = false)") end
  return M.read_log(self.log)
end

--- Removes this fake's temporary files. Idempotent; also `__close`.
function Fake:cleanup()
  remove(self.script)
  remove(self.log)
end
Fake.__close = Fake.cleanup

-- A string naming an existing file is a path; otherwise it is the script.
local function script_path(script)
  local f = io.open(script, "rb")
  if f then
    f:close()
    return absolute(script), false
  end
  if not script:find("\n", 1, true) and script:find("%.lua$") then
    errors.misuse("bad argument #1 to 'fake_cli' (no such script file: %s)", script)
  end
  return tempfile(script), true
end

--- Session options that run the fake CLI with `script`, for
-- `claude.query(prompt, options)` and `claude.connect(options)` (merge your
-- own options in with `merge`).
-- @tparam string script the path of a script file, or the script's source:
--   a chunk that gets `cli` (as `...` and as the name `cli`) and may return
--   `function(cli) ... end`
-- @tparam[opt] table opts `{ interpreter = path (default: this one),
--   log = path | false (default: a temporary file), env = {...} (added) }`
-- @return the options `{ cli_path = { interpreter, fake_cli.lua, script },
--   env = { LUA_PATH, LUA_CPATH, CLAUDELUA_FAKE_LOG, ... } }`
-- @return the fake: `script`, `log` (paths), `read_log()`, `cleanup()`
-- @function fake_cli
M.fake_cli = errors.public(function(script, opts)
  errors.check(script, 1, "fake_cli", "string")
  errors.check(opts, 2, "fake_cli", "table", true)
  opts = opts or {}
  local path = script_path(script)
  local log = opts.log
  if log == nil then log = tempfile("") end
  local env = M.lua_env()
  env.CLAUDELUA_FAKE_LOG = log or nil
  for k, v in pairs(opts.env or {}) do env[k] = v end
  local interpreter = opts.interpreter or M.interpreter()
  local options = {
    cli_path = { interpreter, fake_cli_program(), path },
    env = env,
  }
  local fake = setmetatable({ script = path, log = log or nil, options = options }, Fake)
  return options, fake
end)

--- Merges option tables left to right into a new table; `env` tables are
-- merged key by key rather than replaced.
function M.merge(...)
  local out = {}
  for i = 1, select("#", ...) do
    local t = select(i, ...)
    if t ~= nil then
      if type(t) ~= "table" then
        return errors.blame("bad argument #%d to 'merge' (table expected, got %s)", i, type(t))
      end
      for k, v in pairs(t) do
        if k == "env" and type(v) == "table" then
          local env = {}
          for ek, ev in pairs(out.env or {}) do env[ek] = ev end
          for ek, ev in pairs(v) do env[ek] = ev end
          out.env = env
        else
          out[k] = v
        end
      end
    end
  end
  return out
end

---------------------------------------------------------------------------
-- Replaying a recorded session (the play side: claude.testing.replay)

local Replay = {}
Replay.__index = Replay
Replay.__name = "claude.testing.Replay"

function Replay:__tostring()
  return "claude.testing.Replay (" .. self.path .. ")"
end

--- The fake CLI's log (`claude.testing.read_log`).
function Replay:read_log()
  return self.fake:read_log()
end

--- Whether the code under test sent what was recorded: true, or nil and the first
-- difference (or why the replay ended early), as a `replay` error. Call it after the
-- session has ended.
-- @return true | nil, err, "replay"
function Replay:check()
  local log, err = self.fake:read_log()
  if not log then return nil, err, "io" end
  local run = log.runs[#log.runs]
  if run == nil or run.exit_code == nil then
    return errors.fail("replay", "the replay has not ended (is the session closed?)")
  end
  if run.exit_code == 0 or (run.exit_message == nil and run.exit_code == self.recorded_exit) then
    return true
  end
  local msg = run.exit_message or ("the replay exited with code " .. tostring(run.exit_code))
  msg = msg:gsub("^fake_cli: expectation failed at [^:]+:%d+: ", "")
  return errors.fail("replay", msg, { exit_code = run.exit_code })
end

--- Removes the replay's temporary files; also `<close>`.
function Replay:cleanup()
  self.fake:cleanup()
end
Replay.__close = Replay.cleanup

local REPLAY_OPTS = { ignore = true, check_argv = true, realtime = true, secrets = true,
  fields = true, interpreter = true, log = true, env = true }

--- Session options that replay the recording at `path` (a session's `record` file) as
-- the CLI, checking that the code under test sends what was recorded, and the replay.
-- @tparam string path a recording (the `record` option's file)
-- @tparam[opt] table opts `{ ignore = { paths }, check_argv = true, realtime = false,
--   secrets = {...}, fields = {...} }` (and `interpreter`, `log`, `env` as for `fake_cli`)
-- @return options, replay (`check()`, `read_log()`, `cleanup()`)
-- @function replay
M.replay = errors.public(function(path, opts)
  errors.check(path, 1, "replay", "string")
  errors.check(opts, 2, "replay", "table", true)
  opts = opts or {}
  errors.check_fields(opts, REPLAY_OPTS, "replay")
  local replay = require "claude.testing.replay"
  local header, records = replay.load(path)
  if not header then errors.misuse("bad argument #1 to 'replay' (%s)", errors.message(records)) end
  local recorded_exit
  for _, r in ipairs(records) do
    if r.dir == "exit" then recorded_exit = r.code end
  end
  local play_opts = { ignore = opts.ignore, check_argv = opts.check_argv,
    realtime = opts.realtime, secrets = opts.secrets, fields = opts.fields }
  local script = string.format("require('claude.testing.replay').play(cli, %q, "
    .. "require('claude.json').decode(%q))\n", absolute(path), json.encode(play_opts))
  local options, fake = M.fake_cli(script, { interpreter = opts.interpreter,
    log = opts.log, env = opts.env })
  return options, setmetatable({ path = path, fake = fake, header = header,
    recorded_exit = recorded_exit }, Replay)
end)

return M
