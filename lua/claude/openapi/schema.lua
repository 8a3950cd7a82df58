--- OpenAPI Schema Objects as the JSON Schema 2020-12 of a tool's input.
--
-- 3.1 schemas are 2020-12 already; 3.0's dialect differs: `nullable: true` becomes a `null`
-- type (or an `anyOf` with `{type: "null"}` when no type is given), the boolean
-- `exclusiveMinimum`/`exclusiveMaximum` become the numeric ones, `example` becomes `examples`,
-- and siblings of a `$ref` are ignored, as 3.0 says. Both lose what no validator reads
-- (`discriminator`, `xml`, `externalDocs`, `x-` extensions, `$schema`, `$id`).
--
-- A `$ref` to a schema is not inlined: the schema goes under the tool's `$defs` once, named
-- after its component (`#/components/schemas/Pet` is `#/$defs/Pet`), so recursive schemas
-- stay finite. Each schema of the document is converted once and shared by every tool
-- that uses it; a tool's schema is bounded in size (its nodes with the definitions it
-- reaches), in nesting depth, and a cycle of bare `$ref`s is refused.
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
-- @tparam table doc
-- @tparam string version "3.0" or "3.1"
-- @tparam integer max_nodes the bound of one tool's schema
function M.new(doc, version, max_nodes)
  return setmetatable({ doc = doc, legacy = version == "3.0", max_nodes = max_nodes,
    defs = {}, names = {} }, Converter)
end

-- A $defs name for the schema at `ptr`: its component's name, else its pointer's tokens.
function Converter:name_for(ptr)
  local base = ptr:match("^#/components/schemas/([^/]+)$") or ptr:gsub("^#/components/schemas/", "")
    :gsub("^#/?", "")
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

-- Follows bare $refs from `ptr`; a cycle of them is a fault (no validator could end it).
function Converter:check_chain(ptr, where)
  local seen = {}
  while true do
    if seen[ptr] then document.fail(where, "circular $ref '%s' (no schema between)", ptr) end
    seen[ptr] = true
    local target, why = document.lookup(self.doc, ptr)
    if target == nil then document.fail(where, "$ref '%s' cannot be resolved: %s", ptr, why) end
    if type(target) ~= "table" or type(target["$ref"]) ~= "string" then return end
    local others = false
    if not self.legacy then
      for k in pairs(target) do
        if k ~= "$ref" and k ~= "description" and k ~= "summary" then others = true end
      end
    end
    if others then return end
    ptr = target["$ref"]
  end
end

-- The definition of the schema at `ptr` (converted on first use): its name, what it refers
-- to and its size.
function Converter:def(ptr, where)
  local d = self.defs[ptr]
  if d then return d end
  if type(ptr) ~= "string" or ptr:sub(1, 1) ~= "#" then
    document.fail(where, "$ref '%s' is not local: only references inside the document "
      .. "(#/...) are followed", tostring(ptr))
  end
  self:check_chain(ptr, where)
  d = { name = self:name_for(ptr), refs = {}, nodes = 0 }
  self.defs[ptr] = d -- before converting: a schema that refers to itself finds it
  local target = document.lookup(self.doc, ptr)
  d.schema = self:convert(target, ptr, d, 0)
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
  return document.deref(self.doc, s, where)
end

return M
