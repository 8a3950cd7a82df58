--- Demo mode: any script's `claude.query` and `claude.connect` run the real `claude` CLI
-- against a scripted Messages API on 127.0.0.1 (claude.testing.messages_api): offline, with
-- no key. `claudelua --demo script.lua` (or `CLAUDELUA_DEMO=1`) starts it before the script;
-- a script can also call `start` itself. It sets this process's environment, which every
-- CLI it starts inherits: `ANTHROPIC_BASE_URL` and a dummy key, a fresh `CLAUDE_CONFIG_DIR`
-- (your own settings, login and MCP servers stay out), and `PATH` led by the CLI's folder.
-- The CLI is `$CLAUDELUA_CLI`, else `claude` on PATH, else the one a set-up installed
-- (claude.session.installed_cli: tools/setup.sh's beside the running claudelua, or
-- tools/install-cli.sh's in a checkout's node_modules). See docs/demo.md.
-- @module claude.testing.demo
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local process = require "claude.process"
local messages_api = require "claude.testing.messages_api"
local installed_cli = require "claude.session.installed_cli"

local M = {}

local active -- the running demo: { api, dir, cli }

local function executable(path)
  return path and path ~= "" and core.is_executable(path) and path or nil
end

local function dirname(path) return path:match("^(.*)/[^/]*$") or "." end

--- The CLI demo mode runs, or nil and why not.
function M.find_cli()
  local env = executable(os.getenv("CLAUDELUA_CLI"))
  if env then return env end
  local on_path = process.which("claude")
  if on_path then return on_path end
  local installed = installed_cli.find()
  if installed then return installed end
  return nil, "demo mode needs the claude CLI (it runs the real CLI against a scripted API): "
    .. "install it with `npm install -g @anthropic-ai/claude-code`, or run "
    .. "`bash tools/setup.sh` in a claudelua checkout, or set CLAUDELUA_CLI to its path"
end

--- Reads a scenario: a `.json` file (`{"turns": [...]}`) or a `.lua` file that returns the
-- table.
-- @treturn table|nil the scenario, or nil, why
function M.load_scenario(path)
  if path:match("%.lua$") then
    local chunk, err = loadfile(path, "t")
    if not chunk then return nil, err end
    local ok, t = pcall(chunk)
    if not ok then return nil, tostring(t) end
    if type(t) ~= "table" then return nil, path .. ": must return { turns = {...} }" end
    return t
  end
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text = f:read("a")
  f:close()
  local t, jerr = json.decode(text)
  if t == nil then -- where, as an editor shows it: line and column
    local byte = tonumber(tostring(jerr):match("at byte (%d+)")) or #text
    local before = text:sub(1, byte - 1)
    return nil, string.format("%s: line %d, column %d: %s", path,
      select(2, before:gsub("\n", "")) + 1, byte - (before:match(".*()\n") or 0),
      tostring(jerr):gsub(" at byte %d+", ""))
  end
  if type(t) ~= "table" or type(t.turns) ~= "table" then
    return nil, path .. ": not a scenario ({\"turns\": [...]} expected)"
  end
  return t
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local START_FIELDS = { scenario = "table|string", quiet = "boolean" }

--- Starts demo mode (once: a second call returns the running one).
-- @tparam[opt] table opts `{ scenario = { turns = {...} } or a file name (default: the
--   tool tour: each MCP tool the session allows is called once, then a text reports what
--   they returned),
--   quiet = false (true: no line on stderr) }`
-- @return the scripted API (claude.testing.messages_api), or nil, an error, its kind
function M.start(opts)
  if active then return active.api end
  opts = opts or {}
  errors.check_fields(opts, START_FIELDS, "start")
  for k, want in pairs(START_FIELDS) do errors.check_field(opts[k], k, "start", want, true) end
  local scenario = opts.scenario
  if type(scenario) == "string" then
    local err
    scenario, err = M.load_scenario(scenario)
    if not scenario then return errors.fail("demo", "demo scenario: " .. tostring(err)) end
  end
  local cli, why = M.find_cli()
  if not cli then return errors.fail("cli_not_found", why) end
  local api, err, kind = messages_api.start { scenario = scenario }
  if not api then return nil, err, kind end
  local dir, derr = core.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/claudelua-demo-")
  if not dir then
    api:close()
    return errors.fail("demo", "demo mode: cannot make a temporary directory: " .. tostring(derr))
  end
  core.mkdir(dir .. "/config")
  for k, v in pairs(api:env()) do core.setenv(k, v or nil) end
  core.setenv("CLAUDE_CONFIG_DIR", dir .. "/config")
  -- the CLI is found on PATH by its name
  local bin = dirname(cli)
  if cli:match("[^/]*$") ~= "claude" then
    bin = dir .. "/bin"
    core.mkdir(bin)
    local f = assert(io.open(bin .. "/claude", "wb"))
    f:write("#!/bin/sh\nexec ", shell_quote(cli), ' "$@"\n')
    f:close()
    os.execute("chmod +x " .. shell_quote(bin .. "/claude"))
  end
  core.setenv("PATH", bin .. ":" .. (os.getenv("PATH") or "/usr/bin:/bin"))
  core.setenv("CLAUDELUA_DEMO", nil) -- the processes it starts (an MCP server) are not demos
  active = { api = api, dir = dir, cli = cli }
  -- removed with the state, after the sessions closed
  active.guard = setmetatable({}, { __gc = function() M.stop() end })
  if not opts.quiet then
    io.stderr:write("[demo] the claude CLI (", cli, ") against a scripted Messages API on ",
      api.url, ": offline, no key, no cost", scenario and ""
      or "; the model calls the MCP tools the session allows", "\n")
  end
  return api
end

--- The running demo's API, or nil.
function M.api() return active and active.api end

--- Stops demo mode: the server closes and its temporary directory goes. The environment
-- stays as it was set.
function M.stop()
  if not active then return end
  local a = active
  active = nil
  a.api:close()
  os.execute("rm -rf " .. shell_quote(a.dir))
end

return M
