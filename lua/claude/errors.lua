--- Error values with a `kind`, for failures a caller may want to tell apart.
-- An error is a table `{ kind = "...", message = "...", ... }` whose
-- `tostring` reads well; `errors.is(e, kind)` tests one without caring
-- whether `e` is a claude error at all.
-- Kinds: `timeout`, `cancelled`, `closed`, `cli_not_found`, `connection`,
-- `process`, `json_decode`, `protocol`, `overflow`, `control` (the CLI
-- answered a control request with an error), `task`, `deadlock` (a wait
-- nothing can end), `misuse` (a wait where none is possible), `prompt` (a
-- prompt iterator failed).
-- @module claude.errors
local M = {}

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
-- @tparam[opt] table fields extra fields (exit code, line, ...)
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

M.Error = Error
return M
