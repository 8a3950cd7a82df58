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
-- ECMA-262 regular expression matched by code point; a schema with a pattern using
-- lookbehind, backreferences or `\p{...}` is refused (kind `unsupported`), never left
-- unenforced. An unmarked empty table is an object, not an array (`json.array()` marks one),
-- and NaN and the infinities are not numbers. Annotations (`format`, `title`, `default`,
-- ...) and other keywords are ignored. Array paths in messages count from 1.
--
-- **Failures.** `parse`, `compile` and `regex` return `nil, err, kind` (`claude.errors`):
-- kind `schema` for a malformed spec, schema or pattern, `unsupported` for a pattern this
-- engine cannot match; a validator returns `nil, err, "validation"` for a value it rejects.
-- `err.message` names the path. `normalize` and `validator` raise instead, at the caller's
-- line.
--
-- The parts: `claude.schema.shorthand`, `claude.schema.validator`, `claude.schema.regex`.
-- @module claude.schema
local errors = require "claude.errors"
local shorthand = require "claude.schema.shorthand"
local validator = require "claude.schema.validator"
local regex = require "claude.schema.regex"

local M = {}

local pcall, catch, new_error = pcall, errors.catch, errors.new
local located = validator.located

--- Turn a schema spec (shorthand or full JSON Schema with `type = "object"`) into a JSON
-- Schema table ready for `json.encode`. The argument is not modified.
-- @tparam table spec
-- @treturn[1] table JSON Schema of an object
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
-- @treturn[1] function `(s) -> boolean` (nil when the subject was too long to match)
-- @return[2] nil, an error, its kind: `"unsupported"` or `"schema"` (a syntax error)
function M.regex(pattern)
  return catch(pcall(regex.compile, pattern))
end

--- Compile a JSON Schema into a validator. Compile once, call many times.
-- @tparam table|boolean json_schema
-- @treturn[1] function `(value) -> true | nil, err, "validation"`; `err.message` names the
--   path: `"b: expected number, got string"`, `"tags[2]: ..."`,
--   `"missing required property 'a'"`
-- @return[2] nil, a `schema` error saying why the schema is malformed, `"schema"`
function M.compile(json_schema)
  local root, err, kind = catch(pcall(validator.compile, json_schema))
  if not root then return nil, err, kind end
  return function(value)
    local ok, m, p = root(value)
    if ok then return true end
    return nil, new_error("validation", located(m, p)), "validation"
  end
end

--- Like `compile`, but raises on a malformed schema (at the caller's line).
-- @tparam table|boolean json_schema
-- @treturn function `(value) -> true | nil, err, "validation"`
-- @function validator
M.validator = errors.public(function(json_schema)
  local f, err = M.compile(json_schema)
  if not f then errors.misuse("bad schema: %s", err.message) end
  return f
end)

--- The JSON kind of a Lua value: `"null"`, `"boolean"`, `"integer"`, `"number"`, `"string"`,
-- `"array"`, `"object"`, `"empty"` (an unmarked `{}`, either array or object), or the Lua type
-- name for anything else. Integral finite floats are `"integer"`; NaN and the infinities
-- are `"non-finite number"`.
-- @function kind
M.kind = validator.kind

return M
