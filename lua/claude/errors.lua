--- Errors, the one convention of claudelua.
--
-- **Expected failures** (a timeout, a CLI that is not installed, a value that does not match a
-- schema) are returned, never raised: `nil, err, kind`, where `err` is an error value made
-- here (a table `{ kind = "...", message = "...", ... }` whose `tostring` reads well) and
-- `kind` is `err.kind`, so that `local v, err, kind = f()` can branch on the kind without
-- touching the error. `errors.fail(kind, message)` builds that triple.
--
-- **Misuse** (a wrong argument, an unknown option, a field of the wrong type) raises a
-- string at the line of the caller of the public function, as Lua's own `bad argument`
-- errors do, however deep inside the library the mistake is found: the code that finds it
-- calls `errors.misuse(...)`, and the public function, wrapped with `errors.public(f)`,
-- re-raises it at its caller's line.
--
-- Kinds: `timeout`, `cancelled`, `closed`, `cli_not_found`, `connection`, `process`,
-- `json_decode`, `protocol`, `overflow`, `control` (the CLI answered a control request with
-- an error), `task`, `deadlock` (a wait nothing can end), `misuse` (a wait where none is
-- possible), `prompt` (a prompt iterator failed), `schema` (a malformed schema or
-- shorthand), `validation` (a value a schema rejects), `unsupported` (a regular expression
-- construct the schema engine does not implement), `remote` (the peer of a JSON-RPC
-- connection answered with an error: `code`, `remote_message` and `data` are fields),
-- `guard` (an input guard refused a value: `rule` names the rule), `encode` (a value that
-- cannot be written as JSON: NaN, a function, a mixed table), `auth` (an authorization
-- failed: claude.oauth; `oauth_error` holds the OAuth error code when a server sent one),
-- `rpc` (raised by an MCP tool: its call is answered with this JSON-RPC error, `code` and
-- `data` its fields, instead of an `isError` result), and system error names such as
-- `ENOENT`.
-- @module claude.errors
local M = {}

local type, getmetatable, setmetatable, error, pcall = type, getmetatable, setmetatable, error,
  pcall

local Error = {}
Error.__index = Error
Error.__name = "claude.Error"

function Error.__tostring(e)
  local s = e.kind .. ": " .. e.message
  if e.stderr_tail and e.stderr_tail ~= "" then
    s = s .. "\n--- last lines of stderr ---\n" .. e.stderr_tail
  end
  return s
end

--- Makes an error value.
-- @tparam string kind
-- @tparam string message
-- @tparam[opt] table fields extra fields (exit code, line, ...); becomes the error
-- @treturn table the error
function M.new(kind, message, fields)
  local e = fields or {}
  e.kind = kind
  e.message = message
  return setmetatable(e, Error)
end

--- True when `e` is a claude error (of `kind`, if given).
function M.is(e, kind)
  return getmetatable(e) == Error and (kind == nil or e.kind == kind)
end

--- An expected failure, as a function returns it: `return errors.fail("timeout", "...")`.
-- @tparam string kind
-- @tparam string message
-- @tparam[opt] table fields
-- @return nil, the error, its kind
function M.fail(kind, message, fields)
  return nil, M.new(kind, message, fields), kind
end

--- The message of an error value, or of anything else as `tostring` gives it.
-- @param e
-- @treturn string
function M.message(e)
  if getmetatable(e) == Error then return e.message end
  return tostring(e)
end

-- Errors raised by `throw`, told apart from every other error by `catch`.
local thrown = setmetatable({}, { __mode = "k" })

--- Raises an expected failure found deep inside a computation (a bad keyword three levels
-- down a schema); the function that started the computation returns it with `catch`.
-- @tparam string kind
-- @tparam string message
-- @tparam[opt] table fields
function M.throw(kind, message, fields)
  local e = M.new(kind, message, fields)
  thrown[e] = true
  error(e, 0)
end

--- `return errors.catch(pcall(f, ...))`: what `f` returned, or `nil, err, kind` for a failure
-- `throw` raised inside it. Any other error is raised again.
function M.catch(ok, ...)
  if ok then return ... end
  local e = ...
  if thrown[e] then
    thrown[e] = nil
    return nil, e, e.kind
  end
  error(e, 0)
end

---------------------------------------------------------------------------------------------
-- Misuse
---------------------------------------------------------------------------------------------

-- Misuse travels as a marked table up to the public function, which re-raises its text at
-- its caller's line. Printed (a misuse raised where no public function runs, a bug of ours),
-- it still reads as its message.
local Misuse = { __name = "claude.Misuse" }
Misuse.__tostring = function(m) return m.message end

--- Raises a misuse of the running public function: `fmt` formatted with `...`, at the line
-- of its caller. Call it from anywhere below a function wrapped with `public`.
-- @tparam string fmt a `string.format` format
function M.misuse(fmt, ...)
  error(setmetatable({ message = fmt:format(...) }, Misuse), 0)
end

local function rethrow(ok, r, ...)
  if ok then return r, ... end
  if getmetatable(r) == Misuse then error(r.message, 2) end
  error(r, 0)
end

--- Wraps `f` so that a misuse raised anywhere inside it blames the caller of the wrapper:
-- every public entry point is made with this. Other errors pass through unchanged. A
-- public function calls other public functions' unwrapped cores, not their wrappers (the
-- inner wrapper would blame the outer function's line).
-- @tparam function f
-- @treturn function
function M.public(f)
  -- rethrow is a tail call: level 2 is the caller of the wrapper
  return function(...) return rethrow(pcall(f, ...)) end
end

--- Raises a misuse at the line of the caller of the function that tail-calls it:
-- `return errors.blame("bad argument #1 to 'push' (value expected, got nil)")` in a public
-- function itself (a `return` of a call, so that its frame is replaced). For entry points on
-- hot paths, where `public`'s protected call would cost on every call; the same mechanism.
-- @function blame
-- @tparam string fmt a `string.format` format
M.blame = M.public(M.misuse)

--- A type name for messages: `__name` of a value's metatable when it has one (the library's
-- objects), else `type(v)`.
-- @param v
-- @treturn string
function M.typename(v)
  local mt = getmetatable(v)
  local name = type(mt) == "table" and mt.__name
  if type(name) == "string" then return name end
  return type(v)
end

--- Raises a `bad argument #n to 'fname' (...)` misuse (see `misuse`).
-- @tparam integer n
-- @tparam string fname
-- @tparam string fmt the parenthesised part, a format
function M.argerror(n, fname, fmt, ...)
  M.misuse("bad argument #%d to '%s' (%s)", n, fname, fmt:format(...))
end

--- Raises a misuse unless `v` has type `expected` (or is nil and `optional`); returns `v`.
-- @param v
-- @tparam integer n the argument's position
-- @tparam string fname
-- @tparam string expected a `type()` name
-- @tparam[opt] boolean optional
function M.check(v, n, fname, expected, optional)
  if type(v) ~= expected and not (optional and v == nil) then
    M.argerror(n, fname, "%s expected, got %s", expected, M.typename(v))
  end
  return v
end

local function distance(a, b)
  local prev, cur = {}, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    cur[0] = i
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev, cur = cur, prev
  end
  return prev[#b]
end

--- For a misuse message about an unknown name: `" (did you mean 'x'?)"` with
-- the closest of the keys of `names`, when it is close for a name of this
-- length (no guess for 'x'), else `""`. Ties go to the first in alphabetical
-- order, so the message is always the same.
-- @tparam string key the unknown name
-- @tparam table names a set (name -> anything)
-- @treturn string
function M.suggestion(key, names)
  local best, best_d, best_e = nil, math.min(4, #key // 2 + 1), math.huge
  for name in pairs(names) do
    -- a name cut short or run on ('mime' for 'mime_type') is as close as one typo; among
    -- equals the fewest edits win ('max_session': 'max_sessions' over 'max_session_calls')
    local e = distance(key, name)
    local d = #key >= 3 and type(name) == "string" and (name:sub(1, #key) == key
      or key:sub(1, #name) == name) and 1 or e
    if d < best_d or (d == best_d and best and (e < best_e or (e == best_e and name < best)))
    then
      best, best_d, best_e = name, d, e
    end
  end
  return best and (" (did you mean '" .. best .. "'?)") or ""
end

--- True when the unknown name `key` reads as a typo of one of `names`: a few edits away
-- (as `suggestion` counts), cut short ('max_tur'), or run on by at most two characters
-- ('models'). A longer run-on ('max_turns_per_agent') is a name of its own, so a newer
-- CLI's field is not mistaken for a typo (claude.session.compat).
-- @tparam string key
-- @tparam table names a set (name -> anything)
-- @treturn boolean
function M.is_typo(key, names)
  local limit = math.min(4, #key // 2 + 1)
  for name in pairs(names) do
    if type(name) == "string" then
      if distance(key, name) < limit then return true end
      if #key >= 3 and name:sub(1, #key) == key then return true end
      if key:sub(1, #name) == name and #key - #name <= 2 then return true end
    end
  end
  return false
end

--- Raises `bad field 'name' to 'fname' (why)`: the one wording of a field (an option, a
-- definition's key) that is wrong. `why` is a format, with `...`.
-- @tparam string name the field, dotted when nested (`auth.client_id`)
-- @tparam string fname the public function
-- @tparam string why
function M.bad_field(name, fname, why, ...)
  M.misuse("bad field '%s' to '%s' (%s)", name, fname, why:format(...))
end

-- "string|table" -> "string or table"
local function expected_types(expected)
  return (expected:gsub("|", " or "))
end

--- Raises `bad field` unless `v` has one of the types of `expected` (`"string"`,
-- `"string|table"`), or is nil and `optional`; returns `v`.
-- @param v
-- @tparam string name
-- @tparam string fname
-- @tparam string expected `type()` names joined by `|`
-- @tparam[opt] boolean optional
function M.check_field(v, name, fname, expected, optional)
  if v == nil and optional then return v end
  local t = type(v)
  if t ~= expected and not (expected:find("|", 1, true)
      and ("|" .. expected .. "|"):find("|" .. t .. "|", 1, true)) then
    M.bad_field(name, fname, "%s expected, got %s", expected_types(expected), M.typename(v))
  end
  return v
end

--- Raises `unknown field 'key' to 'fname' (did you mean 'x'?)` for the first key of table
-- `t` that the set `known` lacks: the one wording of an unknown option or field. `prefix`
-- names a nested table (`"auth"` gives `auth.key`).
-- @tparam table t
-- @tparam table known a set (name -> anything)
-- @tparam string fname
-- @tparam[opt] string prefix
function M.check_fields(t, known, fname, prefix)
  for k in pairs(t) do
    if not known[k] then M.unknown_field(k, known, fname, prefix) end
  end
end

--- Raises the misuse of `check_fields` for the key `k`.
function M.unknown_field(k, known, fname, prefix)
  local name = tostring(k)
  local hint = M.suggestion(name, known)
  if prefix then
    name = prefix .. "." .. name
    hint = hint:gsub("'([^']*)'%?%)$", "'" .. prefix .. ".%1'?)")
  end
  M.misuse("unknown field '%s' to '%s'%s", name, fname, hint)
end

M.Error = Error
return M
