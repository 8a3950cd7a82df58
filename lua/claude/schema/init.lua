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
-- **Validation.** `compile(schema, opts)` compiles a JSON Schema once into a function. Every
-- keyword of draft 2020-12 is enforced (core, applicator, unevaluated and validation
-- vocabularies; `format` (unless the `formats` option asserts it), `title`, `default`,
-- `content*` and unknown keywords are annotations);
-- `$schema` selects the dialect: 2020-12 (the default, as in MCP), 2019-09, draft-07, draft-06
-- or draft-04, or a custom meta-schema the loader has (its `$vocabulary` says which keywords
-- are in force). An unknown `$schema` is refused (kind `unsupported`). References (`$ref`,
-- `$dynamicRef`, `$recursiveRef`) resolve against `$id`s, `$anchor`s and JSON Pointers in
-- the schema; a reference to another document is never fetched: it goes to `opts.loader`
-- (a function or a table of documents), and one that does not resolve refuses the schema.
-- Bounds: `max_depth` (64 nested subschemas), `max_subschemas` (10,000), `max_steps`
-- (1,000,000 per validation, counted only for schemas with combinators or references) and
-- `max_ref_depth` (500 nested references); a pattern runs under PCRE2's match limits.
-- Values: Lua integers and integral floats are integers; `json.null` and `nil` are null; an
-- unmarked empty table is an object (`json.array()` marks an empty array); NaN and the
-- infinities are not numbers. `nullable = true` (OpenAPI) adds null to `type`. Array paths in
-- messages count from 1.
--
-- **Failures.** `parse`, `compile` and `regex` return `nil, err, kind` (`claude.errors`):
-- kind `schema` for a malformed spec, schema or pattern, a reference that does not resolve
-- or a bound exceeded, `unsupported` for an unknown dialect or a missing libpcre2; a
-- validator returns `nil, err, "validation"` for a value it rejects. `err.message` names the
-- instance path and the keyword (`"b: expected number, got string (keyword
-- /properties/b/type)"`); `err.instance_location` and `err.keyword_location` are the JSON
-- Pointers of the "basic" output format. `normalize` and `validator` raise instead, at the
-- caller's line.
--
-- The parts: `claude.schema.shorthand`, `claude.schema.validator` (with
-- `claude.schema.registry`, `claude.schema.keywords`, `claude.schema.dialects`,
-- `claude.schema.uri`), `claude.schema.regex`.
-- @module claude.schema
local core = require "claude.core"
local json = require "claude.json"
local errors = require "claude.errors"
local shorthand = require "claude.schema.shorthand"
local common = require "claude.schema.common"

local M = {}

local pcall, catch, new_error = pcall, errors.catch, errors.new
local type, pairs, next, tostring, getmetatable = type, pairs, next, tostring, getmetatable

-- The validator (its keywords, registry and dialects), loaded by the first compile: a server
-- whose tools' schemas are shorthand alone starts without it (claude.mcp.tool).
local validator, dialects, DEFAULT
local BOUNDS = { max_depth = true, max_subschemas = true, max_steps = true,
  max_ref_depth = true }
local OPTION_NAMES = { dialect = true, loader = true, base_uri = true, formats = true,
  max_depth = true, max_subschemas = true, max_steps = true, max_ref_depth = true }
local function load_validator()
  validator = require "claude.schema.validator"
  dialects = require "claude.schema.dialects"
  DEFAULT = { dialect = dialects.known["2020-12"] }
  for k in pairs(BOUNDS) do DEFAULT[k] = validator.defaults[k] end
end

--- Turn a schema spec (shorthand or full JSON Schema with `type = "object"`) into a JSON
-- Schema table ready for `json.encode`. The argument is not modified.
-- @tparam table spec
-- @treturn[1] table JSON Schema of an object
-- @treturn[1] boolean true when the spec is shorthand alone (type names, lists of one spec,
--   tables of properties, no JSON Schema node): its schema always compiles
-- @return[2] nil, a `schema` error naming the property path, `"schema"`
function M.parse(spec)
  return catch(pcall(shorthand.parse, spec))
end

--- Like `parse`, but raises on a bad spec (at the caller's line).
-- @tparam table spec
-- @treturn table JSON Schema
-- @function normalize
M.normalize = errors.public(function(spec)
  local s, err = M.parse(spec)
  if not s then errors.misuse("%s", err.message) end
  return s
end)

--- Compile an ECMA-262 regular expression (as used by JSON Schema `pattern`).
-- @tparam string pattern
-- @treturn[1] function `(s) -> boolean`, or `nil, message` when the match hit a limit
-- @return[2] nil, an error, its kind: `"schema"` (not a pattern) or `"unsupported"`
function M.regex(pattern)
  return catch(pcall(require("claude.schema.regex").compile, pattern))
end

-- The `formats` option: false (`format` is an annotation), true (every format asserted) or a
-- list of format names -> nil, or the asserted names' checks (claude.schema.formats).
local function formats_option(v, fname)
  if v == false then return nil end
  local formats = require "claude.schema.formats"
  if v == true then return formats.check end
  local n = type(v) == "table" and #v or 0
  if type(v) ~= "table" or getmetatable(v) ~= nil or next(v) ~= nil and n == 0 then
    errors.misuse("bad option 'formats' to '%s' (true, false or a list of format names "
      .. "expected, got %s)", fname, errors.typename(v))
  end
  local set = {}
  for k, name in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > n then
      errors.misuse("bad option 'formats' to '%s' (a list of format names expected, found "
        .. "key '%s')", fname, tostring(k))
    end
    if not formats.check[name] then
      errors.misuse("bad option 'formats' to '%s' (item %d: one of %s expected, got %s)", fname,
        k, table.concat(formats.names, ", "), type(name) == "string" and "'" .. name .. "'"
        or errors.typename(name))
    end
    set[name] = formats.check[name]
  end
  return set
end

-- Internal (claude.mcp.tool): raises a misuse unless `v` is a `formats` option.
M._check_formats = formats_option

local function options(opts, fname)
  if not validator then load_validator() end
  if opts == nil then return DEFAULT end
  fname = fname or "compile"
  if type(opts) ~= "table" then
    errors.misuse("bad argument #%d to '%s' (table of options expected, got %s)",
      fname == "compile" and 2 or 1, fname, errors.typename(opts))
  end
  local o = {}
  for k, v in pairs(DEFAULT) do o[k] = v end
  for k, v in pairs(opts) do
    if k == "dialect" then
      local d = type(v) == "string" and dialects.get(v)
      if not d then
        errors.misuse("bad option 'dialect' to '%s' (one of %s, or its meta-schema URI, "
          .. "expected, got %s)", fname, dialects.names, type(v) == "string" and "'" .. v .. "'"
          or errors.typename(v))
      end
      o.dialect = d
    elseif k == "formats" then
      o.formats = formats_option(v, fname)
    elseif (k == "loader" or k == "base_uri") and fname ~= "compile" then
      errors.misuse("bad option '%s' to '%s' (a schema's own, not a default)", k, fname)
    elseif k == "loader" then
      if type(v) ~= "function" and type(v) ~= "table" then
        errors.misuse("bad option 'loader' to 'compile' (function or table expected, got %s)",
          errors.typename(v))
      end
      o.loader = v
    elseif k == "base_uri" then
      if type(v) ~= "string" then
        errors.misuse("bad option 'base_uri' to 'compile' (string expected, got %s)",
          errors.typename(v))
      end
      o.base_uri = v
    elseif BOUNDS[k] then
      if math.type(v) ~= "integer" or v < 1 then
        errors.misuse("bad option '%s' to '%s' (positive integer expected, got %s)", k, fname,
          tostring(v))
      end
      o[k] = v
    else
      errors.misuse("bad option '%s' to '%s' (unknown)%s", tostring(k), fname,
        errors.suggestion(tostring(k), OPTION_NAMES))
    end
  end
  return o
end

--- Set the defaults of `compile`'s options, for every schema compiled after (a tool's
-- input and output schemas too): `formats`, `dialect` and the bounds, as `compile` takes
-- them; the options not given keep their defaults. `defaults{ formats = true }` asserts
-- `format` everywhere a schema does not say otherwise.
-- @tparam table opts
-- @function defaults
M.defaults = errors.public(function(opts)
  if opts == nil then
    errors.misuse("bad argument #1 to 'defaults' (table of options expected, got nil)")
  end
  DEFAULT = options(opts, "defaults")
end)

-- `.a["b c"][2]` -> `/a/b c/1`
local function pointer(p)
  local out = {}
  local i = 1
  while i <= #p do
    local c = p:sub(i, i)
    if c == "." then
      local name = p:match("^[%a_][%w_]*", i + 1)
      out[#out + 1] = name
      i = i + 1 + #name
    elseif p:sub(i, i + 1) == '["' then
      local j = i + 2
      local buf = {}
      while j <= #p and p:sub(j, j) ~= '"' do
        local ch = p:sub(j, j)
        if ch == "\\" then
          local d = p:match("^%d%d?%d?", j + 1)
          if d then buf[#buf + 1] = string.char(tonumber(d)); j = j + 1 + #d
          else
            local e = p:sub(j + 1, j + 1)
            buf[#buf + 1] = e == "n" and "\n" or e == "r" and "\r" or e == "t" and "\t" or e
            j = j + 2
          end
        else
          buf[#buf + 1] = ch
          j = j + 1
        end
      end
      out[#out + 1] = table.concat(buf)
      i = j + 2
    else
      local n = p:match("^%[(%d+)%]", i)
      if not n then break end
      out[#out + 1] = tostring(tonumber(n) - 1)
      i = i + 2 + #n
    end
  end
  for k, tok in ipairs(out) do out[k] = (tok:gsub("~", "~0"):gsub("/", "~1")) end
  return #out == 0 and "" or "/" .. table.concat(out, "/")
end

local function failure(m, p, w)
  local msg = validator.located(m, p)
  if w ~= "" then msg = msg .. " (keyword " .. w .. ")" end
  return nil, new_error("validation", msg, { instance_location = pointer(p),
    keyword_location = w }), "validation"
end

local function compile(json_schema, opts)
  local o = options(opts)
  local root, st, kind = catch(pcall(validator.compile, json_schema, o))
  if not root then return nil, st, kind end
  if not st.counted then
    local function check(value)
      local ok, m, p, w = root(value)
      if ok then return true end
      return failure(m, p, w)
    end
    -- an object of string, number and boolean properties: passed in one C call, the rest
    -- (and every failure, for its message) by `check`
    local flat = validator.flat[root]
    return flat and core.flat_validator(flat.kinds, json.object_mt, check,
      table.unpack(flat.names)) or check
  end
  local max, protect = o.max_steps, st.protect
  local over = ("validation stopped after %d steps (max_steps): the schema applies too many "
    .. "subschemas to this value"):format(max)
  return function(value)
    st.steps, st.n, st.depth = max, 0, 0
    local ok, m, p, w
    if protect then -- deep recursion through references must not escape as an error
      local done
      done, ok, m, p, w = pcall(root, value)
      if not done then
        return nil, new_error("validation", "validation aborted: " .. tostring(ok)), "validation"
      end
    else
      ok, m, p, w = root(value)
    end
    if st.steps < 0 then
      return nil, new_error("validation", over, { bound = "max_steps" }), "validation"
    end
    if ok then return true end
    return failure(m, p, w)
  end
end

--- Compile a JSON Schema into a validator. Compile once, call many times.
-- @tparam table|boolean json_schema
-- @tparam[opt] table opts `dialect` (the dialect of a schema without `$schema`: `"2020-12"`
--   (default), `"2019-09"`, `"draft-07"`, `"draft-06"`, `"draft-04"` or a meta-schema URI),
--   `loader` (for references to other documents: a function `uri -> schema | JSON text |
--   nil, why`, or a table `uri -> schema | JSON text`; without it none is followed),
--   `base_uri` (the schema's own URI), `formats` (`format` asserted: `true` for every format
--   `claude.schema.formats` knows, a list of their names for those, `false` (the default,
--   unless `defaults` changed it): an annotation), and the bounds `max_depth` (64),
--   `max_subschemas` (10000), `max_steps` (1000000) and `max_ref_depth` (500)
-- @treturn[1] function `(value) -> true | nil, err, "validation"`; `err.message` names the
--   path and the keyword: `"b: expected number, got string (keyword /properties/b/type)"`
-- @return[2] nil, an error, its kind: `"schema"` (malformed, unresolved, too large) or
--   `"unsupported"` (an unknown `$schema` or vocabulary, no libpcre2 for a pattern)
-- @function compile
M.compile = errors.public(compile)

--- Like `compile`, but raises on a malformed schema (at the caller's line).
-- @tparam table|boolean json_schema
-- @tparam[opt] table opts as for `compile`
-- @treturn function `(value) -> true | nil, err, "validation"`
-- @function validator
M.validator = errors.public(function(json_schema, opts)
  local f, err = compile(json_schema, opts)
  if not f then errors.misuse("bad schema: %s", err.message) end
  return f
end)

-- Internal (claude.mcp.tool): a validator of a schema known to compile (one `parse` says
-- always compiles), compiled by its first call, which also stores the compiled one in
-- `holder[field]` so that later calls go to it directly: the validator's modules load when
-- a value is first checked, not when a tool is defined.
function M._on_first_call(json_schema, holder, field)
  local compiled
  return function(value)
    if not compiled then
      compiled = assert(compile(json_schema))
      holder[field] = compiled
    end
    return compiled(value)
  end
end

--- The JSON kind of a Lua value: `"null"`, `"boolean"`, `"integer"`, `"number"`, `"string"`,
-- `"array"`, `"object"`, `"empty"` (an unmarked `{}`, either array or object), or the Lua type
-- name for anything else. Integral finite floats are `"integer"`; NaN and the infinities
-- are `"non-finite number"`.
-- @function kind
M.kind = common.kind

return M
