--- JSON Schema for tools: the shorthand, and a compiled validator.
--
-- **Shorthand.** A tool's schema may be written as a table of property name -> spec:
--
--     { a = "number", b = "string?", tags = {"string"}, unit = { enum = {"c", "f"} } }
--
-- * A string spec is `"<type>[?][: description]"`: the type is one of `string`, `number`,
--   `integer`, `boolean`, `object`, `array`, `null` or `any`; a trailing `?` makes the
--   property optional (everything else is required); text after a `:` becomes its
--   `description`, e.g. `"string?: the city name"`.
-- * `{ spec }` (a list of one spec) is an array whose items match `spec`: `{"string"}`,
--   `{{ x = "number" }}`.
-- * Any other table without a JSON Schema keyword is a nested object, written in shorthand.
-- * A table with a JSON Schema keyword (`type`, `enum`, `const`, `anyOf`, `oneOf`, `allOf`,
--   `not`, `$ref`) is a JSON Schema node: `{ type = "integer", minimum = 1, description = "n" }`.
--   In it `optional = true` (or a `type` ending in `?`) marks the property optional, and
--   `type = "any"` means no type constraint. Its sub-schemas are JSON Schema (not shorthand),
--   except that a string like `"number"` is accepted wherever a schema is expected.
--
-- A table whose `type` is `"object"` at the top is a full JSON Schema and is used as is
-- (copied, with `[]`/`{}` markers applied for JSON). A property literally named `type`,
-- `enum`, ... therefore needs the full form.
--
-- **Validation.** `validator(schema)` compiles a JSON Schema once into a function. Supported:
-- `type` (a name or a list; Lua integers and integral floats are integers; `json.null` and
-- `nil` are null), `nullable`, `enum`, `const`, `properties`, `required`,
-- `additionalProperties`, `patternProperties`, `minProperties`, `maxProperties`, `items`
-- (schema or tuple), `prefixItems`, `additionalItems`, `minItems`, `maxItems`, `uniqueItems`,
-- `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (number or draft-4 boolean),
-- `multipleOf`, `minLength`, `maxLength` (in code points), `pattern`, `anyOf`, `oneOf`,
-- `allOf`, `not`, `if`/`then`/`else`, and local `$ref` (`#`, `#/$defs/...`). `pattern` is an
-- ECMA-262 regular expression matched by code point; a pattern using lookbehind,
-- backreferences or `\p{...}` is not enforced. Annotations (`format`, `title`, `default`,
-- ...) and other keywords are ignored. Array paths in messages count from 1.
-- @module claude.schema
local json = require "claude.json"

local M = {}

local null, jarray, jobject, is_array = json.null, json.array, json.object, json.is_array
local array_mt, object_mt = json.array_mt, json.object_mt
local type, pairs, next, rawlen, tostring = type, pairs, next, rawlen, tostring
local getmetatable = getmetatable
local floor, math_type, fmt, concat = math.floor, math.type, string.format, table.concat
local utf8_len, utf8_codes = utf8.len, utf8.codes

-- Definition-time failures travel as a marked table and become `nil, msg` at the boundary.
local Bad = {}
local function bad(path, f, ...)
  local msg = f:format(...)
  if path ~= "" then msg = path .. ": " .. msg end
  error(setmetatable({ msg = msg }, Bad), 0)
end

local function catch(ok, r, ...)
  if ok then return r, ... end
  if getmetatable(r) == Bad then return nil, r.msg end
  error(r, 0)
end

local function ident(name)
  return type(name) == "string" and name:match("^[%a_][%w_]*$") ~= nil
end

local function join(path, name)
  if not ident(name) then return fmt("%s[%q]", path, tostring(name)) end
  return path == "" and name or path .. "." .. name
end

local function is_list(t)
  return type(t) == "table" and (is_array(t) or t[1] ~= nil)
end

---------------------------------------------------------------------------------------------
-- Shorthand -> JSON Schema
---------------------------------------------------------------------------------------------

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

local function parse(spec)
  if type(spec) ~= "table" then bad("", "table expected, got %s", type(spec)) end
  if spec.type == "object" then
    local node, opt = schema_node(spec, "")
    if opt then bad("", "'optional' has no meaning at the top of a schema") end
    return node
  end
  return short_object(spec, "")
end

--- Turn a schema spec (shorthand or full JSON Schema with `type = "object"`) into a JSON
-- Schema table ready for `json.encode`. The argument is not modified.
-- @tparam table spec
-- @treturn[1] table JSON Schema of an object
-- @treturn[2] nil
-- @treturn[2] string what is wrong, naming the property path
function M.parse(spec)
  return catch(pcall(parse, spec))
end

--- Like `parse`, but raises on a bad spec.
-- @tparam table spec
-- @treturn table JSON Schema
function M.normalize(spec)
  local s, err = M.parse(spec)
  if not s then error(err, 2) end
  return s
end

---------------------------------------------------------------------------------------------
-- ECMA-262 regular expressions (the subset that can be done right without captures)
---------------------------------------------------------------------------------------------

local Unsupported = {}

local function to_codepoints(s)
  local cps, n = {}, 0
  if not s:find("[\128-\255]") or not utf8_len(s) then
    for i = 1, #s do cps[i] = s:byte(i) end
    return cps, #s
  end
  for _, c in utf8_codes(s) do n = n + 1; cps[n] = c end
  return cps, n
end

local function is_digit(c) return c >= 48 and c <= 57 end
local function is_word(c)
  return (c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95
end
local SPACE = { [9] = true, [10] = true, [11] = true, [12] = true, [13] = true, [32] = true,
  [0xA0] = true, [0x1680] = true, [0x2028] = true, [0x2029] = true, [0x202F] = true,
  [0x205F] = true, [0x3000] = true, [0xFEFF] = true }
local function is_space(c) return SPACE[c] or (c >= 0x2000 and c <= 0x200A) end
local function is_line_end(c) return c == 10 or c == 13 or c == 0x2028 or c == 0x2029 end
local CLASS_ESC = {
  d = is_digit, w = is_word, s = is_space,
  D = function(c) return not is_digit(c) end,
  W = function(c) return not is_word(c) end,
  S = function(c) return not is_space(c) end,
}
local CTRL_ESC = { t = 9, n = 10, v = 11, f = 12, r = 13 }

-- Compile `src` into `function(str) -> boolean`; raises Bad on a syntax error and
-- Unsupported on a construct this engine does not implement.
local function regex(src)
  local P, np = to_codepoints(src)
  local pos = 1
  local S, N = nil, 0  -- the subject while matching

  local function ch(c) return utf8.char(c) end
  local function syntax(msg) bad("", "invalid pattern /%s/: %s", src, msg) end
  local function eat(c)
    if P[pos] == c then pos = pos + 1; return true end
    return false
  end

  local function hex(count)
    local v = 0
    for _ = 1, count do
      local c = P[pos]
      local d = c and tonumber(ch(c), 16)
      if not d then return nil end
      v = v * 16 + d
      pos = pos + 1
    end
    return v
  end

  -- After a backslash: -> code point, or nil plus a predicate for class escapes.
  local function escape(in_class)
    local c = P[pos]
    if not c then syntax("\\ at end of pattern") end
    pos = pos + 1
    local e = ch(c)
    if CLASS_ESC[e] then return nil, CLASS_ESC[e] end
    if CTRL_ESC[e] then return CTRL_ESC[e] end
    if e == "b" and in_class then return 8 end
    if e == "0" and not (P[pos] and is_digit(P[pos])) then return 0 end
    if is_digit(c) or e == "k" or e == "p" or e == "P" then error(Unsupported, 0) end
    if e == "c" and P[pos] and ((P[pos] >= 65 and P[pos] <= 90) or
        (P[pos] >= 97 and P[pos] <= 122)) then
      pos = pos + 1
      return P[pos - 1] % 32
    end
    if e == "x" then
      local save = pos
      local v = hex(2)
      if v then return v end
      pos = save
      return c
    end
    if e == "u" then
      if eat(123) then  -- \u{...}
        local v, digits = 0, 0
        while P[pos] and P[pos] ~= 125 do
          local d = tonumber(ch(P[pos]), 16)
          if not d then syntax("bad \\u{...} escape") end
          v, digits, pos = v * 16 + d, digits + 1, pos + 1
        end
        if not eat(125) or digits == 0 or v > 0x10FFFF then syntax("bad \\u{...} escape") end
        return v
      end
      local save = pos
      local v = hex(4)
      if not v then pos = save; return c end
      if v >= 0xD800 and v <= 0xDBFF and P[pos] == 92 and P[pos + 1] == 117 then
        save = pos
        pos = pos + 2
        local lo = hex(4)
        if lo and lo >= 0xDC00 and lo <= 0xDFFF then
          return 0x10000 + (v - 0xD800) * 0x400 + (lo - 0xDC00)
        end
        pos = save
      end
      return v
    end
    return c  -- identity escape: \. \/ \- ...
  end

  local function class()
    local negate = eat(94)  -- ^
    local singles, ranges, preds = {}, {}, {}
    while true do
      local c = P[pos]
      if not c then syntax("missing ]") end
      if c == 93 then pos = pos + 1; break end
      local lo, pred
      pos = pos + 1
      if c == 92 then lo, pred = escape(true) else lo = c end
      if pred then
        preds[#preds + 1] = pred
      elseif P[pos] == 45 and P[pos + 1] and P[pos + 1] ~= 93 then  -- a range
        pos = pos + 1
        local hc, hi, hpred = P[pos], P[pos], nil
        pos = pos + 1
        if hc == 92 then hi, hpred = escape(true) end
        if hpred then  -- [a-\d]: '-' is literal
          singles[lo], singles[45] = true, true
          preds[#preds + 1] = hpred
        else
          if hi < lo then syntax("range out of order in character class") end
          ranges[#ranges + 1] = { lo, hi }
        end
      else
        singles[lo] = true
      end
    end
    local nr, npred = #ranges, #preds
    return function(c)
      local hit = singles[c] or false
      if not hit then
        for i = 1, nr do
          local r = ranges[i]
          if c >= r[1] and c <= r[2] then hit = true; break end
        end
      end
      if not hit then
        for i = 1, npred do
          if preds[i](c) then hit = true; break end
        end
      end
      if negate then return not hit end
      return hit
    end
  end

  -- A matcher is m(i, k) -> boolean; k(j) continues after a match ending before j.
  local function char_matcher(pred)
    return function(i, k)
      if i <= N and pred(S[i]) then return k(i + 1) end
      return false
    end
  end

  local function quantify(m, pred, min, max, greedy)
    if pred then
      return function(i, k)
        local j, limit = i, max and i + max or N + 1
        if limit > N + 1 then limit = N + 1 end
        while j < limit and pred(S[j]) do j = j + 1 end
        if j - i < min then return false end
        if greedy then
          for e = j, i + min, -1 do
            if k(e) then return true end
          end
        else
          for e = i + min, j do
            if k(e) then return true end
          end
        end
        return false
      end
    end
    local function rep(i, count, k)
      if count < min then
        return m(i, function(j) return rep(j, count + 1, k) end)
      end
      if max and count >= max then return k(i) end
      local function more(j)
        if j == i then return false end
        return rep(j, count + 1, k)
      end
      if greedy then return m(i, more) or k(i) end
      return k(i) or m(i, more)
    end
    return function(i, k) return rep(i, 0, k) end
  end

  -- {n}, {n,}, {n,m} at pos (just after '{'); -> min, max or nil when not a quantifier
  local function braces()
    local save = pos
    local function int()
      local v
      while P[pos] and is_digit(P[pos]) do v = (v or 0) * 10 + P[pos] - 48; pos = pos + 1 end
      return v
    end
    local min = int()
    if not min then pos = save; return nil end
    local max = min
    if eat(44) then max = int() end
    if not eat(125) then pos = save; return nil end
    if max and max < min then syntax("numbers out of order in {} quantifier") end
    return min, max or false
  end

  local disjunction

  local function term()
    local c = P[pos]
    pos = pos + 1
    local m, pred
    if c == 94 then  -- ^
      return function(i, k) return i == 1 and k(i) end
    elseif c == 36 then  -- $
      return function(i, k) return i == N + 1 and k(i) end
    elseif c == 92 and (P[pos] == 98 or P[pos] == 66) then  -- \b \B
      local want = P[pos] == 98
      pos = pos + 1
      return function(i, k)
        local a = i > 1 and is_word(S[i - 1])
        local b = i <= N and is_word(S[i])
        return (a ~= b) == want and k(i)
      end
    elseif c == 40 then  -- (
      local look
      if eat(63) then  -- ?
        if eat(58) then  -- (?:
          look = nil
        elseif eat(61) then look = true
        elseif eat(33) then look = false
        elseif P[pos] == 60 and P[pos + 1] ~= 61 and P[pos + 1] ~= 33 then  -- (?<name>
          while P[pos] and P[pos] ~= 62 do pos = pos + 1 end
          if not eat(62) then syntax("bad group name") end
        else
          error(Unsupported, 0)
        end
      end
      local inner = disjunction()
      if not eat(41) then syntax("missing )") end
      if look ~= nil then
        local accept = function() return true end
        return function(i, k)
          if (inner(i, accept) and true or false) == look then return k(i) end
          return false
        end
      end
      m = inner
    elseif c == 46 then  -- .
      pred = function(x) return not is_line_end(x) end
    elseif c == 91 then  -- [
      pred = class()
    elseif c == 92 then  -- backslash
      local cp, p = escape(false)
      pred = p or function(x) return x == cp end
    elseif c == 42 or c == 43 or c == 63 then  -- * + ?
      syntax("nothing to repeat")
    elseif c == 123 and braces() then
      syntax("nothing to repeat")
    elseif c == 41 then
      syntax("unmatched )")
    else
      pred = function(x) return x == c end
    end
    m = m or char_matcher(pred)
    -- quantifier
    local q, min, max = P[pos], nil, nil
    if q == 42 then min, max = 0, false
    elseif q == 43 then min, max = 1, false
    elseif q == 63 then min, max = 0, 1
    elseif q == 123 then
      pos = pos + 1
      min, max = braces()
      if not min then pos = pos - 1 end
    end
    if min then
      if q ~= 123 then pos = pos + 1 end
      local greedy = not eat(63)
      return quantify(m, pred, min, max or nil, greedy)
    end
    return m
  end

  local function seq(a, b)
    return function(i, k)
      return a(i, function(j) return b(j, k) end)
    end
  end

  function disjunction()
    local alts = {}
    repeat
      local items = {}
      while P[pos] and P[pos] ~= 124 and P[pos] ~= 41 do items[#items + 1] = term() end
      local m = items[#items] or function(i, k) return k(i) end
      for i = #items - 1, 1, -1 do m = seq(items[i], m) end
      alts[#alts + 1] = m
    until not eat(124)
    if #alts == 1 then return alts[1] end
    return function(i, k)
      for a = 1, #alts do
        if alts[a](i, k) then return true end
      end
      return false
    end
  end

  local top = disjunction()
  if pos <= np then syntax("unmatched )") end
  local accept = function() return true end
  local function search(str)
    S, N = to_codepoints(str)
    for start = 1, N + 1 do
      if top(start, accept) then return true end
    end
    return false
  end
  return function(str)
    local ok, r = pcall(search, str)
    S = nil
    if not ok then return nil end  -- too deep for the Lua stack
    return r
  end
end

--- Compile an ECMA-262 regular expression (as used by JSON Schema `pattern`).
-- @tparam string pattern
-- @treturn[1] function `(s) -> boolean` (nil when the subject was too long to match)
-- @treturn[2] nil
-- @treturn[2] string "unsupported" or a syntax error
function M.regex(pattern)
  local ok, r = pcall(regex, pattern)
  if ok then return r end
  if r == Unsupported then return nil, "unsupported" end
  return catch(false, r)
end

---------------------------------------------------------------------------------------------
-- Validator
---------------------------------------------------------------------------------------------

--- The JSON kind of a Lua value: `"null"`, `"boolean"`, `"integer"`, `"number"`, `"string"`,
-- `"array"`, `"object"`, `"empty"` (an unmarked `{}`, either array or object), or the Lua type
-- name for anything else. Integral finite floats are `"integer"`.
-- @param v
-- @treturn string
local function kind(v)
  if v == null or v == nil then return "null" end
  local t = type(v)
  if t == "number" then
    if math_type(v) == "integer" or (v == floor(v) and v - v == 0) then return "integer" end
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
  array = { array = true, empty = true }, object = { object = true, empty = true },
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
  checks[#checks + 1] = function(_, k)
    if ok[k] then return true end
    return nil, "expected " .. want .. ", got " .. (GOT[k] or k), ""
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

local function string_checks(s, checks, path)
  local minl, maxl = count(s, "minLength", path), count(s, "maxLength", path)
  local pat, re = s.pattern, nil
  if pat ~= nil then
    if type(pat) ~= "string" then bad(path, "'pattern' must be a string") end
    local err
    re, err = M.regex(pat)
    if not re and err ~= "unsupported" then bad(path, "%s", err) end
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
    if k ~= "array" and k ~= "empty" then return true end
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
      local re, err = M.regex(p)
      if not re and err ~= "unsupported" then bad(path, "%s", err) end
      if re then pats[#pats + 1] = { re, compile(sub, ctx, join(path, p)) } end
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
    f = function(v)
      if type(v) == want then return true end
      return c(v, kind(v))
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

--- Compile a JSON Schema into a validator. Compile once, call many times.
-- @tparam table|boolean json_schema
-- @treturn[1] function `(value) -> true | nil, message`; the message names the path:
--   `"b: expected number, got string"`, `"tags[2]: ..."`, `"missing required property 'a'"`
-- @treturn[2] nil
-- @treturn[2] string why the schema is malformed
function M.compile(json_schema)
  local root, err = catch(pcall(compile, json_schema,
    { root = json_schema, refs = {}, memo = {} }, ""))
  if not root then return nil, err end
  return function(value)
    local ok, m, p = root(value)
    if ok then return true end
    return nil, located(m, p)
  end
end

--- Like `compile`, but raises on a malformed schema.
-- @tparam table|boolean json_schema
-- @treturn function `(value) -> true | nil, message`
function M.validator(json_schema)
  local f, err = M.compile(json_schema)
  if not f then error("bad schema: " .. err, 2) end
  return f
end

return M
