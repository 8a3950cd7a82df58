--- The JSON Schema validator: `compile(schema)` turns a schema into a function, once, that
-- checks values many times (see `claude.schema` for the keywords it knows). A malformed
-- schema throws a `schema` failure (`errors.throw`) naming its path.
-- @module claude.schema.validator
local json = require "claude.json"
local common = require "claude.schema.common"
local regex = require "claude.schema.regex"
local errors = require "claude.errors"

local M = {}

local null = json.null
local array_mt, object_mt = json.array_mt, json.object_mt
local type, pairs, next, rawlen, tostring = type, pairs, next, rawlen, tostring
local getmetatable = getmetatable
local floor, math_type, fmt, concat = math.floor, math.type, string.format, table.concat
local utf8_len = utf8.len
local bad, ident, join, is_list = common.bad, common.ident, common.join, common.is_list

--- The JSON kind of a Lua value: `"null"`, `"boolean"`, `"integer"`, `"number"`, `"string"`,
-- `"array"`, `"object"`, `"empty"` (an unmarked `{}`, either array or object), or the Lua type
-- name for anything else. Integral finite floats are `"integer"`; NaN and the infinities
-- are `"non-finite number"`.
-- @param v
-- @treturn string
local function kind(v)
  if v == null or v == nil then return "null" end
  local t = type(v)
  if t == "number" then
    if math_type(v) == "integer" then return "integer" end
    -- NaN and the infinities are no JSON numbers (a decoder may give one for 1e999)
    if v - v ~= 0 then return "non-finite number" end
    if v == floor(v) then return "integer" end
    return "number"
  elseif t == "table" then
    local mt = getmetatable(v)
    if mt == array_mt then return "array" end
    if mt == object_mt then return "object" end
    local n = rawlen(v)
    if n == 0 then return next(v) == nil and "empty" or "object" end
    local c = 0
    for _ in next, v do
      c = c + 1
      if c > n then return "object" end
    end
    return c == n and "array" or "object"
  end
  return t
end
M.kind = kind

local GOT = { integer = "number", empty = "object" }
-- JSON types that are exactly one Lua type
local PLAIN = { string = true, number = true, boolean = true }
local TYPE_OK = {
  null = { null = true }, boolean = { boolean = true }, string = { string = true },
  integer = { integer = true }, number = { integer = true, number = true },
  array = { array = true }, object = { object = true, empty = true },
}

local function show(v)
  local ok, s = pcall(json.encode, v)
  if not ok then s = tostring(v) end
  if #s > 60 then s = s:sub(1, 57) .. "..." end
  return s
end

local function equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" or a == null or b == null then return false end
  for k, x in pairs(a) do
    if not equal(x, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function always() return true end

local function seg(name)
  if ident(name) then return "." .. name end
  return fmt("[%q]", tostring(name))
end

local compile

local function num(s, key, path)
  local v = s[key]
  if v ~= nil and type(v) ~= "number" then bad(path, "'%s' must be a number", key) end
  return v
end

local function count(s, key, path)
  local v = s[key]
  if v ~= nil and (math_type(v) ~= "integer" and not (type(v) == "number" and v == floor(v))
      or v < 0) then
    bad(path, "'%s' must be a non-negative integer", key)
  end
  return v
end

local function sub_list(s, key, ctx, path)
  local l = s[key]
  if l == nil then return nil end
  if not is_list(l) then bad(path, "'%s' must be a list of schemas", key) end
  local out = {}
  for i = 1, #l do out[i] = compile(l[i], ctx, fmt("%s.%s[%d]", path, key, i)) end
  return out
end

local function type_check(s, checks, path)
  local ty = s.type
  if ty == nil then return end
  local names = type(ty) == "table" and ty or { ty }
  if #names == 0 then bad(path, "'type' must be a type name or a list of them") end
  local ok = {}
  for i = 1, #names do
    local set = TYPE_OK[names[i]]
    if not set then bad(path, "unknown type '%s'", tostring(names[i])) end
    for k in pairs(set) do ok[k] = true end
  end
  if s.nullable == true then ok.null = true end
  local want = concat(names, " or ")
  if s.nullable == true then want = want .. " or null" end
  local got = GOT
  if ok.array then -- an unmarked {} is an object: say how to write an empty array
    got = setmetatable({ empty = "object (an unmarked {}; json.array() marks an empty array)" },
      { __index = GOT })
  end
  checks[#checks + 1] = function(_, k)
    if ok[k] then return true end
    return nil, "expected " .. want .. ", got " .. (got[k] or k), ""
  end
end

local function value_checks(s, checks, path)
  local enum = s.enum
  if enum ~= nil then
    if not is_list(enum) then bad(path, "'enum' must be a list") end
    local shown = {}
    for i = 1, #enum do shown[i] = show(enum[i]) end
    local want = #enum == 1 and "expected " .. shown[1]
      or "expected one of " .. concat(shown, ", ")
    checks[#checks + 1] = function(v)
      for i = 1, #enum do
        if equal(enum[i], v) then return true end
      end
      return nil, want .. ", got " .. show(v), ""
    end
  end
  if s.const ~= nil then
    local c = s.const
    local want = "expected " .. show(c)
    checks[#checks + 1] = function(v)
      if equal(c, v) then return true end
      return nil, want .. ", got " .. show(v), ""
    end
  end
end

local function number_checks(s, checks, path)
  local min, max = num(s, "minimum", path), num(s, "maximum", path)
  local xmin, xmax = s.exclusiveMinimum, s.exclusiveMaximum
  if xmin == true then xmin, min = min, nil elseif xmin == false then xmin = nil end
  if xmax == true then xmax, max = max, nil elseif xmax == false then xmax = nil end
  for key, x in pairs { exclusiveMinimum = xmin, exclusiveMaximum = xmax } do
    if type(x) ~= "number" then bad(path, "'%s' must be a number or a boolean", key) end
  end
  local mult = num(s, "multipleOf", path)
  if mult and mult <= 0 then bad(path, "'multipleOf' must be positive") end
  if not (min or max or xmin or xmax or mult) then return end
  checks[#checks + 1] = function(v, k)
    if k ~= "integer" and k ~= "number" then return true end
    if min and v < min then return nil, fmt("must be >= %s, got %s", show(min), show(v)), "" end
    if max and v > max then return nil, fmt("must be <= %s, got %s", show(max), show(v)), "" end
    if xmin and v <= xmin then
      return nil, fmt("must be > %s, got %s", show(xmin), show(v)), ""
    end
    if xmax and v >= xmax then
      return nil, fmt("must be < %s, got %s", show(xmax), show(v)), ""
    end
    if mult then
      local q = v / mult
      if q ~= floor(q) then
        return nil, fmt("must be a multiple of %s, got %s", show(mult), show(v)), ""
      end
    end
    return true
  end
end

-- A pattern that does not compile refuses the schema: one this engine cannot match (kind
-- `unsupported`) too, since not enforcing it would let every string through.
local function refuse(path, err, why)
  if why == "unsupported" then
    errors.throw("unsupported", (path ~= "" and path .. ": " or "") .. err.message)
  end
  bad(path, "%s", err.message)
end

local function string_checks(s, checks, path)
  local minl, maxl = count(s, "minLength", path), count(s, "maxLength", path)
  local pat, re = s.pattern, nil
  if pat ~= nil then
    if type(pat) ~= "string" then bad(path, "'pattern' must be a string") end
    local err, why
    re, err, why = errors.catch(pcall(regex.compile, pat))
    if not re then refuse(path, err, why) end
  end
  if not (minl or maxl or re) then return end
  checks[#checks + 1] = function(v, k)
    if k ~= "string" then return true end
    if minl or maxl then
      local n = utf8_len(v) or #v
      if minl and n < minl then
        return nil, fmt("must be at least %d character%s long", minl, minl == 1 and "" or "s"),
          ""
      end
      if maxl and n > maxl then
        return nil, fmt("must be at most %d character%s long", maxl, maxl == 1 and "" or "s"),
          ""
      end
    end
    if re and not re(v) then return nil, fmt("does not match pattern '%s'", pat), "" end
    return true
  end
end

local function array_checks(s, checks, ctx, path)
  local items, tuple, rest = s.items, nil, nil
  if s.prefixItems ~= nil then
    tuple = sub_list(s, "prefixItems", ctx, path)
    if items ~= nil then rest = compile(items, ctx, path .. "[]") end
  elseif is_list(items) then
    tuple = sub_list(s, "items", ctx, path)
    if s.additionalItems ~= nil then rest = compile(s.additionalItems, ctx, path .. "[]") end
  elseif items ~= nil then
    rest = compile(items, ctx, path .. "[]")
  end
  if rest == always then rest = nil end
  local mini, maxi = count(s, "minItems", path), count(s, "maxItems", path)
  local unique = s.uniqueItems == true
  if not (tuple or rest or mini or maxi or unique) then return end
  local nt = tuple and #tuple or 0
  checks[#checks + 1] = function(v, k)
    if k ~= "array" then return true end
    local n = rawlen(v)
    if mini and n < mini then
      return nil, fmt("must have at least %d item%s", mini, mini == 1 and "" or "s"), ""
    end
    if maxi and n > maxi then
      return nil, fmt("must have at most %d item%s", maxi, maxi == 1 and "" or "s"), ""
    end
    for i = 1, n do
      local f = i <= nt and tuple[i] or rest
      if f then
        local ok, m, p = f(v[i])
        if not ok then return nil, m, "[" .. i .. "]" .. p end
      end
    end
    if unique then
      for i = 2, n do
        for j = 1, i - 1 do
          if equal(v[i], v[j]) then
            return nil, fmt("items must be unique (item %d repeats item %d)", i, j), ""
          end
        end
      end
    end
    return true
  end
end

local function object_checks(s, checks, ctx, path)
  local props, req = s.properties, s.required
  local names, subs, segs, known = {}, {}, {}, {}
  if props ~= nil then
    if type(props) ~= "table" then bad(path, "'properties' must be a table") end
    for name, sub in pairs(props) do
      known[name] = true
      local f = compile(sub, ctx, join(path, name))
      if f ~= always then
        names[#names + 1], subs[#subs + 1], segs[#segs + 1] = name, f, seg(name)
      end
    end
  end
  local reqs = {}
  if req ~= nil then
    if type(req) ~= "table" then bad(path, "'required' must be a list") end
    for i = 1, #req do
      if type(req[i]) ~= "string" then bad(path, "'required' must list property names") end
      reqs[i] = req[i]
    end
  end
  local pats = {}
  if s.patternProperties ~= nil then
    for p, sub in pairs(s.patternProperties) do
      local re, err, why = errors.catch(pcall(regex.compile, p))
      if not re then refuse(path, err, why) end
      pats[#pats + 1] = { re, compile(sub, ctx, join(path, p)) }
    end
  end
  local addl = s.additionalProperties
  if addl ~= nil and addl ~= false then addl = compile(addl, ctx, path .. ".*") end
  if addl == always then addl = nil end
  local minp, maxp = count(s, "minProperties", path), count(s, "maxProperties", path)
  local np, nr, npat = #names, #reqs, #pats
  if np + nr + npat == 0 and addl == nil and not minp and not maxp then return end
  local scan = addl ~= nil or npat > 0 or minp or maxp
  local simple -- what the fast path of compile() needs, when nothing else is asked
  if npat == 0 and not minp and not maxp then
    local by_name = {}
    for name in pairs(known) do by_name[name] = true end
    for i = 1, np do by_name[names[i]] = subs[i] end
    simple = { names = names, subs = subs, reqs = reqs, by_name = by_name, addl = addl }
  end
  checks[#checks + 1] = function(v, k)
    if k ~= "object" and k ~= "empty" then return true end
    for i = 1, nr do
      if v[reqs[i]] == nil then return nil, "missing required property '" .. reqs[i] .. "'", "" end
    end
    for i = 1, np do
      local x = v[names[i]]
      if x ~= nil then
        local ok, m, p = subs[i](x)
        if not ok then return nil, m, segs[i] .. p end
      end
    end
    if scan then
      local n = 0
      for key, x in next, v do
        n = n + 1
        local matched = known[key]
        for i = 1, npat do
          local pk = pats[i]
          if type(key) == "string" and pk[1](key) then
            matched = true
            local ok, m, p = pk[2](x)
            if not ok then return nil, m, seg(key) .. p end
          end
        end
        if not matched then
          if addl == false then return nil, "unexpected property '" .. tostring(key) .. "'", "" end
          if addl then
            local ok, m, p = addl(x)
            if not ok then return nil, m, seg(key) .. p end
          end
        end
      end
      if minp and n < minp then return nil, fmt("must have at least %d properties", minp), "" end
      if maxp and n > maxp then return nil, fmt("must have at most %d properties", maxp), "" end
    end
    return true
  end
  return simple
end

local function located(m, p)
  if p ~= "" then return (p:gsub("^%.", "")) .. ": " .. m end
  return m
end

local function combinator_checks(s, checks, ctx, path)
  local all = sub_list(s, "allOf", ctx, path)
  if all then
    checks[#checks + 1] = function(v)
      for i = 1, #all do
        local ok, m, p = all[i](v)
        if not ok then return nil, m, p end
      end
      return true
    end
  end
  local any = sub_list(s, "anyOf", ctx, path)
  if any then
    checks[#checks + 1] = function(v)
      local why = {}
      for i = 1, #any do
        local ok, m, p = any[i](v)
        if ok then return true end
        why[i] = located(m, p)
      end
      return nil, "does not match any allowed schema (" .. concat(why, "; ") .. ")", ""
    end
  end
  local one = sub_list(s, "oneOf", ctx, path)
  if one then
    checks[#checks + 1] = function(v)
      local hits, why = 0, {}
      for i = 1, #one do
        local ok, m, p = one[i](v)
        if ok then hits = hits + 1 else why[#why + 1] = located(m, p) end
      end
      if hits == 1 then return true end
      if hits == 0 then
        return nil, "does not match any allowed schema (" .. concat(why, "; ") .. ")", ""
      end
      return nil, "matches more than one schema in 'oneOf'", ""
    end
  end
  if s["not"] ~= nil then
    local f = compile(s["not"], ctx, path)
    checks[#checks + 1] = function(v)
      if f(v) then return nil, "must not match the schema in 'not'", "" end
      return true
    end
  end
  if s["if"] ~= nil then
    local cond = compile(s["if"], ctx, path)
    local yes = s["then"] ~= nil and compile(s["then"], ctx, path) or always
    local no = s["else"] ~= nil and compile(s["else"], ctx, path) or always
    checks[#checks + 1] = function(v)
      if cond(v) then return yes(v) end
      return no(v)
    end
  end
end

local function resolve(ctx, ref, path)
  if ref == "#" then return ctx.root end
  local node = ctx.root
  if ref:sub(1, 2) ~= "#/" then
    bad(path, "unsupported $ref '%s' (only local '#/...' references)", ref)
  end
  for part in ref:sub(3):gmatch("[^/]+") do
    part = part:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
    part = part:gsub("~1", "/"):gsub("~0", "~")
    if type(node) ~= "table" then node = nil; break end
    node = node[part] or node[tonumber(part) and tonumber(part) + 1]
  end
  if node == nil then bad(path, "$ref '%s' does not resolve", ref) end
  return node
end

local function ref_check(s, checks, ctx, path)
  local ref = s["$ref"]
  if ref == nil then return end
  if type(ref) ~= "string" then bad(path, "'$ref' must be a string") end
  local f = ctx.refs[ref]
  if not f then
    -- Compiled lazily so that recursive schemas terminate.
    local target = resolve(ctx, ref, path)
    local compiled
    f = function(v)
      if not compiled then compiled = compile(target, ctx, path) end
      return compiled(v)
    end
    ctx.refs[ref] = f
    compile(target, ctx, path)  -- report a broken target now, at definition time
  end
  checks[#checks + 1] = f
end

-- The usual tool input, {type = "object", properties = ..., required = ...,
-- additionalProperties = ...} and nothing more, checked in one pass without classifying the
-- value first. Anything it does not accept goes to the general validator, which says why.
local function fast_object(o, general)
  local names, subs, reqs, by_name, addl = o.names, o.subs, o.reqs, o.by_name, o.addl
  local np, nr = #names, #reqs
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
    if addl == nil then
      for i = 1, np do
        local x = v[names[i]]
        if x ~= nil and not subs[i](x) then return general(v) end
      end
      return true
    end
    for key, x in next, v do
      local sub = by_name[key]
      if sub then
        if sub ~= true and not sub(x) then return general(v) end
      elseif addl == false or not addl(x) then
        return general(v)
      end
    end
    return true
  end
end

function compile(s, ctx, path)
  if s == true then return always end
  if s == false then
    return function() return nil, "no value is allowed here", "" end
  end
  if type(s) ~= "table" then bad(path, "schema must be a table or a boolean") end
  local memo = ctx.memo[s]
  if memo then return memo end
  local checks = {}
  ctx.memo[s] = function(v) return ctx.memo[s](v) end  -- placeholder while compiling
  type_check(s, checks, path)
  local type_only = #checks == 1
  value_checks(s, checks, path)
  number_checks(s, checks, path)
  string_checks(s, checks, path)
  array_checks(s, checks, ctx, path)
  local n_before = #checks
  local simple = object_checks(s, checks, ctx, path)
  local object_only = simple and type_only and n_before == 1 and #checks == 2
  combinator_checks(s, checks, ctx, path)
  ref_check(s, checks, ctx, path)
  local n, f = #checks
  if n == 0 then
    f = always
  elseif n == 1 and type_only and not s.nullable and PLAIN[s.type] then
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
  elseif n == 1 then
    local c = checks[1]
    f = function(v) return c(v, kind(v)) end
  else
    f = function(v)
      local k = kind(v)
      for i = 1, n do
        local ok, m, p = checks[i](v, k)
        if not ok then return nil, m, p end
      end
      return true
    end
  end
  if object_only and n == 2 and s.type == "object" and not s.nullable then
    f = fast_object(simple, f)
  end
  ctx.memo[s] = f
  return f
end

--- Compile a JSON Schema; throws a `schema` failure for a malformed one.
-- @tparam table|boolean json_schema
-- @treturn function `(value) -> true | nil, message, path`
function M.compile(json_schema)
  return compile(json_schema, { root = json_schema, refs = {}, memo = {} }, "")
end

--- `message` at `path` as the validator's users see it: `"tags[2]: expected string"`.
M.located = located

return M
