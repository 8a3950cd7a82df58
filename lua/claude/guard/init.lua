--- Input guards: checks a tool runs on what the model gave it, before it
-- touches the file system, runs a program, fetches a URL or starts a child
-- with the environment.
--
--     local root = claude.guard.path{ root = "/srv/notes" }
--     claude.tool("read_note", "Read a note", { path = "string" }, function(args)
--       local path, err = root:check(args.path)
--       if not path then return nil, err end     -- an isError result naming the rule
--       return assert(io.open(path)):read("a")
--     end)
--
-- Each guard's `check` returns the value to use (the canonical path, the argv,
-- the pinned address) or `nil, err, "guard"`; `err.rule` names the rule.
-- `claude.guard.can_use_tool{ ... }` turns guards into a `can_use_tool`
-- callback for the CLI's own tools (Read, Write, Edit, Bash, WebFetch, ...).
-- @module claude.guard
local path = require "claude.guard.path"
local command = require "claude.guard.command"
local url = require "claude.guard.url"
local env = require "claude.guard.env"
local errors = require "claude.errors"
local common = require "claude.guard.common"

local M = {
  path = path.new,
  command = command.new,
  url = url.new,
  env = env.new,
}

-- The input field each built-in tool of the CLI takes, by guard.
local TOOL_FIELDS = {
  Read = { path = "file_path" }, Write = { path = "file_path" }, Edit = { path = "file_path" },
  MultiEdit = { path = "file_path" }, NotebookEdit = { path = "notebook_path" },
  Glob = { path = "path" }, Grep = { path = "path" }, LS = { path = "path" },
  Bash = { command = "command" }, WebFetch = { url = "url" },
}

--- A `can_use_tool` callback that checks the CLI's built-in tools with guards.
-- A tool whose input a given guard covers is allowed when the guard passes and
-- denied, with the rule named, when it does not; for any other tool
-- `fallback` decides: `true` allows, `false` (the default) denies, a function
-- is called as a `can_use_tool` callback.
-- @tparam table opts `path`, `command`, `url` (guards), `fallback`
-- @treturn function can_use_tool(tool_name, input, context)
local function can_use_tool(opts)
  if type(opts) ~= "table" then
    errors.misuse("bad argument #1 to 'guard.can_use_tool' (table expected, got %s)", type(opts))
  end
  local fallback = opts.fallback
  if fallback ~= nil and type(fallback) ~= "boolean" and type(fallback) ~= "function" then
    errors.misuse("bad field 'fallback' to 'guard.can_use_tool' (boolean or function expected, "
      .. "got %s)", type(fallback))
  end
  local guards = {}
  for k, v in pairs(opts) do
    if k ~= "fallback" then guards[k] = v end
  end
  common.check_options("guard.can_use_tool", guards, { path = "table", command = "table",
    url = "table" })
  return function(tool_name, input, context)
    local fields = TOOL_FIELDS[tool_name]
    local checked = false
    for kind, field in pairs(fields or {}) do
      local guard, value = guards[kind], input[field]
      if guard and value ~= nil then
        checked = true
        local ok, err = guard:check(value)
        if not ok then return false, tostring(err) end
      end
    end
    if checked then return true end
    if type(fallback) == "function" then return fallback(tool_name, input, context) end
    if fallback then return true end
    return false, "guard: " .. tool_name .. " is not covered by a guard (rule fallback)"
  end
end

--- @function can_use_tool
M.can_use_tool = errors.public(can_use_tool)

return M
