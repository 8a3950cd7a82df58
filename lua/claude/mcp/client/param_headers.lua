--- The `Mcp-Param-*` headers of the modern HTTP wire (SEP-2243): a tool's input schema may
-- mark primitive properties with `"x-mcp-header": "Name"`, and a call then repeats each
-- such argument in a header `Mcp-Param-Name`, so that proxies can route on it without
-- reading the body. `scan` reads a tool's declarations (or says why they are invalid: such
-- a tool is dropped from the list, never called), `build` makes the headers of one call.
-- @module claude.mcp.client.param_headers
local core = require "claude.core"

local M = {}

M.KEY = "x-mcp-header"
M.PREFIX = "Mcp-Param-"

local TOKEN = "^[!#$%%&'*+%-.^_`|~0-9A-Za-z]+$"      -- RFC 9110 token
local TYPES = { string = true, integer = true, boolean = true }

-- Subschemas a declaration must not sit under (only chains of `properties` reach arguments).
local UNREACHABLE = { "items", "prefixItems", "contains", "additionalProperties",
  "unevaluatedProperties", "unevaluatedItems", "propertyNames", "patternProperties",
  "dependentSchemas", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$defs",
  "definitions" }
local OBJECT_VALUED = { patternProperties = true, dependentSchemas = true, ["$defs"] = true,
  definitions = true }

-- A path while the schema is walked: `{ up = parent path, key = key }`, nil at the root,
-- made a list only where it is needed (a copy at each level cost the depth squared: a
-- server's schema nested 5,000 deep took a third of a second).
local function extend(path, key) return { up = path, key = key } end

local function list_of(path)
  local n, p = 0, path
  while p do n, p = n + 1, p.up end
  local keys = {}
  p = path
  for i = n, 1, -1 do keys[i], p = p.key, p.up end
  return keys
end

local function path_name(path)
  return path == nil and "<root>" or table.concat(list_of(path), ".")
end

--- The `x-mcp-header` declarations of an input schema.
-- @param schema a tool's `inputSchema`
-- @return a list of `{ path = { key, ... }, header = name, type = ... }` (empty when none)
--   | nil and why the declarations are invalid
function M.scan(schema)
  local decls, seen = {}, {}
  local function visit(node, path, reachable)
    if type(node) ~= "table" then return nil end
    local raw = node[M.KEY]
    if raw ~= nil then
      if not reachable or path == nil then
        return path_name(path) .. ": x-mcp-header is only allowed on properties reached "
          .. "through 'properties' alone"
      end
      if type(raw) ~= "string" or raw == "" then
        return path_name(path) .. ": x-mcp-header must be a non-empty string"
      end
      if not raw:find(TOKEN) then
        return path_name(path) .. ": x-mcp-header '" .. raw .. "' is not an HTTP token"
      end
      local t = node.type
      if not TYPES[t] then
        return path_name(path) .. ": x-mcp-header is only allowed on string, integer and "
          .. "boolean properties (got " .. tostring(t) .. ")"
      end
      local lower = raw:lower()
      if seen[lower] then
        return "x-mcp-header '" .. raw .. "' is declared twice (also as '" .. seen[lower] .. "')"
      end
      seen[lower] = raw
      decls[#decls + 1] = { path = list_of(path), header = raw, type = t }
    end
    local props = node.properties
    if type(props) == "table" then
      local keys = {}
      for k in pairs(props) do if type(k) == "string" then keys[#keys + 1] = k end end
      table.sort(keys) -- one verdict whatever the table order
      for _, k in ipairs(keys) do
        local why = visit(props[k], extend(path, k), reachable)
        if why then return why end
      end
    end
    for _, k in ipairs(UNREACHABLE) do
      local sub = node[k]
      if type(sub) == "table" then
        local branches = sub
        if sub[1] == nil and not OBJECT_VALUED[k] then branches = { sub } end
        for _, b in pairs(branches) do
          local why = visit(b, extend(path, "<" .. k .. ">"), false)
          if why then return why end
        end
      end
    end
    return nil
  end
  local why = visit(schema, nil, true)
  if why then return nil, why end
  return decls
end

--- A value as a header carries it: plain when it is printable ASCII without blanks at the
-- ends, else `=?base64?...?=` of its UTF-8 (an empty value too).
-- @tparam string s
-- @treturn string
function M.encode(s)
  if s == "" or s:find("[^\t\32-\126]") or s:find("^[%s]") or s:find("[%s]$")
    or (s:sub(1, 9) == "=?base64?" and s:sub(-2) == "?=") then
    return "=?base64?" .. core.base64_encode(s) .. "?="
  end
  return s
end

local function text_of(v)
  local t = type(v)
  if t == "string" then return v end
  if t == "boolean" then return v and "true" or "false" end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if t == "number" and v == v and v ~= math.huge and v ~= -math.huge then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
    for digits = 15, 17 do -- the shortest that reads back the same
      local s = string.format("%." .. digits .. "g", v)
      if tonumber(s) == v then return s end
    end
  end
  return nil
end

--- The headers of one call: `Mcp-Param-<name>` for each declared argument present (a
-- missing or null one is left out).
-- @tparam table decls from `scan`
-- @param args the call's arguments
-- @treturn table header name -> value (nil when there is none)
function M.build(decls, args)
  local out
  for _, d in ipairs(decls) do
    local v = args
    for _, k in ipairs(d.path) do
      if type(v) ~= "table" then v = nil break end
      v = v[k]
    end
    local text = v ~= nil and text_of(v)
    if text then
      out = out or {}
      out[M.PREFIX .. d.header] = M.encode(text)
    end
  end
  return out
end

return M
