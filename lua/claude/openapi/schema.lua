--- OpenAPI Schema Objects as the JSON Schema 2020-12 of a tool's input.
--
-- 3.1 schemas are 2020-12 already; 3.0's dialect differs: `nullable: true` becomes a `null`
-- type (or an `anyOf` with `{type: "null"}` when no type is given), the boolean
-- `exclusiveMinimum`/`exclusiveMaximum` become the numeric ones, `example` becomes `examples`,
-- and siblings of a `$ref` are ignored, as 3.0 says. Both lose what no validator reads
-- (`discriminator`, `xml`, `externalDocs`, `x-` extensions, `$schema`, `$id`).
--
-- A `$ref` to a schema is not inlined: the schema goes under the tool's `$defs` once, named
-- after its component (`#/components/schemas/Pet` is `#/$defs/Pet`; a schema that is a whole
-- file, `schemas/pet.yaml`, is `pet`), so recursive schemas stay finite. References to
-- other files and URLs are read by claude.openapi.refs. Each schema of the document is
-- converted once and shared by every tool that uses it; a tool's schema is bounded in size
-- (its nodes with the definitions it reaches), in nesting depth, and a cycle of bare `$ref`s
-- is refused.
-- @module claude.openapi.schema
local json = require "claude.json"
local document = require "claude.openapi.document"

local M = {}

local MAX_DEPTH = 64 -- nested subschemas: deeper is a hostile or a broken document

local MAPS = { properties = true, patternProperties = true, dependentSchemas = true }
local LISTS = { allOf = true, anyOf = true, oneOf = true, prefixItems = true }
local SINGLE = { additionalProperties = true, ["not"] = true, ["if"] = true, ["then"] = true,
  ["else"] = true, contains = true, propertyNames = true, unevaluatedProperties = true,
  unevaluatedItems = true, additionalItems = true }
local DROPPED = { discriminator = true, xml = true, externalDocs = true, ["$schema"] = true,
  ["$id"] = true, ["$comment"] = true, ["$defs"] = true, definitions = true }

local Converter = {}
Converter.__index = Converter

--- A converter for one document: its converted definitions are shared by all its tools.
-- A converter is of one direction: the schemas of requests (a tool's input), where a
-- `readOnly` property is not required, or of responses (its output), where a `writeOnly`
-- one is not, as OpenAPI says.
-- @param docs the claude.openapi.refs set of the document
-- @tparam string version "3.0" or "3.1"
-- @tparam integer max_nodes the bound of one tool's schema
-- @tparam[opt] string direction "request" (the default) or "response"
function M.new(docs, version, max_nodes, direction)
  return setmetatable({ docs = docs, legacy = version == "3.0", max_nodes = max_nodes,
    defs = {}, names = {}, hidden = direction == "response" and "writeOnly" or "readOnly" },
    Converter)
end

-- `required` without the properties this direction does not carry (readOnly ones in a
-- request, writeOnly ones in a response).
function Converter:required_of(s, where)
  if type(s.required) ~= "table" or type(s.properties) ~= "table" then return s.required end
  local out = json.array()
  for _, name in ipairs(s.required) do
    local p = s.properties[name]
    local target = type(p) == "table" and self.docs:deref(p, document.at(where, "properties",
      tostring(name)))
    if not (type(target) == "table" and target[self.hidden] == true) then
      out[#out + 1] = name
    end
  end
  return out
end

-- A $defs name for the schema at `location`: its component's name, else its pointer's
-- tokens, else (a whole file) the file's name without its extension.
function Converter:name_for(location)
  local file, ptr = location:match("^([^#]*)#(.*)$")
  local base = ptr:match("^/components/schemas/([^/]+)$") or ptr:gsub("^/components/schemas/", "")
    :gsub("^/", "")
  if base == "" then base = (file:match("([^/]*)$"):gsub("%.[^.]*$", "")) end
  base = base:gsub("~1", "_"):gsub("~0", "_"):gsub("%%%x%x", "_"):gsub("[^%w_.%-]", "_")
  if base == "" then base = "root" end
  local name, n = base, 1
  while self.names[name] do
    n = n + 1
    name = base .. "_" .. n
  end
  self.names[name] = ptr
  return name
end

-- Follows bare $refs from `location` (which `ref` named); a cycle of them is a fault (no
-- validator could end it).
function Converter:check_chain(location, ref, where)
  local seen = {}
  while true do
    if seen[location] then
      document.fail(where, "circular $ref '%s' (no schema between)", ref)
    end
    seen[location] = true
    local target, why = self.docs:lookup(location)
    if target == nil then document.fail(where, "$ref '%s' cannot be resolved: %s", ref, why) end
    if type(target) ~= "table" or type(target["$ref"]) ~= "string" then return end
    local others = false
    if not self.legacy then
      for k in pairs(target) do
        if k ~= "$ref" and k ~= "description" and k ~= "summary" then others = true end
      end
    end
    if others then return end
    ref = target["$ref"]
    location = self.docs:resolve(ref, location)
  end
end

-- The definition of the schema `ref` (found at `where`) names, converted on first use: its
-- name, what it refers to and its size.
function Converter:def(ref, where)
  local location = self.docs:resolve(ref, where)
  local d = self.defs[location]
  if d then return d end
  self:check_chain(location, ref, where)
  d = { name = self:name_for(location), refs = {}, nodes = 0 }
  self.defs[location] = d -- before converting: a schema that refers to itself finds it
  d.schema = self:convert(self.docs:lookup(location), location, d, 0)
  return d
end

local function copy_list(t)
  local out = json.array()
  for i, v in ipairs(t) do out[i] = v end
  return out
end

-- Converts the schema `s` found at `where`; `acc` gathers the definitions it refers to and
-- counts its nodes.
function Converter:convert(s, where, acc, depth)
  if type(s) == "boolean" then return s end
  if type(s) ~= "table" then document.fail(where, "a schema expected, got %s", type(s)) end
  if depth > MAX_DEPTH then document.fail(where, "schemas nested deeper than %d", MAX_DEPTH) end
  acc.nodes = acc.nodes + 1
  if acc.nodes > self.max_nodes then
    document.fail(where, "schema larger than %d nodes (max_schema_nodes)", self.max_nodes)
  end
  local out = json.object()
  local ref = s["$ref"]
  if ref ~= nil then
    if type(ref) ~= "string" then document.fail(where, "$ref must be a string") end
    local d = self:def(ref, document.at(where, "$ref"))
    acc.refs[d] = true
    out["$ref"] = "#/$defs/" .. d.name
    if self.legacy then return out end -- 3.0: a $ref's siblings are ignored
  end
  for k, v in pairs(s) do
    if k == "$ref" or DROPPED[k] or (type(k) == "string" and k:sub(1, 2) == "x-") then
      goto next_key
    end
    if MAPS[k] then
      if type(v) ~= "table" then document.fail(document.at(where, k), "an object expected") end
      local m = json.object()
      for name, sub in pairs(v) do
        m[name] = self:convert(sub, document.at(where, k, name), acc, depth + 1)
      end
      out[k] = m
    elseif LISTS[k] then
      if type(v) ~= "table" then document.fail(document.at(where, k), "an array expected") end
      local l = json.array()
      for i, sub in ipairs(v) do
        l[i] = self:convert(sub, document.at(where, k, i - 1), acc, depth + 1)
      end
      out[k] = l
    elseif SINGLE[k] or k == "items" then
      out[k] = self:convert(v, document.at(where, k), acc, depth + 1)
    elseif k == "required" then
      out.required = self:required_of(s, where)
    elseif k == "example" then
      if s.examples == nil then out.examples = json.array { v } end
    elseif k == "nullable" or ((k == "exclusiveMinimum" or k == "exclusiveMaximum")
        and type(v) == "boolean") then
      goto next_key -- 3.0's forms, rewritten below
    else
      out[k] = v
    end
    ::next_key::
  end
  if self.legacy then
    for _, side in ipairs { "Minimum", "Maximum" } do
      local bound, excl = side:lower(), s["exclusive" .. side]
      if excl == true and s[bound] ~= nil then
        out["exclusive" .. side], out[bound] = s[bound], nil
      end
    end
    if s.nullable == true then
      local t = out.type
      if type(t) == "string" then
        out.type = t == "null" and t or json.array { t, "null" }
        if type(out.enum) == "table" then
          local enum = copy_list(out.enum)
          enum[#enum + 1] = json.null
          out.enum = enum
        end
      elseif t == nil then
        return json.object { anyOf = json.array { out, json.object { type = "null" } } }
      end
    end
  end
  return out
end

--- The schema `s` (found at `where`) converted, and the definitions it reaches: a set of
-- definitions (`acc.refs`), to be closed with `defs_of`.
function Converter:schema(s, where, acc)
  return self:convert(s, where, acc, 0)
end

--- The `$defs` of a tool whose schemas referred to `refs`, closed over what those refer to;
-- nil when none. Throws when the whole is over the node bound.
function Converter:defs_of(acc, where)
  local out, queue, n, nodes = json.object(), {}, 0, acc.nodes
  for d in pairs(acc.refs) do queue[#queue + 1] = d end
  local seen = {}
  while #queue > 0 do
    local d = table.remove(queue)
    if not seen[d] then
      seen[d] = true
      n = n + 1
      out[d.name] = d.schema
      nodes = nodes + d.nodes
      if nodes > self.max_nodes then
        document.fail(where, "input schema larger than %d nodes with its definitions "
          .. "(max_schema_nodes)", self.max_nodes)
      end
      for r in pairs(d.refs) do queue[#queue + 1] = r end
    end
  end
  if n == 0 then return nil end
  return out
end

--- Resolves a schema's own `$ref` chain to the schema it names (to look inside a request
-- body's schema); returns it and where it is.
function Converter:target(s, where)
  return self.docs:deref(s, where)
end

return M
