--- What the schema modules share: failures that name a property path, and the path's
-- spelling (`a.b`, `tags[2]`, `["odd key"]`).
-- @module claude.schema.common
local errors = require "claude.errors"
local json = require "claude.json"

local M = {}

local type, tostring, fmt = type, tostring, string.format
local is_array = json.is_array
local null, array_mt, object_mt = json.null, json.array_mt, json.object_mt
local getmetatable, rawlen, next, floor, math_type = getmetatable, rawlen, next, math.floor,
  math.type

--- Raises a `schema` failure (`errors.throw`) at `path`: the public functions return it
-- with `errors.catch`.
-- @tparam string path
-- @tparam string f a format
function M.bad(path, f, ...)
  local msg = f:format(...)
  if path ~= "" then msg = path .. ": " .. msg end
  errors.throw("schema", msg)
end

--- True for a name that reads as a Lua identifier (`a.b` rather than `["a b"]`).
function M.ident(name)
  return type(name) == "string" and name:match("^[%a_][%w_]*$") ~= nil
end
local ident = M.ident

--- `path` and then property `name`.
function M.join(path, name)
  if not ident(name) then return fmt("%s[%q]", path, tostring(name)) end
  return path == "" and name or path .. "." .. name
end

--- The path of a subschema under keyword `key` (and `name`: a property, a definition, or
-- a list index from 1), as schema errors spell it: `a.b`, `tags[]`, `allOf[2]`.
-- @tparam string path
-- @tparam string key
-- @param[opt] name
function M.sub_path(path, key, name)
  if key == "properties" or key == "patternProperties" then return M.join(path, name) end
  if (key == "items" or key == "additionalItems") and name == nil then return path .. "[]" end
  if key == "additionalProperties" then return path .. ".*" end
  local at = path == "" and key or path .. "." .. key
  if name == nil then return at end
  if type(name) == "number" then return fmt("%s[%d]", at, name) end
  return M.join(at, name)
end

--- A list: marked as a JSON array, or with a first item.
function M.is_list(t)
  return type(t) == "table" and (is_array(t) or t[1] ~= nil)
end

--- The JSON kind of a Lua value (see `claude.schema.kind`): here rather than in the
-- keywords, so that `claude.schema` gives it without loading the validator.
function M.kind(v)
  if v == null or v == nil then return "null" end
  local t = type(v)
  if t == "number" then
    if math_type(v) == "integer" then return "integer" end
    -- NaN and the infinities are no JSON numbers (a decoder may give one for 1e999)
    if v - v ~= 0 then return "non-finite number" end
    if v == floor(v) then return "integer" end
    return "number"
  elseif t == "table" then
    local mt = getmetatable(v)
    if mt == array_mt then return "array" end
    if mt == object_mt then return "object" end
    local n = rawlen(v)
    if n == 0 then return next(v) == nil and "empty" or "object" end
    local c = 0
    for _ in next, v do
      c = c + 1
      if c > n then return "object" end
    end
    return c == n and "array" or "object"
  end
  return t
end

return M
