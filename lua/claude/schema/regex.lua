--- ECMA-262 regular expressions, as JSON Schema's `pattern` uses them, matched by code
-- point: the whole of the syntax (lookbehind, backreferences, named groups, `\p{...}`), with
-- ECMA-262's meanings (`\d` and `\w` are ASCII, `\s` is Unicode white space, `$` is the end
-- of the text). The engine is PCRE2 (`core.regex`, src/schema/regex.c: the pattern is
-- translated to PCRE2's syntax by src/schema/regex_translate.c, and every match runs under
-- step limits).
--
-- `compile(src)` gives `function(str) -> boolean`, or `nil, message` when the match hit a
-- limit; it throws (`errors.throw`) a `schema` failure for a pattern that is not ECMA-262,
-- and an `unsupported` one when libpcre2-8 cannot be loaded.
-- @module claude.schema.regex
local errors = require "claude.errors"
local core = require "claude.core"

local M = {}

local cregex = core.regex

--- Compile `src`; throws as the module's description says.
-- @tparam string src
-- @treturn function `(s) -> boolean | nil, message`
function M.compile(src)
  local match, err, kind = cregex(src)
  if not match then
    if kind == "unsupported" then errors.throw("unsupported", err) end
    errors.throw("schema", ("invalid pattern /%s/: %s"):format(src, err))
  end
  return match
end

return M
