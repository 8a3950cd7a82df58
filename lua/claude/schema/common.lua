--- What the schema modules share: failures that name a property path, and the path's
-- spelling (`a.b`, `tags[2]`, `["odd key"]`).
-- @module claude.schema.common
local errors = require "claude.errors"
local json = require "claude.json"

local M = {}

local type, tostring, fmt = type, tostring, string.format
local is_array = json.is_array

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

return M
