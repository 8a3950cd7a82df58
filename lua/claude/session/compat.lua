--- Forward compatibility: a newer CLI never breaks a script. The rule
-- (docs/sessions.md#forward-compatibility), per kind of name:
--
-- * What the CLI sends (messages, their fields, hook inputs, control requests) passes
--   through as it came; nothing here is consulted for it.
-- * A name the user writes that claudelua does not know (an option, a hook event, an agent
--   field, a server config field, a hook output field, a permission answer field) is a
--   typo when it is close to a known one (`errors.suggestion` finds one): the did-you-mean
--   error, as before. One close to none is taken as a name of a newer CLI and passed on as
--   written, with one warning per name (per process) that names the CLI claudelua knows.
--   A value no JSON carries (a function) is refused: passed on, it would be lost without a
--   word.
-- * The session option `strict = true` refuses every unknown name, as claudelua did up to
--   CLI 2.1.332.
--
-- The CLI itself takes unknown fields in `initialize`, in agent definitions, in hook
-- registrations and in server configs without an error (checked against 2.1.337), so
-- passing them on cannot stop a session.
-- @module claude.session.compat
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

--- The CLI whose names claudelua maps (package.json's `claudelua.cli`; a unit spec keeps
-- the two equal).
M.CLI_VERSION = "2.1.337"

-- The names already warned about (so that a loop opening sessions warns once) and where
-- the warnings go: one of each per Lua state, kept in the core module's table, so that a
-- second copy of this module (a test runner that reloads Lua modules between files, while
-- the loaded `claude` keeps the first copy) shares them.
local state = core.session_compat
if not state then
  state = { warned = {}, sink = function(msg) io.stderr:write("claude: ", msg, "\n") end }
  core.session_compat = state
end

--- Sets where the warnings go (a spec counts them); returns the function before.
-- @tparam function fn called with each warning's text
function M.set_sink(fn)
  local before = state.sink
  state.sink = fn
  return before
end

--- Forgets the names already warned about (for specs).
function M.reset()
  state.warned = {}
end

--- Warns once about the name `full` (e.g. "agents.a.fooBar").
function M.warn(full, fname, passed_as)
  if state.warned[full] then return end
  state.warned[full] = true
  state.sink(string.format("unknown field '%s' to '%s': not a name of CLI %s (the newest "
    .. "claudelua knows), so passed to the CLI as %s (strict = true refuses it)", full, fname,
    M.CLI_VERSION, passed_as))
end

--- Decides an unknown name `k` of a table whose known names are `known`: raises the
-- did-you-mean error for a typo (or for any name when `strict`), or for a function value;
-- else warns once and returns true (the caller passes the name on).
-- @param k the name
-- @param v its value
-- @tparam table known the known names (keys)
-- @tparam string fname the public function, for messages
-- @tparam[opt] string prefix where the table is ("agents.a")
-- @tparam[opt] boolean strict
-- @tparam[opt] string passed_as how the name is passed on, for the warning
-- @treturn true
function M.unknown(k, v, known, fname, prefix, strict, passed_as)
  if strict or type(k) ~= "string" or errors.is_typo(k, known) then
    errors.unknown_field(k, known, fname, prefix)
  end
  local full = prefix and (prefix .. "." .. k) or k
  if type(v) == "function" or type(v) == "userdata" or type(v) == "thread" then
    errors.misuse("unknown field '%s' to '%s' is not a name of CLI %s, and a %s cannot be "
      .. "passed on to the CLI", full, fname, M.CLI_VERSION, type(v))
  end
  M.warn(full, fname, passed_as or ("'" .. k .. "'"))
  return true
end

--- camelCase of a snake_case name ("auto_compact_window" -> "autoCompactWindow"); other
-- names as they are.
function M.camel(k)
  if not k:find("_%l") then return k end
  return (k:gsub("_(%l)", string.upper))
end

return M
