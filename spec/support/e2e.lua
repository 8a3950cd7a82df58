--- End-to-end support: the real claude CLI (pinned in package.json) against
-- the scripted Messages API (spec/support/mock_api.mjs) on 127.0.0.1, with a
-- throwaway HOME and CLAUDE_CONFIG_DIR. See docs/testing-with-the-real-cli.md.
local process = require "claude.process"
local json = require "claude.json"
local claude = require "claude"

local M = {}

-- The repository root, found from this file's own path (absolute), so the
-- kit also works from scripts started in another directory (examples/demo.lua).
local function find_root()
  local src = debug.getinfo(1, "S").source:match("^@(.*)$") or ""
  local dir = src:match("^(.*)/spec/support/e2e%.lua$")
  if dir == nil then dir = "." end -- "spec/support/e2e.lua": relative to the cwd
  if dir:sub(1, 1) ~= "/" then
    local cwd = claude.core.cwd()
    dir = dir == "." and cwd or (cwd .. "/" .. dir)
  end
  return dir
end
M.root = find_root()

--- The CLI version pinned in package.json: `claudelua.cli`, the CLI inside the pinned
-- Agent SDK platform package.
function M.pinned_version()
  local f = assert(io.open(M.root .. "/package.json", "rb"))
  local pin = json.decode(f:read("a")).claudelua.cli
  f:close()
  return pin
end

--- The CLI to test: $CLAUDELUA_CLI (set by .ci/run), else node_modules.
function M.cli()
  local path = os.getenv("CLAUDELUA_CLI")
  if path and path ~= "" then return path end
  -- the pin's install (tools/install-cli.sh): the Agent SDK's platform package
  local machine = ({ x86_64 = "x64", aarch64 = "arm64", arm64 = "arm64" })[
    (io.popen("uname -m"):read("l") or "")] or "x64"
  local os_name = (io.popen("uname -s"):read("l") or "") == "Darwin" and "darwin" or "linux"
  local local_bin = M.root .. "/node_modules/@anthropic-ai/claude-agent-sdk-" .. os_name .. "-"
    .. machine .. "/claude"
  if claude.core.is_executable(local_bin) then return local_bin end
  error("the real claude CLI is not installed: run tools/install-cli.sh "
    .. "(or set CLAUDELUA_CLI)", 0)
end

local cli_version
--- The version of the CLI under test, as it says (`claude --version`): the pin's, or
-- another's with CLAUDELUA_CLI (the oldest supported, tools/cli-drift's newest).
function M.cli_version()
  if not cli_version then
    local p = assert(io.popen(require("support.harness").quote(M.cli()) .. " --version"))
    cli_version = assert((p:read("a") or ""):match("^(%d+%.%d+%.%d+)"), "no CLI version")
    p:close()
  end
  return cli_version
end

--- True when the CLI under test is `v` or newer (numeric, field by field).
function M.cli_at_least(v)
  local have = {}
  for n in M.cli_version():gmatch("%d+") do have[#have + 1] = tonumber(n) end
  local i = 0
  for n in v:gmatch("%d+") do
    i = i + 1
    n = tonumber(n)
    if have[i] ~= n then return (have[i] or 0) > n end
  end
  return true
end

local mkdtemp = require("support.harness").tempdir

local Mock = {}
Mock.__index = Mock

--- A text block of a scripted turn.
function M.text(t) return { type = "text", text = t } end

--- A tool_use block of a scripted turn.
function M.use(name, input) return { type = "tool_use", name = name, input = input } end

--- The status of each MCP server the CLI's init message lists, by name.
function M.server_status(messages)
  local status = {}
  for _, m in ipairs(messages) do
    if m.type == "system" and m.subtype == "init" then
      for _, srv in ipairs(m.mcp_servers) do status[srv.name] = srv.status end
      break
    end
  end
  return status
end

--- Starts the mock with `scenario` ({ turns = {...} }); returns a mock whose
-- `options(extra)` gives session options pointing the CLI at it. With
-- `how.log_bodies`, each request record also holds the JSON body (`body`).
function M.start(scenario, how)
  local dir = mkdtemp()
  local self = setmetatable({ dir = dir, log = dir .. "/mock.jsonl" }, Mock)
  local f = assert(io.open(dir .. "/scenario.json", "wb"))
  f:write(json.encode(scenario))
  f:close()
  os.execute("mkdir -p " .. dir .. "/home/.claude " .. dir .. "/work")
  self.proc = assert(process.spawn { "node", args = { M.root .. "/spec/support/mock_api.mjs",
    "--scenario", dir .. "/scenario.json", "--port-file", dir .. "/port",
    "--log", self.log, how and how.log_bodies and "--log-bodies" or nil } })
  local line = assert(self.proc:read_line(20), "the mock API did not start")
  self.port = assert(tonumber(line:match("PORT (%d+)")), "unexpected mock output: " .. line)
  return self
end

-- CLAUDELUA_E2E_SPAWN=ssh runs every CLI of the specs "on another host": through an
-- sshd of the spec process's own on 127.0.0.1 (spec/support/sshd.lua), with claude.ssh.
M.remote = os.getenv("CLAUDELUA_E2E_SPAWN") == "ssh"
-- started before the first spec's handle count, living as long as the spec process
local sshd_server
if M.remote then
  require("support.harness").prepare(function()
    if not sshd_server then sshd_server = require("support.sshd").start() end
  end)
end

--- The `spawn` option of a session whose CLI runs over ssh.
function M.ssh_spawn()
  if not sshd_server then sshd_server = require("support.sshd").start() end
  return claude.ssh(sshd_server:ssh_options())
end

--- Session options for the real CLI against this mock, merged with `extra`.
function Mock:options(extra)
  local base = "http://127.0.0.1:" .. self.port
  local opts = {
    spawn = M.remote and M.ssh_spawn() or nil,
    cli_path = M.cli(),
    cwd = self.dir .. "/work",
    model = "claude-sonnet-4-5",
    setting_sources = {},
    env = {
      HOME = self.dir .. "/home", CLAUDE_CONFIG_DIR = self.dir .. "/home/.claude",
      ANTHROPIC_BASE_URL = base, ANTHROPIC_API_KEY = "dummy",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", ENABLE_TOOL_SEARCH = "false",
      HTTPS_PROXY = base, NO_PROXY = "127.0.0.1,localhost", CLAUDE_CODE_MAX_RETRIES = "0",
    },
  }
  for k, v in pairs(extra or {}) do
    if k == "env" then
      for ek, ev in pairs(v) do opts.env[ek] = ev end
    else
      opts[k] = v
    end
  end
  return opts
end

--- The mock's log records of one kind ("request", "client_closed", ...).
function Mock:records(kind)
  local out = {}
  local f = io.open(self.log, "rb")
  if not f then return out end
  for line in f:lines() do
    local rec = json.decode(line)
    if rec and rec.kind == kind then out[#out + 1] = rec end
  end
  f:close()
  return out
end

--- The requests the mock served.
function Mock:requests()
  return self:records("request")
end

--- The tool results the model received, in order (from the mock's log).
function Mock:tool_results()
  local out = {}
  for _, req in ipairs(self:requests()) do
    for _, r in ipairs(req.tool_results or {}) do out[#out + 1] = r end
  end
  return out
end

--- Stops the mock and removes its files.
function Mock:stop()
  if self.proc then
    self.proc:close(1)
    self.proc = nil
  end
  os.execute("rm -rf " .. self.dir)
end
Mock.__close = Mock.stop

return M
