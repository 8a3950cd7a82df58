--- The one JSON module of claudelua: exact integers, `null`, and markers that
-- keep `[]` and `{}` apart. Both directions are claude.core's C code (the
-- decoder builds Lua tables in one pass). See docs/json.md.
-- @module claude.json
local core = require "claude.core"

local M = {}

local array_mt, object_mt = core.json_array_mt, core.json_object_mt

--- JSON `null` (the same value as `cjson.null`); test with `v == json.null`.
M.null = core.json_null

--- Encodes a value; raises for values JSON cannot hold (functions, NaN,
-- tables mixing list items and keys, cycles), naming where it found them.
-- @function encode
M.encode = core.json_encode

--- Decodes JSON text. Integral numbers become Lua integers; an empty array
-- comes back marked so that it encodes as `[]` again.
-- @function decode
-- @return the value, or nil and a message
M.decode = core.json_decode

--- Marks `t` (default: a new table) as a JSON array, so that it encodes as
-- `[]` when empty. Returns `t`.
function M.array(t)
  return setmetatable(t or {}, array_mt)
end

--- Marks `t` (default: a new table) as a JSON object, so that it encodes as
-- `{}` when empty. Returns `t`.
function M.object(t)
  return setmetatable(t or {}, object_mt)
end

--- True when `t` is marked as an array, or is a non-empty list.
function M.is_array(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  if mt == array_mt then return true end
  if mt == object_mt then return false end
  return t[1] ~= nil and next(t, #t) == nil
end

--- True when `t` is marked as an object.
function M.is_object(t)
  return type(t) == "table" and getmetatable(t) == object_mt
end

M.array_mt, M.object_mt = array_mt, object_mt
return M
