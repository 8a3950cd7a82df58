--- The JSON Schema validator: `compile(schema, opts)` indexes the schema and what it
-- references (`claude.schema.registry`), then turns every subschema into a closure, once, that
-- checks values many times (the keywords are `claude.schema.keywords`). A malformed schema
-- throws a `schema` failure (`errors.throw`) naming its path.
--
-- Costs are paid only by schemas that use what costs: the step budget is counted only when
-- a schema can apply more than one subschema to one value (combinators, references), the
-- dynamic scope is kept only for `$dynamicRef`/`$recursiveRef`, and annotations (which
-- properties and items were evaluated) are collected only under `unevaluatedProperties` and
-- `unevaluatedItems`, by a second compilation of the subschemas applied in place there.
-- @module claude.schema.validator
local json = require "claude.json"
local common = require "claude.schema.common"
local keywords = require "claude.schema.keywords"
local registry = require "claude.schema.registry"
local uri = require "claude.schema.uri"

local M = {}

local object_mt = json.object_mt
local type, pairs, next, rawlen, getmetatable, tostring = type, pairs, next, rawlen,
  getmetatable, tostring
local fmt = string.format
local bad = common.bad
local kind, merge, PLAIN = keywords.kind, keywords.merge, keywords.PLAIN

M.kind = kind

--- The flat objects among compiled nodes: node -> `{ kinds = "...", names = {...} }` for a
-- node that is an object of string, number and boolean properties alone (the input of most
-- tools), which `core.flat_validator` checks in one C call (claude.schema).
M.flat = setmetatable({}, { __mode = "k" })
M.located = keywords.located

--- The bounds' defaults: generous for hand-written and generated schemas.
M.defaults = { max_depth = 64, max_subschemas = 10000, max_steps = 1000000,
  max_ref_depth = 500 }

local function always() return true end
local function never() return nil, "no value is allowed here", "", "" end

local compile

-- A reference followed, as a check `(v, k, ann)` or, with `node`, as the whole of a node
-- that holds only the reference `(v, ann)`. Only a reference back to a subschema that
-- encloses it (`loop`) can recurse without end: it counts the depth. `push` enters the
-- target's resource into the dynamic scope. Steps are counted by the nodes that apply
-- several subschemas to a value, not here: a reference multiplies nothing.
local function ref_call(ctx, f, push, key, node, loop)
  local st, limit = ctx.st, ctx.max_ref_depth
  local too_deep = fmt("references nested deeper than %d levels (a $ref loop, or a value too "
    .. "deep for its schema)", limit)
  local call
  if not push and not loop then
    call = function(v, ann)
      local ok, m, p, w = f(v, ann)
      if ok then return true end
      return nil, m, p, key .. w
    end
  elseif not push then
    call = function(v, ann)
      local d = st.depth + 1
      if d > limit then return nil, too_deep, "", key end
      st.depth = d
      local ok, m, p, w = f(v, ann)
      st.depth = d - 1
      if ok then return true end
      return nil, m, p, key .. w
    end
  else
    call = function(v, ann)
      local d = st.depth + 1
      if d > limit then return nil, too_deep, "", key end
      st.depth = d
      local n = st.n + 1
      st.n, st.scope[n] = n, push
      local ok, m, p, w = f(v, ann)
      st.depth, st.n = d - 1, n - 1
      if ok then return true end
      return nil, m, p, key .. w
    end
  end
  if node then return call end
  return function(v, _, ann) return call(v, ann) end
end

-- $dynamicRef / $recursiveRef: the outermost resource of the dynamic scope that has the
-- anchor wins over the static target.
local function dynamic_call(ctx, static, by, key, node)
  local st = ctx.st
  local scope = st.scope
  return ref_call(ctx, function(v, ann)
    local f = static
    for i = 1, st.n do
      local g = by[scope[i]]
      if g then f = g; break end
    end
    return f(v, ann)
  end, false, key, node, true)
end

-- Appends the reference checks; returns a maker of the node closure when there is exactly
-- one reference (for a node that holds nothing else).
local function add_refs(s, checks, ctx, path, info, mode)
  local reg, d = ctx.reg, info.dialect
  local makers = {}
  local function add(maker)
    makers[#makers + 1] = maker
    checks[#checks + 1] = maker(false)
  end
  local function target_of(r, key)
    local t, tinfo = reg:resolve(r, info.base, d, key)
    local loop = ctx.compiling[t] or false
    local f = compile(t, ctx, mode, tinfo.path or path)
    local push = ctx.dynamic and tinfo.base ~= info.base and tinfo.base
    return t, f, push, loop
  end
  local r = s["$ref"]
  if r ~= nil then
    local _, f, push, loop = target_of(r, "$ref")
    add(function(node) return ref_call(ctx, f, push, "/$ref", node, loop) end)
  end
  if d.keywords["$dynamicRef"] and s["$dynamicRef"] ~= nil then
    local dr = s["$dynamicRef"]
    local t, f, push, loop = target_of(dr, "$dynamicRef")
    local _, frag = uri.split(uri.resolve(info.base, dr))
    if frag ~= "" and frag:sub(1, 1) ~= "/" and type(t) == "table"
        and t["$dynamicAnchor"] == frag then
      local by = {}
      for base, anchors in pairs(reg.dynamic) do
        local node = anchors[frag]
        if node then by[base] = compile(node, ctx, mode, reg.info[node].path) end
      end
      add(function(node) return dynamic_call(ctx, f, by, "/$dynamicRef", node) end)
    else
      add(function(node) return ref_call(ctx, f, push, "/$dynamicRef", node, loop) end)
    end
  end
  if d.keywords["$recursiveRef"] and s["$recursiveRef"] ~= nil then
    local t, f, push, loop = target_of("#", "$recursiveRef")
    if type(t) == "table" and t["$recursiveAnchor"] == true then
      local by = {}
      for base, node in pairs(reg.recursive) do
        by[base] = compile(node, ctx, mode, reg.info[node].path)
      end
      add(function(node) return dynamic_call(ctx, f, by, "/$recursiveRef", node) end)
    else
      add(function(node) return ref_call(ctx, f, push, "/$recursiveRef", node, loop) end)
    end
  end
  return #makers == 1 and makers[1] or nil
end

-- The usual tool input, {type = "object", properties = ..., required = ...,
-- additionalProperties = ...} and nothing more, checked in one pass without classifying the
-- value first. What it refuses it reports as the general validator would, in the same order
-- (required, properties, then the other keys); only a value that is no plain object, or
-- lacks a required property, goes to the general validator, which says why without running
-- any subschema (running them again, at every level of a deep value, would double the work
-- per level).
local function fast_object(o, general)
  local names, subs, reqs, known, addl = o.names, o.subs, o.reqs, o.known, o.addl
  local segs, keys, seg, nleaf = o.segs, o.keys, o.seg, o.nleaf
  local np, nr = #names, #reqs
  -- a leaf run again, for its message
  local function fail(i, x)
    local _, m, p, w = subs[i](x)
    return nil, m, segs[i] .. p, keys[i] .. w
  end
  if addl == nil and nleaf == np then -- the shorthand's shape: the leanest closure
    return function(v)
      if type(v) ~= "table" then return general(v) end
      local mt = getmetatable(v)
      if mt == nil then
        if rawlen(v) ~= 0 then return general(v) end
      elseif mt ~= object_mt then
        return general(v)
      end
      for i = 1, nr do
        if v[reqs[i]] == nil then return general(v) end
      end
      for i = 1, np do
        local x = v[names[i]]
        if x ~= nil and not subs[i](x) then return fail(i, x) end
      end
      return true
    end
  end
  return function(v)
    if type(v) ~= "table" then return general(v) end
    local mt = getmetatable(v)
    if mt == nil then
      if rawlen(v) ~= 0 then return general(v) end
    elseif mt ~= object_mt then
      return general(v)
    end
    for i = 1, nr do
      if v[reqs[i]] == nil then return general(v) end
    end
    for i = 1, nleaf do
      local x = v[names[i]]
      if x ~= nil and not subs[i](x) then return fail(i, x) end
    end
    for i = nleaf + 1, np do
      local x = v[names[i]]
      if x ~= nil then
        local ok, m, p, w = subs[i](x)
        if not ok then return nil, m, segs[i] .. p, keys[i] .. w end
      end
    end
    if addl == nil then return true end
    for key, x in next, v do
      if not known[key] then
        if addl == false then
          return nil, "unexpected property '" .. tostring(key) .. "'", "", "/additionalProperties"
        end
        local ok, m, p, w = addl(x)
        if not ok then return nil, m, seg(key) .. p, "/additionalProperties" .. w end
      end
    end
    return true
  end
end

-- The node's checks in order, over one classification of the value; counting a step when
-- the schema is one that can multiply work.
local function general(ctx, checks)
  local n = #checks
  if n == 0 then return always end
  if ctx.counted then
    local st, over = ctx.st, ctx.over
    return function(v, ann)
      local left = st.steps - 1
      st.steps = left
      if left < 0 then return nil, over, "", "" end
      local k = kind(v)
      for i = 1, n do
        local ok, m, p, w = checks[i](v, k, ann)
        if not ok then return nil, m, p, w end
      end
      return true
    end
  end
  if n == 1 then
    local c = checks[1]
    return function(v, ann) return c(v, kind(v), ann) end
  end
  return function(v, ann)
    local k = kind(v)
    for i = 1, n do
      local ok, m, p, w = checks[i](v, k, ann)
      if not ok then return nil, m, p, w end
    end
    return true
  end
end

-- A node with unevaluated*: its own marks, then the unevaluated checks, then the marks go
-- up to an enclosing node that collects them too.
local function with_unevaluated(ctx, checks, uchecks)
  local n, nu = #checks, #uchecks
  local st, over = ctx.st, ctx.over
  return function(v, ann)
    local left = st.steps - 1
    st.steps = left
    if left < 0 then return nil, over, "", "" end
    local k = kind(v)
    local a = {}
    for i = 1, n do
      local ok, m, p, w = checks[i](v, k, a)
      if not ok then return nil, m, p, w end
    end
    for i = 1, nu do
      local ok, m, p, w = uchecks[i](v, k, a)
      if not ok then return nil, m, p, w end
    end
    if ann then merge(ann, a) end
    return true
  end
end

-- `format` as an assertion (the `formats` option: `ctx.formats` maps the asserted names to
-- their checks, claude.schema.formats); a format not asserted stays an annotation.
local function add_format(s, checks, ctx)
  local name = s.format
  local check = type(name) == "string" and ctx.formats[name]
  if not check then return end
  if ctx.formats_idn[name] then require("claude.schema.hostname").require_idn2() end
  local message = "is not a valid " .. name
  checks[#checks + 1] = function(v, k)
    if k ~= "string" or check(v) then return true end
    return nil, message, "", "/format"
  end
end

--- Compiles subschema `s`; `mode` true when the caller collects annotations.
function compile(s, ctx, mode, path)
  if s == true then return always end
  if s == false then return never end
  if type(s) ~= "table" then bad(path, "schema must be a table or a boolean") end
  local memo = mode and ctx.memo_ann or ctx.memo
  local f = memo[s]
  if f then
    if ctx.compiling[s] then ctx.cycle = true end -- a reference back to an enclosing node
    return f
  end
  local info = ctx.reg.info[s]
  if not info then bad(path, "internal error: subschema not indexed") end
  memo[s] = function(v, a) return memo[s](v, a) end -- while compiling: recursion
  ctx.compiling[s] = true
  local d = info.dialect
  local kw = d.keywords
  local checks = {}
  local uneval = (kw.unevaluatedProperties and s.unevaluatedProperties ~= nil)
    or (kw.unevaluatedItems and s.unevaluatedItems ~= nil)
  local inner = mode or uneval
  local leaf, simple, ref_node = false, nil, nil -- luacheck: ignore 311
  if d.ref_alone and s["$ref"] ~= nil then
    ref_node = add_refs(s, checks, ctx, path, info, inner)
  else
    keywords.add_type(s, checks, path, kw)
    local type_only = #checks == 1
    keywords.add_values(s, checks, path, kw)
    keywords.add_numbers(s, checks, path, kw, d)
    keywords.add_strings(s, checks, path, kw)
    if ctx.formats and s.format ~= nil then add_format(s, checks, ctx) end
    keywords.add_arrays(s, checks, ctx, path, kw, d, inner)
    local before = #checks
    local obj = keywords.add_objects(s, checks, ctx, path, kw, inner)
    keywords.add_combinators(s, checks, ctx, path, kw, inner)
    ref_node = add_refs(s, checks, ctx, path, info, inner)
    local n = #checks
    leaf = n == 1 and type_only and not (kw.nullable and s.nullable) and PLAIN[s.type]
    if obj and type_only and before == 1 and n == 2 and s.type == "object"
        and not (kw.nullable and s.nullable) then
      simple = obj
    end
  end
  if uneval then
    local uchecks = {}
    keywords.add_unevaluated(s, uchecks, ctx, path, kw)
    f = with_unevaluated(ctx, checks, uchecks)
  elseif leaf and not mode then
    -- the common leaf {type = "string"|"number"|"boolean"}: one type() test
    local c, want = checks[1], s.type
    if want == "number" then -- and finite
      f = function(v)
        if type(v) == "number" and v - v == 0 then return true end
        return c(v, kind(v))
      end
    else
      f = function(v)
        if type(v) == want then return true end
        return c(v, kind(v))
      end
    end
    ctx.leaves[f] = want -- (the kind of a leaf, for claude.schema's C fast path)
  elseif ref_node and #checks == 1 then -- {"$ref": ...} alone: one closure
    f = ref_node(true)
  else
    f = general(ctx, checks)
    if simple and not mode then
      f = fast_object(simple, f)
      if simple.flat then M.flat[f] = simple.flat end
    end
  end
  if ctx.dynamic and info.root then -- a resource entered: the dynamic scope grows
    local inner_f, st, base = f, ctx.st, info.base
    f = function(v, ann)
      local n = st.n + 1
      st.n, st.scope[n] = n, base
      local ok, m, p, w = inner_f(v, ann)
      st.n = n - 1
      return ok, m, p, w
    end
  end
  memo[s] = f
  ctx.compiling[s] = nil
  return f
end

-- Keywords that can apply several subschemas to one value: with any of them the work is no
-- longer bounded by the value's size, and steps are counted.
local MULTIPLY = { "allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef",
  "$recursiveRef", "dependentSchemas", "dependencies", "unevaluatedProperties",
  "unevaluatedItems" }

--- Compiles a JSON Schema; throws a `schema` (or `unsupported`) failure for one it refuses.
-- @param json_schema a table or a boolean
-- @tparam table opts `dialect` (a dialect table), `loader`, `base_uri`, `formats` (nil, or
--   the asserted formats: name -> check), and the bounds `max_depth`, `max_subschemas`,
--   `max_steps`, `max_ref_depth`
-- @treturn function `(value, ann) -> true | nil, message, instance path, keyword path`
-- @treturn table the run state: `steps`, `n`, `depth` (to reset before each call), `counted`
--   (steps are counted), `protect` (call in protected mode: the schema can recurse)
function M.compile(json_schema, opts)
  local reg = registry.new(opts)
  reg:add_root(json_schema, opts.base_uri or "")
  local counted = false
  for node in pairs(reg.info) do
    for i = 1, #MULTIPLY do
      if node[MULTIPLY[i]] ~= nil then counted = true; break end
    end
    if counted then break end
  end
  local st = { steps = 0, n = 0, depth = 0, scope = {} }
  local ctx = {
    reg = reg, memo = {}, memo_ann = {}, compiling = {}, leaves = {}, st = st, compile = compile,
    always = always,
    counted = counted, dynamic = reg.uses_dynamic, max_ref_depth = opts.max_ref_depth,
    formats = opts.formats, formats_idn = opts.formats and require("claude.schema.formats").IDN,
    over = fmt("validation stopped after %d steps (max_steps): the schema applies too many "
      .. "subschemas to this value", opts.max_steps),
  }
  local root = compile(json_schema, ctx, false, "")
  -- a cycle (of references, or of Lua tables) can recurse as deep as the value: a protected
  -- call catches what the depth bound does not
  st.counted, st.protect = counted or ctx.cycle, ctx.cycle
  return root, st
end

return M
