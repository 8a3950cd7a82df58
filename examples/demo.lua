-- demo.lua -- shared plumbing for the examples: the model's scripted answers.
--
-- Every example runs against your real Claude Code setup by default
-- (`claudelua examples/query.lua`: the `claude` CLI on PATH, your login or
-- ANTHROPIC_API_KEY). `claudelua --demo examples/query.lua` (or
-- CLAUDELUA_DEMO=1) runs it offline instead: the real CLI against a scripted
-- Messages API on 127.0.0.1 (docs/demo.md), no network, no key. There the
-- model's answers are the scenario the example passes here; `--demo` among
-- the script's own arguments does the same.
--
--   package.path = arg[0]:match("^(.-)[^/]*$") .. "?.lua;" .. package.path
--   local demo = require "demo"
--   local options = demo.setup(scenario, { max_turns = 3 })
local demo = require "claude.testing.demo"

local M = {}

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

--- True when the example runs against the scripted API.
function M.enabled()
  return flag or demo.api() ~= nil
end

--- Session options for the example: `extra`; in demo mode the scripted API
-- answers with `scenario` (the API's `{ turns = {...} }`) from now on.
function M.setup(scenario, extra)
  local api = demo.api()
  if not api and flag then api = assert(demo.start()) end
  if api then api:script(scenario) end
  return extra or {}
end

--- What a run cost, as the examples print it: "cost $0.0123" (`label` instead of "cost");
-- in demo mode, where the scripted API counts no tokens, "demo: no cost".
function M.cost(msg, label)
  if M.enabled() then return "demo: no cost" end
  return string.format("%s $%.4f", label or "cost", msg.total_cost_usd or 0)
end

return M
