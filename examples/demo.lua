-- demo.lua -- shared plumbing for the examples: run them offline.
--
-- Every example runs against your real Claude Code setup by default
-- (`claudelua examples/query.lua`: the `claude` CLI on PATH, your login or
-- ANTHROPIC_API_KEY). With CLAUDELUA_DEMO=1 in the environment, or `--demo`
-- among the script's arguments, it runs instead against the scripted Messages
-- API of the test suite (spec/support/mock_api.mjs, needs `node`) with the
-- pinned CLI from node_modules (tools/install-cli.sh): no network, no key,
-- and the model's answers are the scenario the example passes here.
--
--   package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
--   local demo = require "demo"
--   local options, mock <close> = demo.setup(scenario, { max_turns = 3 })
--
-- `setup` returns the session options (your `extra` options, plus, in demo
-- mode, those that point the CLI at the mock) and the mock (nil when not in
-- demo mode); closing the mock stops it.
local M = {}

-- The repository root: this file lives in <root>/examples/.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
M.root = here .. "/.."

-- `--demo` anywhere in the script's arguments turns demo mode on (and is
-- removed, so the example sees only its own arguments).
local flag = false
if type(arg) == "table" then
  for i = #arg, 1, -1 do
    if arg[i] == "--demo" then
      flag = true
      table.remove(arg, i)
    end
  end
end

--- True when the example should run against the scripted API.
function M.enabled()
  local env = os.getenv("CLAUDELUA_DEMO")
  return flag or (env ~= nil and env ~= "" and env ~= "0")
end

--- Session options for the example (see the header); `scenario` is the
-- mock's `{ turns = {...} }`, used only in demo mode.
function M.setup(scenario, extra)
  if not M.enabled() then return extra or {}, nil end
  package.path = M.root .. "/spec/?.lua;" .. package.path
  local e2e = require "support.e2e"
  local mock = e2e.start(scenario)
  io.stderr:write("[demo] scripted Messages API on 127.0.0.1:", mock.port, "\n")
  return mock:options(extra), mock
end

return M
