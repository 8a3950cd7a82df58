--- The claude CLI a claudelua set-up installed, found from where the running claudelua is:
-- `tools/setup.sh` puts the pinned CLI in `<prefix>/lib/claudelua/cli/claude` beside
-- `<prefix>/bin/claudelua`; `tools/install-cli.sh` puts it in a checkout's `node_modules`
-- (next to `build/claudelua`, or in the current directory). Demo mode runs it; a session
-- that finds no CLI names it in its message.
-- @module claude.session.installed_cli
local core = require "claude.core"

local M = {}

local function dirname(path) return path:match("^(.*)/[^/]*$") or "." end

--- The places, most likely first.
function M.places()
  local places = {}
  -- a node_modules: the claude-code package's .bin, or the Agent SDK's platform package
  -- (the newest CLIs ship only there)
  local function add_node_modules(root)
    places[#places + 1] = root .. "/node_modules/.bin/claude"
    for _, name in ipairs(core.scandir(root .. "/node_modules/@anthropic-ai") or {}) do
      if name:match("^claude%-agent%-sdk%-") then
        places[#places + 1] = root .. "/node_modules/@anthropic-ai/" .. name .. "/claude"
      end
    end
  end
  local exe = core.exepath()
  if exe then
    exe = core.realpath(exe) or exe
    local bin = dirname(exe)
    places[#places + 1] = bin .. "/../lib/claudelua/cli/claude" -- tools/setup.sh's prefix
    add_node_modules(bin .. "/..") -- build/claudelua in a checkout
    add_node_modules(bin)
  end
  add_node_modules(core.cwd() or ".")
  return places
end

--- The first executable of `places()`, resolved, or nil.
function M.find()
  for _, p in ipairs(M.places()) do
    if core.is_executable(p) then return core.realpath(p) or p end
  end
  return nil
end

return M
