--- What the guards share: the violation error and option checks.
-- @module claude.guard.common
local errors = require "claude.errors"

local M = {}

--- A violation: `nil, err, "guard"`, where `err.rule` names the rule broken
-- (`"path.outside_root"`, `"command.not_allowed"`, ...) and prints as
-- `guard: <message> (rule <rule>)`, which is what an `isError` result or a
-- denied permission shows the model.
function M.violation(rule, fmt, ...)
  local err = errors.new("guard", string.format(fmt, ...) .. " (rule " .. rule .. ")",
    { rule = rule })
  return nil, err, "guard"
end

--- Misuse (see `claude.errors`) for an option that is unknown or of the
-- wrong type; the public constructor reports it at its caller's line.
function M.check_options(fname, opts, known)
  if type(opts) ~= "table" then
    errors.misuse("bad argument #1 to '%s' (table expected, got %s)", fname,
      type(opts))
  end
  for k, v in pairs(opts) do
    local want = known[k]
    if not want then errors.unknown_field(k, known, fname) end
    errors.check_field(v, k, fname, want)
  end
end

--- Raises unless every item of the list `t` is a string.
function M.check_strings(fname, field, t)
  for i, v in ipairs(t or {}) do
    if type(v) ~= "string" then
      errors.misuse("bad field '%s[%d]' to '%s' (string expected, got %s)", field, i,
        fname, type(v))
    end
  end
end

--- A set made of a list of strings.
function M.set(list)
  local s = {}
  for _, v in ipairs(list or {}) do s[v] = true end
  return s
end

--- A guard object: `g:check(x)` and `g(x)` are the same.
function M.class(name)
  local class = { __name = name }
  class.__index = class
  class.__call = function(self, ...) return self:check(...) end
  class.__tostring = function(self) return name .. " (" .. self:describe() .. ")" end
  return class
end

return M
