--- Shorthand -> JSON Schema (see `claude.schema` for the notation). `parse(spec)` raises
-- a `schema` failure (`errors.throw`) for a bad spec; `claude.schema.parse` returns it.
-- @module claude.schema.shorthand
local json = require "claude.json"
local common = require "claude.schema.common"

local M = {}

local jarray, jobject = json.array, json.object
local type, pairs, next, tostring = type, pairs, next, tostring
local fmt = string.format
local bad, join, is_list = common.bad, common.join, common.is_list

local TYPES = { string = true, number = true, integer = true, boolean = true, object = true,
  array = true, null = true }

-- A table holding one of these is a JSON Schema node, not shorthand.
local NODE_KEYS = { "type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "$ref" }

local KNOWN = {}  -- every keyword we recognise, for spotting shorthand inside a JSON Schema
for k in ([[type enum const anyOf oneOf allOf not $ref $id $schema $comment $defs $anchor
  definitions properties patternProperties additionalProperties required minProperties
  maxProperties propertyNames dependentRequired dependentSchemas dependencies items
  prefixItems additionalItems contains minContains maxContains minItems maxItems uniqueItems
  unevaluatedItems unevaluatedProperties minimum maximum exclusiveMinimum exclusiveMaximum
  multipleOf minLength maxLength pattern format contentMediaType contentEncoding
  contentSchema if then else title description default examples deprecated readOnly
  writeOnly nullable optional]]):gmatch("%S+") do
  KNOWN[k] = true
end

local SCHEMA_MAPS = { properties = true, patternProperties = true, ["$defs"] = true,
  definitions = true, dependentSchemas = true }
local SCHEMA_ONE = { additionalProperties = true, additionalItems = true, ["not"] = true,
  contains = true, propertyNames = true, ["if"] = true, ["then"] = true, ["else"] = true,
  unevaluatedProperties = true, unevaluatedItems = true, contentSchema = true }
local SCHEMA_LISTS = { prefixItems = true, anyOf = true, oneOf = true, allOf = true }

-- "number" / "string?" / "string: a description" -> node, optional
local function type_string(s, path)
  local name, q, rest = s:match("^%s*(%a+)(%??)%s*(.-)%s*$")
  local desc = rest and rest:match("^:%s*(.*)$")
  if not name or (rest ~= "" and not desc) then
    bad(path, "bad type %q (expected e.g. 'number', 'string?' or 'string: a description')", s)
  end
  if name ~= "any" and not TYPES[name] then bad(path, "unknown type '%s'", name) end
  local node = name == "any" and jobject() or { type = name }
  if desc and desc ~= "" then node.description = desc end
  return node, q == "?"
end

local convert_schema, schema_node
local wrote_node -- set when the spec being parsed writes a JSON Schema node (parse's 2nd result)

-- JSON Schema mode: booleans, sugar strings, or schema tables.
function convert_schema(v, path)
  local tv = type(v)
  if tv == "boolean" then return v, false end
  if tv == "string" then return type_string(v, path) end
  if tv ~= "table" then bad(path, "schema expected, got %s", tv) end
  return schema_node(v, path)
end

local function list_of_schemas(v, path, key)
  if not is_list(v) then bad(path, "'%s' must be a list of schemas", key) end
  local out = jarray()
  for i = 1, #v do
    local node, opt = convert_schema(v[i], fmt("%s%s%s[%d]", path, path == "" and "" or ".",
      key, i))
    if opt then bad(path, "'?' / optional has no meaning inside '%s'", key) end
    out[i] = node
  end
  return out
end

-- Copy a JSON Schema node, applying JSON markers and the small sugar; -> node, optional.
function schema_node(t, path)
  wrote_node = true
  local out, optional, known = {}, false, false
  for k, x in pairs(t) do
    if KNOWN[k] then known = true end
    if k == "optional" then
      if type(x) ~= "boolean" then bad(path, "'optional' must be a boolean") end
      optional = x
    elseif k == "type" then
      if type(x) == "string" then
        local name, q = x:match("^(%a+)(%??)$")
        if name ~= "any" and not TYPES[name] then bad(path, "unknown type '%s'", x) end
        if q == "?" then optional = true end
        if name ~= "any" then out.type = name end
      elseif is_list(x) then
        out.type = jarray()
        for i = 1, #x do
          if not TYPES[x[i]] then bad(path, "unknown type '%s'", tostring(x[i])) end
          out.type[i] = x[i]
        end
      else
        bad(path, "'type' must be a type name or a list of them")
      end
    elseif SCHEMA_MAPS[k] then
      if type(x) ~= "table" then bad(path, "'%s' must be a table", k) end
      local m = jobject()
      for name, sub in pairs(x) do
        local node, opt = convert_schema(sub, join(path, name))
        if opt and k == "properties" then
          bad(join(path, name), "'?' / optional only work in shorthand; list required "
            .. "properties in 'required'")
        end
        m[name] = node
      end
      out[k] = m
    elseif SCHEMA_ONE[k] then
      out[k] = convert_schema(x, path)
    elseif SCHEMA_LISTS[k] then
      out[k] = list_of_schemas(x, path, k)
    elseif k == "items" then
      if is_list(x) then out[k] = list_of_schemas(x, path, k)
      else out[k] = convert_schema(x, path .. "[]") end
    elseif k == "required" or k == "enum" then
      if type(x) ~= "table" or (next(x) ~= nil and not is_list(x)) then
        bad(path, "'%s' must be a list", k)
      end
      local a = jarray()
      for i = 1, #x do
        if k == "required" and type(x[i]) ~= "string" then
          bad(path, "'required' must be a list of property names")
        end
        a[i] = x[i]
      end
      out[k] = a
    else
      out[k] = x
    end
  end
  if next(t) ~= nil and not known then
    local k = next(t)
    bad(path, "'%s' is not a JSON Schema keyword (shorthand is not allowed inside a "
      .. "JSON Schema; write { type = \"object\", properties = ... })", tostring(k))
  end
  if next(out) == nil then return jobject(), optional end
  return out, optional
end

local convert_short

local function short_object(t, path)
  local names = {}
  for k in pairs(t) do
    if type(k) ~= "string" then
      bad(path, "property names must be strings (got %s %s)", type(k), tostring(k))
    end
    names[#names + 1] = k
  end
  table.sort(names)
  local props, req = jobject(), jarray()
  for _, k in ipairs(names) do
    local node, opt = convert_short(t[k], join(path, k))
    props[k] = node
    if not opt then req[#req + 1] = k end
  end
  return { type = "object", properties = props, required = req }
end

-- Shorthand mode: -> node, optional.
function convert_short(v, path)
  local tv = type(v)
  if tv == "string" then return type_string(v, path) end
  if tv ~= "table" then bad(path, "expected a type name or a table, got %s", tv) end
  for _, k in ipairs(NODE_KEYS) do
    if v[k] ~= nil then return schema_node(v, path) end
  end
  if v[1] ~= nil then
    if next(v, 1) ~= nil or #v ~= 1 then
      bad(path, "an array is written as a list of one spec, like {\"string\"}")
    end
    local items, opt = convert_short(v[1], path .. "[]")
    if opt then bad(path .. "[]", "'?' cannot make an array element optional") end
    return { type = "array", items = items }, false
  end
  return short_object(v, path), false
end

--- The JSON Schema of an object for `spec` (shorthand, or a JSON Schema with
-- `type = "object"`); throws a `schema` failure naming the property path.
-- @tparam table spec
-- @treturn table
-- @treturn boolean true when it is shorthand alone: built here from known type names, it
--   always compiles
function M.parse(spec)
  if type(spec) ~= "table" then bad("", "table expected, got %s", type(spec)) end
  if spec.type == "object" then
    local node, opt = schema_node(spec, "")
    if opt then bad("", "'optional' has no meaning at the top of a schema") end
    return node, false
  end
  wrote_node = false
  local node = short_object(spec, "")
  return node, not wrote_node
end

return M
