--- The keywords of JSON Schema as checks: each `add_*` reads its keywords from a schema
-- object and appends closures `check(v, kind, ann) -> true | nil, message, instance path,
-- keyword path` to a list, compiled once. `ann` is nil unless the schema (or one it is
-- applied in place of) uses `unevaluatedProperties`/`unevaluatedItems`: then the checks that
-- evaluate properties or items mark them in it (see `claude.schema.validator`).
--
-- One file of some 850 lines: the keyword families share the check signature, the message
-- style and the annotation marks, and each is short; split, they would only import each
-- other's helpers.
-- @module claude.schema.keywords
local json = require "claude.json"
local common = require "claude.schema.common"
local regex = require "claude.schema.regex"
local errors = require "claude.errors"
local uri = require "claude.schema.uri"

local M = {}

local array_mt = json.array_mt
local type, pairs, next, rawlen, tostring, ipairs = type, pairs, next, rawlen, tostring, ipairs
local getmetatable, setmetatable = getmetatable, setmetatable
local floor, huge, math_type, abs, fmod = math.floor, math.huge, math.type, math.abs, math.fmod
local fmt, concat, sort = string.format, table.concat, table.sort
local utf8_len = utf8.len
local bad, ident, is_list, sub_path = common.bad, common.ident, common.is_list, common.sub_path
local esc = uri.escape_token

local kind = common.kind
M.kind = kind

local function show(v)
  local ok, s = pcall(json.encode, v)
  if not ok then s = tostring(v) end
  if #s > 60 then s = s:sub(1, 57) .. "..." end
  return s
end
M.show = show

-- JSON equality: 1 == 1.0, [] ~= {}, keys compared as sets.
local function equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  local ka, kb = kind(a), kind(b)
  if ka == "empty" then ka = "object" end
  if kb == "empty" then kb = "object" end
  if ka ~= kb then return false end
  for k, x in pairs(a) do
    if not equal(x, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end
M.equal = equal

-- A canonical text of a value, equal for equal values: how uniqueItems hashes.
local function canon(v, out)
  local k = kind(v)
  if k == "array" then
    out[#out + 1] = "["
    for i = 1, rawlen(v) do canon(v[i], out); out[#out + 1] = "," end
    out[#out + 1] = "]"
  elseif k == "object" or k == "empty" then
    local keys = {}
    for key in pairs(v) do keys[#keys + 1] = tostring(key) end
    sort(keys)
    out[#out + 1] = "{"
    for _, key in ipairs(keys) do
      out[#out + 1] = fmt("%q:", key)
      canon(v[key], out)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif k == "string" then
    out[#out + 1] = fmt("%q", v)
  elseif k == "integer" then
    out[#out + 1] = fmt("%.17g", v)
  else
    out[#out + 1] = tostring(v)
  end
end

local GOT = { integer = "number", empty = "object" }
local TYPE_OK = {
  null = { null = true }, boolean = { boolean = true }, string = { string = true },
  integer = { integer = true }, number = { integer = true, number = true },
  array = { array = true }, object = { object = true, empty = true },
}
M.PLAIN = { string = true, number = true, boolean = true }

local function seg(name)
  if ident(name) then return "." .. name end
  return fmt("[%q]", tostring(name))
end

--- `message` at `path` as the validator's users see it: `"tags[2]: expected string"`.
local function located(m, p)
  if p ~= "" then return (p:gsub("^%.", "")) .. ": " .. m end
  return m
end
M.located = located

-- A branch's reason inside anyOf/oneOf's message, cut: nested combinators would otherwise
-- build messages that double at every level.
local function reason(m, p)
  local s = located(m, p)
  if #s > 200 then s = s:sub(1, 197) .. "..." end
  return s
end

local function num(s, key, path)
  local v = s[key]
  if v ~= nil and (type(v) ~= "number" or v - v ~= 0) then
    bad(path, "'%s' must be a number", key)
  end
  return v
end

local function count(s, key, path)
  local v = s[key]
  if v ~= nil and (type(v) ~= "number" or v ~= floor(v) or v < 0) then
    bad(path, "'%s' must be a non-negative integer", key)
  end
  return v
end

local function plural(n, word)
  return fmt("%d %s%s", n, word, n == 1 and "" or "s")
end

-- Annotations: what in-place subschemas evaluated, for unevaluated*.
local function mark_prop(ann, name)
  local p = ann.props
  if not p then p = {}; ann.props = p end
  p[name] = true
end

--- Adds `src`'s marks to `dst`.
function M.merge(dst, src)
  local sp = src.props
  if sp then
    local dp = dst.props
    if not dp then dp = {}; dst.props = dp end
    for k in pairs(sp) do dp[k] = true end
  end
  local si = src.items
  if si and (dst.items or 0) < si then dst.items = si end
  local sc = src.contains
  if sc then
    local dc = dst.contains
    if not dc then dc = {}; dst.contains = dc end
    for k in pairs(sc) do dc[k] = true end
  end
end
local merge = M.merge

---------------------------------------------------------------------------------------------
-- Assertions
---------------------------------------------------------------------------------------------

function M.add_type(s, checks, path, kw)
  local ty = kw.type and s.type
  local nullable = kw.nullable and s.nullable == true
  if not ty then
    if nullable then return end
    return
  end
  local names = type(ty) == "table" and ty or { ty }
  if type(ty) == "table" and #names == 0 then
    bad(path, "'type' must be a type name or a list of them")
  end
  local ok = {}
  for i = 1, #names do
    local set = TYPE_OK[names[i]]
    if not set then bad(path, "unknown type '%s'", tostring(names[i])) end
    for k in pairs(set) do ok[k] = true end
  end
  if nullable then ok.null = true end
  local want = concat(names, " or ")
  if nullable then want = want .. " or null" end
  local got = GOT
  if ok.array then -- an unmarked {} is an object: say how to write an empty array
    got = setmetatable({ empty = "object (an unmarked {}; json.array() marks an empty array)" },
      { __index = GOT })
  end
  checks[#checks + 1] = function(_, k)
    if ok[k] then return true end
    return nil, "expected " .. want .. ", got " .. (got[k] or k), "", "/type"
  end
  return true
end

function M.add_values(s, checks, path, kw)
  local enum = kw.enum and s.enum
  if enum ~= nil then
    if not is_list(enum) and not (type(enum) == "table" and getmetatable(enum) == array_mt) then
      bad(path, "'enum' must be a list")
    end
    local shown = {}
    for i = 1, #enum do shown[i] = show(enum[i]) end
    local want = #enum == 1 and "expected " .. shown[1]
      or "expected one of " .. concat(shown, ", ")
    -- scalars by a hash look-up (equal is == for them; a NaN equals nothing), the rest by
    -- equal: a 50,000-entry enum would otherwise cost 50,000 compares a value
    local set, others = {}, {}
    for i = 1, #enum do
      local e = enum[i]
      if type(e) == "table" then others[#others + 1] = e elseif e == e then set[e] = true end
    end
    local n = #others
    checks[#checks + 1] = function(v)
      if type(v) ~= "table" then
        if set[v] then return true end
      else
        for i = 1, n do
          if equal(others[i], v) then return true end
        end
      end
      return nil, want .. ", got " .. show(v), "", "/enum"
    end
  end
  if kw.const and s.const ~= nil then
    local c = s.const
    local want = "expected " .. show(c)
    checks[#checks + 1] = function(v)
      if equal(c, v) then return true end
      return nil, want .. ", got " .. show(v), "", "/const"
    end
  end
end

local function multiple(v, m)
  if math_type(v) == "integer" and math_type(m) == "integer" then return v % m == 0 end
  local q = v / m
  if q - q ~= 0 then return fmod(v, m) == 0 end -- the quotient overflowed: fmod is exact
  local r = floor(q + 0.5)
  -- decimal multipleOf values are not exact in binary: 0.0075 / 0.0001 = 74.99999999999999
  return abs(q - r) <= 1e-9 * (abs(q) > 1 and abs(q) or 1)
end

function M.add_numbers(s, checks, path, kw, dialect)
  local min = kw.minimum and num(s, "minimum", path)
  local max = kw.maximum and num(s, "maximum", path)
  local xmin = kw.exclusiveMinimum and s.exclusiveMinimum
  local xmax = kw.exclusiveMaximum and s.exclusiveMaximum
  local xmin_kw, xmax_kw = "/exclusiveMinimum", "/exclusiveMaximum"
  if dialect.exclusive_bool then
    if xmin ~= nil and type(xmin) ~= "boolean" then
      bad(path, "'exclusiveMinimum' must be a boolean")
    end
    if xmax ~= nil and type(xmax) ~= "boolean" then
      bad(path, "'exclusiveMaximum' must be a boolean")
    end
    if xmin == true then xmin, min, xmin_kw = min, nil, "/minimum" else xmin = nil end
    if xmax == true then xmax, max, xmax_kw = max, nil, "/maximum" else xmax = nil end
  else
    -- booleans too: OpenAPI 3.0 and draft-04 habits still write them
    if xmin == true then xmin, min = min, nil elseif xmin == false then xmin = nil end
    if xmax == true then xmax, max = max, nil elseif xmax == false then xmax = nil end
    if xmin ~= nil and type(xmin) ~= "number" then
      bad(path, "'exclusiveMinimum' must be a number")
    end
    if xmax ~= nil and type(xmax) ~= "number" then
      bad(path, "'exclusiveMaximum' must be a number")
    end
  end
  local mult = kw.multipleOf and num(s, "multipleOf", path)
  if mult and mult <= 0 then bad(path, "'multipleOf' must be positive") end
  if not (min or max or xmin or xmax or mult) then return end
  checks[#checks + 1] = function(v, k)
    if k ~= "integer" and k ~= "number" then return true end
    if min and v < min then
      return nil, fmt("must be >= %s, got %s", show(min), show(v)), "", "/minimum"
    end
    if max and v > max then
      return nil, fmt("must be <= %s, got %s", show(max), show(v)), "", "/maximum"
    end
    if xmin and v <= xmin then
      return nil, fmt("must be > %s, got %s", show(xmin), show(v)), "", xmin_kw
    end
    if xmax and v >= xmax then
      return nil, fmt("must be < %s, got %s", show(xmax), show(v)), "", xmax_kw
    end
    if mult and not multiple(v, mult) then
      return nil, fmt("must be a multiple of %s, got %s", show(mult), show(v)), "", "/multipleOf"
    end
    return true
  end
end

--- A compiled pattern, or a thrown failure: `schema` for a bad one, `unsupported` when it
-- cannot be checked here (not enforcing it would let every string through).
function M.pattern(p, path)
  if type(p) ~= "string" then bad(path, "'pattern' must be a string") end
  local re, err, why = errors.catch(pcall(regex.compile, p))
  if not re then
    if why == "unsupported" then
      errors.throw("unsupported", (path ~= "" and path .. ": " or "") .. err.message)
    end
    bad(path, "%s", err.message)
  end
  return re
end

function M.add_strings(s, checks, path, kw)
  local minl = kw.minLength and count(s, "minLength", path)
  local maxl = kw.maxLength and count(s, "maxLength", path)
  local pat = kw.pattern and s.pattern
  local re = pat ~= nil and M.pattern(pat, path) or nil
  if not (minl or maxl or re) then return end
  checks[#checks + 1] = function(v, k)
    if k ~= "string" then return true end
    if minl or maxl then
      local n = utf8_len(v) or #v
      if minl and n < minl then
        return nil, "must be at least " .. plural(minl, "character") .. " long", "", "/minLength"
      end
      if maxl and n > maxl then
        return nil, "must be at most " .. plural(maxl, "character") .. " long", "", "/maxLength"
      end
    end
    if re then
      local ok, err = re(v)
      if not ok then
        if ok == nil then
          return nil, fmt("pattern '%s' could not be checked: %s", pat, err), "", "/pattern"
        end
        return nil, fmt("does not match pattern '%s'", pat), "", "/pattern"
      end
    end
    return true
  end
end

-- uniqueItems in linear time: scalars by value, containers by a canonical text.
local function duplicate(v, n)
  local seen = {}
  for i = 1, n do
    local x = v[i]
    local key = x
    if type(x) == "table" then
      local out = { "\0" }
      canon(x, out)
      key = concat(out)
    elseif type(x) == "number" and x ~= x then
      key = nil
    end
    if key ~= nil then
      local j = seen[key]
      if j then return i, j end
      seen[key] = i
    end
  end
end

---------------------------------------------------------------------------------------------
-- Arrays
---------------------------------------------------------------------------------------------

function M.add_arrays(s, checks, ctx, path, kw, dialect, mode)
  local compile = ctx.compile
  local tuple, rest, tuple_kw, rest_kw
  if dialect.prefix_items then
    if kw.prefixItems and s.prefixItems ~= nil then
      if not is_list(s.prefixItems) then bad(path, "'prefixItems' must be a list of schemas") end
      tuple, tuple_kw = {}, "/prefixItems/"
      for i = 1, #s.prefixItems do
        tuple[i] = compile(s.prefixItems[i], ctx, false, sub_path(path, "prefixItems", i))
      end
    end
    if kw.items and s.items ~= nil then
      if is_list(s.items) then bad(path, "'items' must be a schema (a list is 'prefixItems')") end
      rest, rest_kw = compile(s.items, ctx, false, sub_path(path, "items")), "/items"
    end
  elseif kw.items and s.items ~= nil then
    if is_list(s.items) then
      tuple, tuple_kw = {}, "/items/"
      for i = 1, #s.items do
        tuple[i] = compile(s.items[i], ctx, false, sub_path(path, "items", i))
      end
      if kw.additionalItems and s.additionalItems ~= nil then
        rest = compile(s.additionalItems, ctx, false, sub_path(path, "additionalItems"))
        rest_kw = "/additionalItems"
      end
    else
      rest, rest_kw = compile(s.items, ctx, false, sub_path(path, "items")), "/items"
    end
  end
  local mini = kw.minItems and count(s, "minItems", path)
  local maxi = kw.maxItems and count(s, "maxItems", path)
  local unique = kw.uniqueItems and s.uniqueItems == true
  local nt = tuple and #tuple or 0
  local always = ctx.always
  if tuple or rest or mini or maxi or unique then
    local rest_counts = rest ~= nil -- evaluated, even when it is `true`
    if rest == always then rest = nil end
    checks[#checks + 1] = function(v, k, ann)
      if k ~= "array" then return true end
      local n = rawlen(v)
      if mini and n < mini then
        return nil, "must have at least " .. plural(mini, "item"), "", "/minItems"
      end
      if maxi and n > maxi then
        return nil, "must have at most " .. plural(maxi, "item"), "", "/maxItems"
      end
      for i = 1, n < nt and n or nt do
        local ok, m, p, w = tuple[i](v[i])
        if not ok then return nil, m, "[" .. i .. "]" .. p, tuple_kw .. (i - 1) .. w end
      end
      if rest then
        for i = nt + 1, n do
          local ok, m, p, w = rest(v[i])
          if not ok then return nil, m, "[" .. i .. "]" .. p, rest_kw .. w end
        end
      end
      if unique and n > 1 then
        local i, j = duplicate(v, n)
        if i then
          return nil, fmt("items must be unique (item %d repeats item %d)", i, j), "",
            "/uniqueItems"
        end
      end
      if ann then
        local e = rest_counts and huge or (n < nt and n or nt)
        if (ann.items or 0) < e then ann.items = e end
      end
      return true
    end
  end
  if kw.contains and s.contains ~= nil then
    local c = compile(s.contains, ctx, false, sub_path(path, "contains"))
    local minc = kw.minContains and count(s, "minContains", path) or 1
    local maxc = kw.maxContains and count(s, "maxContains", path)
    local marks = mode and dialect.contains_ann
    checks[#checks + 1] = function(v, k, ann)
      if k ~= "array" then return true end
      local hits, found = 0, nil
      for i = 1, rawlen(v) do
        if c(v[i]) then
          hits = hits + 1
          if marks and ann then
            found = found or {}
            found[i] = true
          elseif hits >= minc and not maxc then
            break
          end
        end
      end
      if hits < minc then
        if minc == 1 then
          return nil, "must contain an item that matches the 'contains' schema", "", "/contains"
        end
        return nil, fmt("must contain at least %d items that match the 'contains' schema", minc),
          "", "/minContains"
      end
      if maxc and hits > maxc then
        return nil, fmt("must contain at most %d items that match the 'contains' schema", maxc),
          "", "/maxContains"
      end
      if found then merge(ann, { contains = found }) end
      return true
    end
  end
end

---------------------------------------------------------------------------------------------
-- Objects
---------------------------------------------------------------------------------------------

-- The names and kinds of a flat object (every property a leaf: string, number, boolean) for
-- core.flat_validator: a byte per name, upper case when required; a required name without a
-- property schema is 'X', checked for presence alone.
local KIND_BYTE = { string = "s", number = "n", boolean = "b" }
local function flat_of(ctx, names, subs, reqs)
  local required, kinds, list = {}, {}, {}
  for i = 1, #reqs do required[reqs[i]] = true end
  for i = 1, #names do
    local k = KIND_BYTE[ctx.leaves[subs[i]]]
    if not k then return nil end
    list[i] = names[i]
    kinds[i] = required[names[i]] and k:upper() or k
    required[names[i]] = nil
  end
  for i = 1, #reqs do
    if required[reqs[i]] then
      required[reqs[i]] = nil
      list[#list + 1] = reqs[i]
      kinds[#kinds + 1] = "X"
    end
  end
  return { kinds = table.concat(kinds), names = list }
end

--- Adds the object keywords; returns what the fast path of `validator` needs when only
-- `properties`, `required` and `additionalProperties` are there.
function M.add_objects(s, checks, ctx, path, kw, mode)
  local compile, always = ctx.compile, ctx.always
  local props = kw.properties and s.properties
  local names, subs, segs, keys, known = {}, {}, {}, {}, {}
  if props then
    if type(props) ~= "table" then bad(path, "'properties' must be a table") end
    for name, sub in pairs(props) do
      known[name] = true
      local f = compile(sub, ctx, false, sub_path(path, "properties", name))
      if f ~= always then
        local i = #names + 1
        names[i], subs[i], segs[i], keys[i] = name, f, seg(name), "/properties/" .. esc(name)
      end
    end
  end
  -- leaves first: the fast path of `validator` calls them for one result, cheaper, and runs
  -- one again for its message (running a larger subschema twice would cost twice)
  local nleaf
  do
    local leaves, rest = {}, {}
    for i = 1, #names do
      local t = ctx.leaves[subs[i]] and leaves or rest
      t[#t + 1] = i
    end
    nleaf = #leaves
    for _, i in ipairs(rest) do leaves[#leaves + 1] = i end
    local n2, s2, g2, k2 = {}, {}, {}, {}
    for j, i in ipairs(leaves) do
      n2[j], s2[j], g2[j], k2[j] = names[i], subs[i], segs[i], keys[i]
    end
    names, subs, segs, keys = n2, s2, g2, k2
  end
  local reqs = {}
  local req = kw.required and s.required
  if req then
    if type(req) ~= "table" then bad(path, "'required' must be a list") end
    for i = 1, #req do
      if type(req[i]) ~= "string" then bad(path, "'required' must list property names") end
      reqs[i] = req[i]
    end
  end
  local pats = {}
  if kw.patternProperties and s.patternProperties ~= nil then
    if type(s.patternProperties) ~= "table" then
      bad(path, "'patternProperties' must be a table")
    end
    for p, sub in pairs(s.patternProperties) do
      pats[#pats + 1] = { M.pattern(p, path), compile(sub, ctx, false,
        sub_path(path, "patternProperties", p)), "/patternProperties/" .. esc(p), p }
    end
  end
  local addl = kw.additionalProperties and s.additionalProperties
  if addl ~= nil and addl ~= false then
    addl = compile(addl, ctx, false, sub_path(path, "additionalProperties"))
  end
  local addl_counts = addl ~= nil and addl ~= false
  if addl == always then addl = nil end
  local names_f = kw.propertyNames and s.propertyNames ~= nil
    and compile(s.propertyNames, ctx, false, sub_path(path, "propertyNames")) or nil
  if names_f == always then names_f = nil end
  local minp = kw.minProperties and count(s, "minProperties", path)
  local maxp = kw.maxProperties and count(s, "maxProperties", path)
  local np, nr, npat = #names, #reqs, #pats
  local marking = mode -- in-place users want the evaluated names
  if np + nr + npat == 0 and addl == nil and not minp and not maxp and not names_f
      and not (marking and (props or addl_counts)) then
    M.add_dependencies(s, checks, ctx, path, kw, mode)
    return
  end
  local scan = addl ~= nil or npat > 0 or minp or maxp or names_f or (marking and addl_counts)
  checks[#checks + 1] = function(v, k, ann)
    if k ~= "object" and k ~= "empty" then return true end
    for i = 1, nr do
      if v[reqs[i]] == nil then
        return nil, "missing required property '" .. reqs[i] .. "'", "", "/required"
      end
    end
    for i = 1, np do
      local x = v[names[i]]
      if x ~= nil then
        local ok, m, p, w = subs[i](x)
        if not ok then return nil, m, segs[i] .. p, keys[i] .. w end
      end
    end
    if marking and ann and props then
      for name in pairs(known) do
        if v[name] ~= nil then mark_prop(ann, name) end
      end
    end
    if scan then
      local n = 0
      for key, x in next, v do
        n = n + 1
        if names_f then
          local ok, m, _, w = names_f(key)
          if not ok then
            return nil, fmt("property name '%s' %s", tostring(key), m), "", "/propertyNames" .. w
          end
        end
        local matched = known[key]
        for i = 1, npat do
          local pk = pats[i]
          if type(key) == "string" then
            local hit, err = pk[1](key)
            if hit == nil then
              return nil, fmt("pattern '%s' could not be checked: %s", pk[4], err), seg(key),
                pk[3]
            end
            if hit then
              matched = true
              local ok, m, p, w = pk[2](x)
              if not ok then return nil, m, seg(key) .. p, pk[3] .. w end
              if marking and ann then mark_prop(ann, key) end
            end
          end
        end
        if not matched then
          if addl == false then
            return nil, "unexpected property '" .. tostring(key) .. "'", "", "/additionalProperties"
          end
          if addl then
            local ok, m, p, w = addl(x)
            if not ok then return nil, m, seg(key) .. p, "/additionalProperties" .. w end
          end
          if marking and ann and addl_counts then mark_prop(ann, key) end
        end
      end
      if minp and n < minp then
        return nil, fmt("must have at least %d properties", minp), "", "/minProperties"
      end
      if maxp and n > maxp then
        return nil, fmt("must have at most %d properties", maxp), "", "/maxProperties"
      end
    end
    return true
  end
  local simple
  if npat == 0 and not minp and not maxp and not names_f then
    simple = { names = names, subs = subs, reqs = reqs, known = known, addl = addl,
      segs = segs, keys = keys, seg = seg, nleaf = nleaf }
    if addl == nil and nleaf == np then simple.flat = flat_of(ctx, names, subs, reqs) end
  end
  if M.add_dependencies(s, checks, ctx, path, kw, mode) then simple = nil end
  return simple
end

-- dependentRequired, dependentSchemas, and draft-07's dependencies (either); -> true if any.
function M.add_dependencies(s, checks, ctx, path, kw, mode)
  local reqs, schemas = {}, {}
  local function required(name, list, key)
    if type(list) ~= "table" then bad(path, "'%s' must map names to lists of names", key) end
    for i = 1, #list do
      if type(list[i]) ~= "string" then bad(path, "'%s' must list property names", key) end
    end
    reqs[#reqs + 1] = { name, list, "/" .. key .. "/" .. esc(name) }
  end
  local function schema(name, sub, key)
    schemas[#schemas + 1] = { name, ctx.compile(sub, ctx, mode, sub_path(path, key, name)),
      "/" .. key .. "/" .. esc(name) }
  end
  if kw.dependentRequired and s.dependentRequired ~= nil then
    if type(s.dependentRequired) ~= "table" then
      bad(path, "'dependentRequired' must be a table")
    end
    for name, list in pairs(s.dependentRequired) do required(name, list, "dependentRequired") end
  end
  if kw.dependentSchemas and s.dependentSchemas ~= nil then
    if type(s.dependentSchemas) ~= "table" then bad(path, "'dependentSchemas' must be a table") end
    for name, sub in pairs(s.dependentSchemas) do schema(name, sub, "dependentSchemas") end
  end
  if kw.dependencies and s.dependencies ~= nil then
    if type(s.dependencies) ~= "table" then bad(path, "'dependencies' must be a table") end
    for name, dep in pairs(s.dependencies) do
      if type(dep) == "table" and (is_list(dep) or getmetatable(dep) == array_mt) then
        required(name, dep, "dependencies")
      else
        schema(name, dep, "dependencies")
      end
    end
  end
  if #reqs == 0 and #schemas == 0 then return false end
  local nr, ns = #reqs, #schemas
  checks[#checks + 1] = function(v, k, ann)
    if k ~= "object" then return true end
    for i = 1, nr do
      local r = reqs[i]
      if v[r[1]] ~= nil then
        local list = r[2]
        for j = 1, #list do
          if v[list[j]] == nil then
            return nil, fmt("missing property '%s' (required when '%s' is present)", list[j],
              r[1]), "", r[3]
          end
        end
      end
    end
    for i = 1, ns do
      local d = schemas[i]
      if v[d[1]] ~= nil then
        local ok, m, p, w = d[2](v, ann)
        if not ok then return nil, m, p, d[3] .. w end
      end
    end
    return true
  end
  return true
end

---------------------------------------------------------------------------------------------
-- In place: allOf, anyOf, oneOf, not, if/then/else
---------------------------------------------------------------------------------------------

local function sub_list(s, key, ctx, path, mode)
  local l = s[key]
  if not is_list(l) and not (type(l) == "table" and getmetatable(l) == array_mt and #l == 0) then
    bad(path, "'%s' must be a list of schemas", key)
  end
  if #l == 0 then bad(path, "'%s' must not be empty", key) end
  local out = {}
  for i = 1, #l do out[i] = ctx.compile(l[i], ctx, mode, sub_path(path, key, i)) end
  return out
end

function M.add_combinators(s, checks, ctx, path, kw, mode)
  if kw.allOf and s.allOf ~= nil then
    local all = sub_list(s, "allOf", ctx, path, mode)
    local n = #all
    checks[#checks + 1] = function(v, _, ann)
      for i = 1, n do
        local ok, m, p, w = all[i](v, ann)
        if not ok then return nil, m, p, "/allOf/" .. (i - 1) .. w end
      end
      return true
    end
  end
  if kw.anyOf and s.anyOf ~= nil then
    local any = sub_list(s, "anyOf", ctx, path, mode)
    local n = #any
    checks[#checks + 1] = function(v, _, ann)
      local why, passed
      for i = 1, n do
        local a = ann and {}
        local ok, m, p = any[i](v, a)
        if ok then
          if not ann then return true end
          merge(ann, a) -- every branch that passes counts for unevaluated*
          passed = true
        elseif not passed then
          why = why or {}
          why[#why + 1] = reason(m, p)
        end
      end
      if passed then return true end
      return nil, "does not match any allowed schema (" .. concat(why, "; ") .. ")", "", "/anyOf"
    end
  end
  if kw.oneOf and s.oneOf ~= nil then
    local one = sub_list(s, "oneOf", ctx, path, mode)
    local n = #one
    checks[#checks + 1] = function(v, _, ann)
      local hits, why, first, kept = 0, {}, nil, nil
      for i = 1, n do
        local a = ann and {}
        local ok, m, p = one[i](v, a)
        if ok then
          hits = hits + 1
          if hits == 1 then first, kept = i, a else
            return nil, fmt("matches more than one schema in 'oneOf' (%d and %d)", first, i), "",
              "/oneOf"
          end
        else
          why[#why + 1] = reason(m, p)
        end
      end
      if hits == 1 then
        if ann then merge(ann, kept) end
        return true
      end
      return nil, "does not match any allowed schema (" .. concat(why, "; ") .. ")", "", "/oneOf"
    end
  end
  if kw["not"] and s["not"] ~= nil then
    local f = ctx.compile(s["not"], ctx, false, sub_path(path, "not"))
    checks[#checks + 1] = function(v)
      if f(v) then return nil, "must not match the schema in 'not'", "", "/not" end
      return true
    end
  end
  if kw["if"] and s["if"] ~= nil then
    local cond = ctx.compile(s["if"], ctx, mode, sub_path(path, "if"))
    local yes = kw["then"] and s["then"] ~= nil and ctx.compile(s["then"], ctx, mode,
      sub_path(path, "then")) or nil
    local no = kw["else"] and s["else"] ~= nil and ctx.compile(s["else"], ctx, mode,
      sub_path(path, "else")) or nil
    if yes or no or mode then
      checks[#checks + 1] = function(v, _, ann)
        local a = ann and {}
        if cond(v, a) then
          if a then merge(ann, a) end
          if not yes then return true end
          local ok, m, p, w = yes(v, ann)
          if not ok then return nil, m, p, "/then" .. w end
          return true
        end
        if not no then return true end
        local ok, m, p, w = no(v, ann)
        if not ok then return nil, m, p, "/else" .. w end
        return true
      end
    end
  end
end

---------------------------------------------------------------------------------------------
-- unevaluatedProperties, unevaluatedItems: last, with the node's own marks
---------------------------------------------------------------------------------------------

function M.add_unevaluated(s, checks, ctx, path, kw)
  local up = kw.unevaluatedProperties and s.unevaluatedProperties
  if up ~= nil and up ~= false then
    up = ctx.compile(up, ctx, false, sub_path(path, "unevaluatedProperties"))
  end
  if up ~= nil then
    checks[#checks + 1] = function(v, k, ann)
      if k ~= "object" then return true end
      local seen = ann.props
      for key, x in next, v do
        if not (seen and seen[key]) then
          if up == false then
            return nil, "unexpected property '" .. tostring(key) .. "'", "",
              "/unevaluatedProperties"
          end
          local ok, m, p, w = up(x)
          if not ok then return nil, m, seg(key) .. p, "/unevaluatedProperties" .. w end
          mark_prop(ann, key)
        end
      end
      return true
    end
  end
  local ui = kw.unevaluatedItems and s.unevaluatedItems
  if ui ~= nil and ui ~= false then
    ui = ctx.compile(ui, ctx, false, sub_path(path, "unevaluatedItems"))
  end
  if ui ~= nil then
    checks[#checks + 1] = function(v, k, ann)
      if k ~= "array" then return true end
      local done, hits = ann.items or 0, ann.contains
      local n = rawlen(v)
      for i = done + 1, n do
        if not (hits and hits[i]) then
          if ui == false then
            return nil, fmt("unexpected item %d", i), "", "/unevaluatedItems"
          end
          local ok, m, p, w = ui(v[i])
          if not ok then return nil, m, "[" .. i .. "]" .. p, "/unevaluatedItems" .. w end
        end
      end
      if n > done then ann.items = n end
      return true
    end
  end
end

return M
