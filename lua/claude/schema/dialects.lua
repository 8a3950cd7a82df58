--- The JSON Schema dialects the validator knows, named by their meta-schema URIs: draft
-- 2020-12 (the default, as in MCP), 2019-09, draft-07, draft-06 and draft-04. A dialect says
-- which keywords are in force and how the few that changed meaning behave; a custom
-- meta-schema (2019-09 and later) picks vocabularies with `$vocabulary`.
-- @module claude.schema.dialects
local M = {}

local function set(s)
  local t = {}
  for k in s:gmatch("%S+") do t[k] = true end
  return t
end

local function union(...)
  local t = {}
  for _, s in ipairs { ... } do
    for k in pairs(s) do t[k] = true end
  end
  return t
end

-- The vocabularies of 2020-12 and 2019-09, by URI: the keywords each puts in force
-- (annotation-only vocabularies bring none). `dependencies`, split into `dependentRequired`
-- and `dependentSchemas` in 2019-09, is still enforced where it is written (the test suite's
-- optional compatibility): a constraint its author meant. `nullable` is OpenAPI's.
local V20 = "https://json-schema.org/draft/2020-12/vocab/"
local V19 = "https://json-schema.org/draft/2019-09/vocab/"
local VOCABULARIES = {
  [V20 .. "core"] = set "$id $schema $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $defs",
  [V20 .. "applicator"] = set [[prefixItems items contains additionalProperties properties
    patternProperties dependentSchemas propertyNames if then else allOf anyOf oneOf not
    dependencies]],
  [V20 .. "unevaluated"] = set "unevaluatedItems unevaluatedProperties",
  [V20 .. "validation"] = set [[type const enum multipleOf maximum exclusiveMaximum minimum
    exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems maxContains
    minContains maxProperties minProperties required dependentRequired nullable]],
  [V20 .. "meta-data"] = {},
  [V20 .. "format-annotation"] = {},
  [V20 .. "content"] = {},
  [V19 .. "core"] = set [[$id $schema $ref $anchor $recursiveRef $recursiveAnchor $vocabulary
    $defs]],
  [V19 .. "applicator"] = set [[additionalItems unevaluatedItems items contains
    additionalProperties unevaluatedProperties properties patternProperties dependentSchemas
    propertyNames if then else allOf anyOf oneOf not dependencies]],
  [V19 .. "validation"] = set [[type const enum multipleOf maximum exclusiveMaximum minimum
    exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems maxContains
    minContains maxProperties minProperties required dependentRequired nullable]],
  [V19 .. "meta-data"] = {},
  [V19 .. "format"] = {},
  [V19 .. "content"] = {},
}
M.vocabularies = VOCABULARIES

local function vocab_union(prefix, names)
  local t = {}
  for name in names:gmatch("%S+") do
    for k in pairs(VOCABULARIES[prefix .. name]) do t[k] = true end
  end
  return t
end

local DRAFT6 = set [[$id $schema $ref definitions type enum const multipleOf maximum
  exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern items additionalItems
  maxItems minItems uniqueItems contains maxProperties minProperties required properties
  patternProperties additionalProperties dependencies propertyNames allOf anyOf oneOf not
  nullable]]

--- The known dialects by name. Fields: `name`, `uri` (the meta-schema), `keywords` (a set),
-- `id` (`"$id"` or `"id"`), `ref_alone` (a `$ref` hides its siblings, up to draft-07),
-- `anchors` (`$anchor`; before: `$id: "#name"`), `dynamic` (`"dynamic"`, `"recursive"` or
-- nil), `prefix_items` (2020-12: `prefixItems`, `items` is the rest), `booleans` (boolean
-- schemas), `exclusive_bool` (draft-04's `exclusiveMinimum: true`), `contains_ann`
-- (`contains` marks items evaluated).
M.known = {
  ["2020-12"] = { name = "2020-12", uri = "https://json-schema.org/draft/2020-12/schema",
    keywords = vocab_union(V20, "core applicator unevaluated validation"), id = "$id",
    anchors = true, dynamic = "dynamic", prefix_items = true, booleans = true,
    contains_ann = true, vocab_prefix = V20 },
  ["2019-09"] = { name = "2019-09", uri = "https://json-schema.org/draft/2019-09/schema",
    keywords = vocab_union(V19, "core applicator validation"), id = "$id", anchors = true,
    dynamic = "recursive", booleans = true, vocab_prefix = V19 },
  ["draft-07"] = { name = "draft-07", uri = "http://json-schema.org/draft-07/schema#",
    keywords = union(DRAFT6, set "if then else"), id = "$id", ref_alone = true,
    booleans = true },
  ["draft-06"] = { name = "draft-06", uri = "http://json-schema.org/draft-06/schema#",
    keywords = DRAFT6, id = "$id", ref_alone = true, booleans = true },
  ["draft-04"] = { name = "draft-04", uri = "http://json-schema.org/draft-04/schema#",
    keywords = set [[id $schema $ref definitions type enum multipleOf maximum
      exclusiveMaximum minimum exclusiveMinimum maxLength minLength pattern items
      additionalItems maxItems minItems uniqueItems maxProperties minProperties required
      properties patternProperties additionalProperties dependencies allOf anyOf oneOf not
      nullable]],
    id = "id", ref_alone = true, exclusive_bool = true },
}

local BY_URI = {}
for name, d in pairs(M.known) do
  BY_URI[d.uri] = d
  BY_URI[d.uri:gsub("#$", "")] = d
  -- the other scheme, and an empty fragment, are common spellings
  local other = d.uri:gsub("#$", "")
  other = other:match("^https:") and other:gsub("^https:", "http:") or
    other:gsub("^http:", "https:")
  BY_URI[other], BY_URI[other .. "#"], BY_URI[d.uri:gsub("#$", "") .. "#"] = d, d, d
  BY_URI[name] = d
end
BY_URI.draft7, BY_URI.draft6, BY_URI.draft4 = M.known["draft-07"], M.known["draft-06"],
  M.known["draft-04"]
BY_URI["draft2020-12"], BY_URI["draft2019-09"] = M.known["2020-12"], M.known["2019-09"]

--- The dialect a `$schema` value (or a short name: `"2020-12"`, `"draft-07"`, ...) names,
-- or nil when it is not one of the standard meta-schemas.
-- @tparam string uri
-- @treturn table|nil
function M.get(uri)
  return BY_URI[uri]
end

--- The names of the known dialects, for messages.
M.names = "2020-12, 2019-09, draft-07, draft-06, draft-04"

--- A dialect made from a custom meta-schema's `$vocabulary` on top of `base` (the dialect of
-- the meta-schema itself). -> dialect, or nil and why (a required vocabulary unknown).
-- @tparam table base
-- @tparam table vocabulary URI -> required
function M.custom(base, vocabulary, uri)
  local d = {}
  for k, v in pairs(base) do d[k] = v end
  d.uri, d.name = uri, uri
  local kw = {}
  for vuri, required in pairs(vocabulary) do
    local words = VOCABULARIES[vuri]
    if words then
      for k in pairs(words) do kw[k] = true end
    elseif required == true then
      return nil, ("meta-schema '%s' requires vocabulary '%s', which is not supported")
        :format(uri, tostring(vuri))
    end
  end
  -- the core vocabulary is always in force
  for k in pairs(VOCABULARIES[(base.vocab_prefix or V20) .. "core"]) do kw[k] = true end
  d.keywords = kw
  return d
end

return M
