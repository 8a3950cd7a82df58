--- The schema documents a validator is made from, indexed before anything is compiled: every
-- subschema's base URI and dialect, the resources (`$id`), anchors (`$anchor`,
-- `$dynamicAnchor`, draft-07's `$id: "#name"`), and every reference resolved, loading other
-- documents through the user's loader (never from the network by itself). A reference that
-- does not resolve, an unknown `$schema`, a schema too deep or too large: each throws
-- (`errors.throw`) with a message that says which.
-- @module claude.schema.registry
local errors = require "claude.errors"
local json = require "claude.json"
local uri = require "claude.schema.uri"
local dialects = require "claude.schema.dialects"
local common = require "claude.schema.common"

local M = {}

local type, pairs, next, tostring, tonumber = type, pairs, next, tostring, tonumber
local fmt = string.format
local resolve, split = uri.resolve, uri.split
local array_mt = json.array_mt

local function throw(kind, f, ...)
  errors.throw(kind, f:format(...))
end

-- Keywords whose values are subschemas: one, a map of them, a list of them.
local ONE = {}
for k in ([[additionalProperties additionalItems unevaluatedItems unevaluatedProperties
  contains propertyNames not if then else contentSchema]]):gmatch("%S+") do ONE[k] = true end
local MAP = { properties = true, patternProperties = true, ["$defs"] = true,
  definitions = true, dependentSchemas = true }
local LIST = { allOf = true, anyOf = true, oneOf = true, prefixItems = true }
M.ONE, M.MAP, M.LIST = ONE, MAP, LIST

local function is_list(t)
  return getmetatable(t) == array_mt or (t[1] ~= nil and next(t, #t) == nil)
end
M.is_list = is_list

local Registry = {}
Registry.__index = Registry

--- A registry. Options: `dialect` (the default dialect, a table from `claude.schema.dialects`),
-- `loader` (a function `uri -> document | nil, why` or a table `uri -> document`; a
-- document is a decoded schema or its JSON text), `max_depth`, `max_subschemas`.
function M.new(opts)
  return setmetatable({
    resources = {}, anchors = {}, dynamic = {}, recursive = {}, info = {}, pending = {},
    metas = {}, resolved = {}, count = 0, uses_dynamic = false,
    default = opts.dialect, loader = opts.loader,
    max_depth = opts.max_depth, max_subschemas = opts.max_subschemas,
  }, Registry)
end

local metaschemas -- loaded when first needed

-- The document at `u`: a built-in meta-schema, or from the loader, decoded; throws when
-- there is none.
function Registry:load(u, why)
  metaschemas = metaschemas or require "claude.schema.metaschemas"
  local meta = metaschemas[(u:gsub("#$", ""))]
  if meta then return (json.decode(meta)) end
  local loader, doc, err = self.loader, nil, nil -- luacheck: ignore 311
  if loader == nil then
    throw("schema", "%s '%s' does not resolve (no loader: references outside the schema are "
      .. "never fetched by themselves)", why, u)
  end
  if type(loader) == "table" then
    doc = loader[u]
    if doc == nil and u:sub(-1) ~= "#" then doc = loader[u .. "#"] end
  else
    local ok, d, e = pcall(loader, u)
    if not ok then throw("schema", "the loader failed for '%s': %s", u, tostring(d)) end
    doc, err = d, e
  end
  if type(doc) == "string" then
    local d, derr = json.decode(doc)
    if d == nil then throw("schema", "the document at '%s' is not JSON: %s", u, derr) end
    doc = d
  end
  if doc == nil then
    throw("schema", "%s '%s' does not resolve%s", why, u,
      err and (": " .. errors.message(err)) or " (the loader has no such document)")
  end
  if type(doc) ~= "table" and type(doc) ~= "boolean" then
    throw("schema", "the loader gave a %s for '%s' (a schema table or JSON text expected)",
      type(doc), u)
  end
  return doc
end

--- The dialect `$schema` names: a standard one, or a custom meta-schema the loader has.
function Registry:dialect_for(s, path)
  if type(s) ~= "string" then throw("schema", "%s: '$schema' must be a string", path) end
  local d = dialects.get(s)
  if d then return d end
  local key = (s:gsub("#$", ""))
  d = self.metas[key]
  if d then return d end
  if self.loader == nil then
    throw("unsupported", "%s: unknown $schema '%s' (supported: %s; a custom meta-schema needs "
      .. "a loader)", path ~= "" and path or "schema", s, dialects.names)
  end
  local ok, meta = pcall(self.load, self, key, "$schema")
  if not ok then
    throw("unsupported", "%s: unknown $schema '%s' (supported: %s)",
      path ~= "" and path or "schema", s, dialects.names)
  end
  local base = type(meta) == "table" and type(meta["$schema"]) == "string"
    and dialects.get(meta["$schema"])
  if not base then
    throw("unsupported", "meta-schema '%s' is not based on a supported dialect (%s)", s,
      dialects.names)
  end
  local vocab = meta["$vocabulary"]
  if type(vocab) == "table" then
    local err
    d, err = dialects.custom(base, vocab, key)
    if not d then throw("unsupported", "%s", err) end
  else
    d = base
  end
  self.metas[key] = d
  return d
end

local sub_path = common.sub_path

--- Indexes `node` (and what it holds) with base URI `base` in `dialect`; `root` for the
-- top of a document. Idempotent.
function Registry:index(node, base, dialect, depth, root, path)
  if type(node) ~= "table" then return end
  if self.info[node] then return end
  if depth > self.max_depth then
    throw("schema", "%s: the schema is nested deeper than %d subschemas (max_depth)",
      path == "" and "schema" or path, self.max_depth)
  end
  local count = self.count + 1
  self.count = count
  if count > self.max_subschemas then
    throw("schema", "the schema has more than %d subschemas (max_subschemas)",
      self.max_subschemas)
  end
  local sch = node["$schema"]
  if sch ~= nil and (root or node[dialect.id] ~= nil) then
    dialect = self:dialect_for(sch, path)
  end
  local id = node[dialect.id]
  local is_root = root
  if type(id) == "string" and not (dialect.ref_alone and node["$ref"] ~= nil) then
    local u, frag = split(resolve(base, id))
    if dialect.anchors then
      if frag ~= "" then
        throw("schema", "%s: '$id' must not have a fragment ('%s')", path, id)
      end
      base, is_root = u, true
    else
      if id:sub(1, 1) ~= "#" then base, is_root = u, true end
      if frag ~= "" and frag:sub(1, 1) ~= "/" then self.anchors[base .. "#" .. frag] = node end
    end
    if is_root and self.resources[base] == nil then self.resources[base] = node end
  elseif root and self.resources[base] == nil then
    self.resources[base] = node
  end
  self.info[node] = { base = base, dialect = dialect, root = is_root, path = path }
  if dialect.anchors then
    local a = node["$anchor"]
    if a ~= nil then
      if type(a) ~= "string" or not a:match("^[%a_][%w_.-]*$") then
        throw("schema", "%s: bad '$anchor' %s", path, tostring(a))
      end
      self.anchors[base .. "#" .. a] = node
    end
    local da = dialect.dynamic == "dynamic" and node["$dynamicAnchor"]
    if da then
      if type(da) ~= "string" then throw("schema", "%s: bad '$dynamicAnchor'", path) end
      self.anchors[base .. "#" .. da] = self.anchors[base .. "#" .. da] or node
      local t = self.dynamic[base]
      if not t then t = {}; self.dynamic[base] = t end
      t[da] = t[da] or node
    end
    if dialect.dynamic == "recursive" and node["$recursiveAnchor"] == true and is_root then
      self.recursive[base] = node
    end
  end
  local pending = self.pending
  for _, key in ipairs { "$ref", "$dynamicRef", "$recursiveRef" } do
    local r = node[key]
    if r ~= nil and (key == "$ref" or dialect.keywords[key]) then
      if type(r) ~= "string" then throw("schema", "%s: '%s' must be a string", path, key) end
      if key ~= "$ref" then self.uses_dynamic = true end
      pending[#pending + 1] = { node = node, key = key }
    end
  end
  -- the subschemas
  local kw = dialect.keywords
  depth = depth + 1
  for k, v in pairs(node) do
    if type(v) == "table" and (kw[k] or k == "$defs" or k == "definitions") then
      if ONE[k] then
        self:index(v, base, dialect, depth, false, sub_path(path, k))
      elseif MAP[k] or (k == "dependencies" and not is_list(v)) then
        for name, sub in pairs(v) do
          if type(sub) == "table" and not (k == "dependencies" and is_list(sub)) then
            self:index(sub, base, dialect, depth, false, sub_path(path, k, name))
          end
        end
      elseif LIST[k] or k == "items" then
        if k == "items" and not is_list(v) then
          self:index(v, base, dialect, depth, false, sub_path(path, k))
        elseif is_list(v) then
          for i = 1, #v do self:index(v[i], base, dialect, depth, false, sub_path(path, k, i)) end
        end
      end
    end
  end
end

-- Walks a JSON Pointer from `node` (at base `base`); -> the target and its base.
local function walk(self, node, base, pointer, ref)
  local toks = uri.pointer(pointer)
  if not toks then throw("schema", "$ref '%s': bad JSON Pointer '%s'", ref, pointer) end
  for _, tok in ipairs(toks) do
    if type(node) ~= "table" then return nil end
    local nxt = node[tok]
    if nxt == nil and tok:match("^%d+$") and is_list(node) then nxt = node[tonumber(tok) + 1] end
    node = nxt
    local info = type(node) == "table" and self.info[node]
    if info then base = info.base end
  end
  return node, base
end

--- The subschema `ref` names, from a subschema at base `base` in `dialect`: the node (a
-- table or a boolean) and its info; throws when it does not resolve.
function Registry:resolve(ref, base, dialect, key)
  local full = resolve(base, ref)
  local hit = self.resolved[full]
  if hit then return hit[1], hit[2] end
  local u, frag = split(full)
  local doc = self.resources[u]
  if doc == nil then
    doc = self:load(u, key or "$ref")
    self.resources[u] = doc
    if type(doc) == "table" then self:index(doc, u, dialect, 0, true, u) end
    doc = self.resources[u]
  end
  local target, tbase
  if frag == "" then
    target, tbase = doc, u
  elseif frag:sub(1, 1) == "/" then
    local dinfo = type(doc) == "table" and self.info[doc]
    target, tbase = walk(self, doc, dinfo and dinfo.base or u, frag, ref)
  else
    target = self.anchors[u .. "#" .. frag]
    tbase = u
  end
  if target == nil then
    throw("schema", "%s '%s' does not resolve (%s)", key or "$ref", ref,
      frag:sub(1, 1) == "/" and "no such location" or "no such anchor")
  end
  if type(target) ~= "table" and type(target) ~= "boolean" then
    throw("schema", "%s '%s' does not name a schema", key or "$ref", ref)
  end
  local info = type(target) == "table" and self.info[target]
  if type(target) == "table" and not info then
    -- a location no keyword made a subschema: index it where it is
    self:index(target, tbase, dialect, 0, false, fmt("%s#%s", u, frag))
    info = self.info[target]
  end
  info = info or { base = tbase, dialect = dialect }
  self.resolved[full] = { target, info }
  return target, info
end

--- Resolves every reference indexed so far, and those of the documents that loads, so that
-- an unresolved one fails now and not on the first value that reaches it.
function Registry:resolve_all()
  local pending, i = self.pending, 1
  while pending[i] do
    local p = pending[i]
    local info = self.info[p.node]
    local r = p.node[p.key]
    if p.key == "$recursiveRef" then
      if r ~= "#" then throw("schema", "%s: '$recursiveRef' must be '#'", info.path) end
    else
      self:resolve(r, info.base, info.dialect, p.key)
    end
    i = i + 1
  end
end

--- Indexes the root schema and resolves what it references.
-- @param schema the root (table or boolean)
-- @tparam string base its URI ("" when it has none)
function Registry:add_root(schema, base)
  if type(schema) == "table" then
    self:index(schema, base, self.default, 0, true, "")
  end
  self:resolve_all()
end

return M
