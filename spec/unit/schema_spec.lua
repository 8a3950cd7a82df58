local json = require "claude.json"
local schema = require "claude.schema"

-- Canonical JSON text (sorted keys) of a value as it goes over the wire.
local function canon(v)
  if type(v) ~= "table" then return json.encode(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  if json.is_array(v) then
    local out = {}
    for i = 1, #v do out[i] = canon(v[i]) end
    return "[" .. table.concat(out, ",") .. "]"
  end
  table.sort(keys)
  local out = {}
  for i, k in ipairs(keys) do out[i] = json.encode(k) .. ":" .. canon(v[k]) end
  return "{" .. table.concat(out, ",") .. "}"
end

local function wire(v)
  return canon(json.decode(json.encode(v)))
end

describe("claude.schema", function()
  describe("parse (shorthand -> JSON Schema)", function()
    local rows = {
      { "empty", {}, [[{"type":"object","properties":{},"required":[]}]] },
      { "required scalars", { a = "number", b = "string" },
        [[{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},
          "required":["a","b"]}]] },
      { "optional with ?", { a = "integer", b = "boolean?" },
        [[{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},
          "required":["a"]}]] },
      { "description after a colon", { city = "string: the city name", n = "integer?:  count" },
        [[{"type":"object","properties":{"city":{"type":"string","description":"the city name"},
          "n":{"type":"integer","description":"count"}},"required":["city"]}]] },
      { "any", { x = "any", y = "any?: whatever" },
        [[{"type":"object","properties":{"x":{},"y":{"description":"whatever"}},
          "required":["x"]}]] },
      { "object, array and null names", { o = "object", a = "array", z = "null" },
        [[{"type":"object","properties":{"a":{"type":"array"},"o":{"type":"object"},
          "z":{"type":"null"}},"required":["a","o","z"]}]] },
      { "array of strings", { tags = { "string" } },
        [[{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}},
          "required":["tags"]}]] },
      { "array of objects", { pts = { { x = "number" } } },
        [[{"type":"object","properties":{"pts":{"type":"array","items":{"type":"object",
          "properties":{"x":{"type":"number"}},"required":["x"]}}},"required":["pts"]}]] },
      { "nested object", { addr = { city = "string", zip = "string?" } },
        [[{"type":"object","properties":{"addr":{"type":"object","properties":{
          "city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}},
          "required":["addr"]}]] },
      { "enum leaf", { unit = { enum = { "c", "f" } } },
        [[{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":["unit"]}]] },
      { "enum leaf, optional", { unit = { enum = { "c", "f" }, optional = true } },
        [[{"type":"object","properties":{"unit":{"enum":["c","f"]}},"required":[]}]] },
      { "typed leaf with keywords", { n = { type = "integer", minimum = 1, default = 3,
        description = "how many" } },
        [[{"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":3,
          "description":"how many"}},"required":["n"]}]] },
      { "typed leaf optional by ?", { n = { type = "number?" } },
        [[{"type":"object","properties":{"n":{"type":"number"}},"required":[]}]] },
      { "typed leaf with string items", { t = { type = "array", items = "string", minItems = 1 } },
        [[{"type":"object","properties":{"t":{"type":"array","items":{"type":"string"},
          "minItems":1}},"required":["t"]}]] },
      { "nullable via type list", { v = { type = { "string", "null" } } },
        [[{"type":"object","properties":{"v":{"type":["string","null"]}},"required":["v"]}]] },
      { "anyOf of strings", { v = { anyOf = { "string", "number" } } },
        [[{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}},
          "required":["v"]}]] },
      { "a property named like a keyword at the top", { type = "string" },
        [[{"type":"object","properties":{"type":{"type":"string"}},"required":["type"]}]] },
      { "full JSON Schema verbatim", { type = "object", properties = { a = { type = "number" } } },
        [[{"type":"object","properties":{"a":{"type":"number"}}}]] },
      { "full JSON Schema: empty properties and required stay {} and []",
        { type = "object", properties = {}, required = {} },
        [[{"type":"object","properties":{},"required":[]}]] },
      { "full JSON Schema: {} sub-schema stays {}",
        { type = "object", properties = { x = {} }, additionalProperties = false },
        [[{"type":"object","properties":{"x":{}},"additionalProperties":false}]] },
      { "full JSON Schema: string sugar inside",
        { type = "object", properties = { x = "integer: n" }, required = { "x" } },
        [[{"type":"object","properties":{"x":{"type":"integer","description":"n"}},
          "required":["x"]}]] },
      { "full JSON Schema: $defs and $ref",
        { type = "object", ["$defs"] = { p = { type = "string" } },
          properties = { x = { ["$ref"] = "#/$defs/p" } } },
        [[{"type":"object","$defs":{"p":{"type":"string"}},
          "properties":{"x":{"$ref":"#/$defs/p"}}}]] },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local got = assert(schema.parse(row[2]))
        assert.equal(canon(json.decode(row[3])), wire(got))
      end)
    end

    it("says whether the spec is shorthand alone (a schema that always compiles)", function()
      assert.same({ true }, { select(2, schema.parse { a = "number", t = { { x = "string?" } } }) })
      assert.same({ false }, { select(2, schema.parse { type = "object" }) })
      assert.same({ false }, { select(2, schema.parse { a = { type = "string" } }) })
    end)

    it("does not modify its argument", function()
      local spec = { a = "number?", t = { type = "string", optional = true } }
      schema.parse(spec)
      assert.same({ a = "number?", t = { type = "string", optional = true } }, spec)
    end)
  end)

  describe("parse errors", function()
    local rows = {
      { "not a table", "number", "table expected, got string" },
      { "unknown type", { a = "strng" }, "a: unknown type 'strng'" },
      { "bad type string", { a = "number x" },
        "a: bad type \"number x\" (expected e.g. 'number', 'string?' or 'string: a description')" },
      { "nested unknown type", { addr = { city = "sting" } }, "addr.city: unknown type 'sting'" },
      { "array item", { tags = { "strin" } }, "tags[]: unknown type 'strin'" },
      { "optional array element", { tags = { "string?" } },
        "tags[]: '?' cannot make an array element optional" },
      { "list with fields", { tags = { "string", min = 1 } },
        "tags: an array is written as a list of one spec, like {\"string\"}" },
      { "two-element list", { tags = { "string", "number" } },
        "tags: an array is written as a list of one spec, like {\"string\"}" },
      { "non-string value", { a = 5 }, "a: expected a type name or a table, got number" },
      { "non-string key", { [1.5] = "number", b = "string" },
        "property names must be strings (got number 1.5)" },
      { "unknown type in a node", { a = { type = "text" } }, "a: unknown type 'text'" },
      { "optional not boolean", { a = { type = "string", optional = "yes" } },
        "a: 'optional' must be a boolean" },
      { "shorthand inside JSON Schema", { type = "object", properties = { p = { x = "number" } } },
        "p: 'x' is not a JSON Schema keyword (shorthand is not allowed inside a JSON Schema; "
          .. "write { type = \"object\", properties = ... })" },
      { "? inside JSON Schema properties", { type = "object", properties = { p = "string?" } },
        "p: '?' / optional only work in shorthand; list required properties in 'required'" },
      { "required not a list", { type = "object", required = "a" }, "'required' must be a list" },
      { "anyOf not a list", { v = { anyOf = "string" } }, "v: 'anyOf' must be a list of schemas" },
      { "optional at top", { type = "object", optional = true },
        "'optional' has no meaning at the top of a schema" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local got, err, kind = schema.parse(row[2])
        assert.is_nil(got)
        assert.equal(row[3], err.message)
        assert.equal("schema", kind)
        assert.equal(kind, err.kind)
        assert.equal("schema: " .. row[3], tostring(err))
      end)
    end

    it("normalize raises, blaming the caller", function()
      local ok, err = pcall(function() schema.normalize { a = "strng" } end)
      assert.is_false(ok)
      assert.matches("^spec/unit/schema_spec%.lua:%d+: a: unknown type 'strng'$", err)
    end)
  end)

  describe("validator", function()
    local S = {
      ab = { a = "number", b = "string?" },
      tags = { tags = { "string" } },
      int = { n = "integer" },
      nested = { addr = { city = "string", zip = "integer?" } },
      enum = { unit = { enum = { "c", "f" } } },
      range = { n = { type = "number", minimum = 1, maximum = 10 } },
      xrange = { n = { type = "number", exclusiveMinimum = 0, exclusiveMaximum = 1 } },
      len = { s = { type = "string", minLength = 2, maxLength = 3 } },
      items = { t = { type = "array", items = "integer", minItems = 1, maxItems = 2 } },
      pat = { code = { type = "string", pattern = "^[A-Z]{3}$" } },
      nullable = { v = { type = { "string", "null" } } },
      closed = { type = "object", properties = { a = { type = "number" } },
        additionalProperties = false },
      extra = { type = "object", additionalProperties = { type = "integer" } },
      const = { k = { const = "yes" } },
      anyof = { v = { anyOf = { "string", "integer" } } },
      oneof = { v = { oneOf = { { type = "integer" }, { type = "number", minimum = 5 } } } },
      allof = { v = { allOf = { { type = "number" }, { minimum = 0 } } } },
      ["not"] = { v = { ["not"] = { type = "string" } } },
      mult = { v = { type = "number", multipleOf = 0.5 } },
      unique = { v = { type = "array", uniqueItems = true } },
      tuple = { v = { type = "array", prefixItems = { "string", "number" }, items = false } },
      ref = { type = "object", ["$defs"] = { pos = { type = "integer", minimum = 1 } },
        properties = { a = { ["$ref"] = "#/$defs/pos" } } },
      tree = { type = "object", properties = { name = { type = "string" },
        kids = { type = "array", items = { ["$ref"] = "#" } } }, required = { "name" } },
      props = { type = "object", minProperties = 1, maxProperties = 2 },
      draft4 = { n = { type = "number", minimum = 0, exclusiveMinimum = true } },
      weird = { ["a b"] = "number" },
    }
    local null = json.null
    local rows = {
      { "ab", { a = 1 }, true },
      { "ab", { a = 1.5, b = "x" }, true },
      { "ab", { a = 1, b = 2 }, "b: expected string, got number" },
      { "ab", { b = "x" }, "missing required property 'a'" },
      { "ab", { a = "1" }, "a: expected number, got string" },
      { "ab", { a = {} }, "a: expected number, got object" },
      { "ab", "x", "expected object, got string" },
      { "ab", { a = 1, b = null }, "b: expected string, got null" },
      { "tags", { tags = { "a", "b" } }, true },
      { "tags", { tags = {} },
        "tags: expected array, got object (an unmarked {}; json.array() marks an empty array)" },
      { "tags", { tags = json.array {} }, true },
      { "tags", { tags = { "a", true } }, "tags[2]: expected string, got boolean" },
      { "tags", { tags = { x = 1 } }, "tags: expected array, got object" },
      { "int", { n = 3 }, true },
      { "int", { n = 3.0 }, true },
      { "int", { n = 3.5 }, "n: expected integer, got number" },
      { "int", { n = 1 / 0 }, "n: expected integer, got non-finite number" },
      { "nested", { addr = { city = "x", zip = 1 } }, true },
      { "nested", { addr = {} }, "addr: missing required property 'city'" },
      { "nested", { addr = { city = "x", zip = "1" } }, "addr.zip: expected integer, got string" },
      { "enum", { unit = "c" }, true },
      { "enum", { unit = "k" }, "unit: expected one of \"c\", \"f\", got \"k\"" },
      { "range", { n = 1 }, true },
      { "range", { n = 10 }, true },
      { "range", { n = 0 }, "n: must be >= 1, got 0" },
      { "range", { n = 10.5 }, "n: must be <= 10, got 10.5" },
      { "xrange", { n = 0.5 }, true },
      { "xrange", { n = 0 }, "n: must be > 0, got 0" },
      { "xrange", { n = 1 }, "n: must be < 1, got 1" },
      { "draft4", { n = 0 }, "n: must be > 0, got 0" },
      { "draft4", { n = 0.1 }, true },
      { "len", { s = "ab" }, true },
      { "len", { s = "été" }, true },
      { "len", { s = "a" }, "s: must be at least 2 characters long" },
      { "len", { s = "abcd" }, "s: must be at most 3 characters long" },
      { "items", { t = { 1 } }, true },
      { "items", { t = json.array() }, "t: must have at least 1 item" },
      { "items", { t = { 1, 2, 3 } }, "t: must have at most 2 items" },
      { "items", { t = { 1, 2.5 } }, "t[2]: expected integer, got number" },
      { "pat", { code = "ABC" }, true },
      { "pat", { code = "ABCD" }, "code: does not match pattern '^[A-Z]{3}$'" },
      { "nullable", { v = null }, true },
      { "nullable", { v = "x" }, true },
      { "nullable", { v = 1 }, "v: expected string or null, got number" },
      { "closed", { a = 1 }, true },
      { "closed", { a = 1, b = 2 }, "unexpected property 'b'" },
      { "extra", { a = 1, b = 2 }, true },
      { "extra", { a = 1, b = "2" }, "b: expected integer, got string" },
      { "const", { k = "yes" }, true },
      { "const", { k = "no" }, "k: expected \"yes\", got \"no\"" },
      { "anyof", { v = 1 }, true },
      { "anyof", { v = 1.5 }, "v: does not match any allowed schema (expected string, got "
        .. "number; expected integer, got number)" },
      { "oneof", { v = 1 }, true },
      { "oneof", { v = 5.5 }, true },
      { "oneof", { v = 6 }, "v: matches more than one schema in 'oneOf' (1 and 2)" },
      { "oneof", { v = 1.5 }, "v: does not match any allowed schema (expected integer, got "
        .. "number; must be >= 5, got 1.5)" },
      { "allof", { v = -1 }, "v: must be >= 0, got -1" },
      { "not", { v = 1 }, true },
      { "not", { v = "s" }, "v: must not match the schema in 'not'" },
      { "mult", { v = 1.5 }, true },
      { "mult", { v = 1.25 }, "v: must be a multiple of 0.5, got 1.25" },
      { "unique", { v = { 1, 2, { a = 1 } } }, true },
      { "unique", { v = { { a = 1 }, 2, { a = 1 } } },
        "v: items must be unique (item 3 repeats item 1)" },
      { "tuple", { v = { "a", 1 } }, true },
      { "tuple", { v = { "a", "b" } }, "v[2]: expected number, got string" },
      { "tuple", { v = { "a", 1, 2 } }, "v[3]: no value is allowed here" },
      { "ref", { a = 2 }, true },
      { "ref", { a = 0 }, "a: must be >= 1, got 0" },
      { "tree", { name = "r", kids = { { name = "k", kids = { { name = "g" } } } } }, true },
      { "tree", { name = "r", kids = { { name = "k", kids = { { } } } } },
        "kids[1].kids[1]: missing required property 'name'" },
      { "props", { a = 1 }, true },
      { "props", {}, "must have at least 1 properties" },
      { "props", { a = 1, b = 2, c = 3 }, "must have at most 2 properties" },
      { "weird", { ["a b"] = "x" }, "[\"a b\"]: expected number, got string" },
    }
    for i, row in ipairs(rows) do
      it(("%s #%d"):format(row[1], i), function()
        local s = S[row[1]]
        if s.type ~= "object" then s = schema.normalize(s) end
        local ok, err, kind = schema.validator(s)(row[2])
        if row[3] == true then
          assert.same({ true }, { ok, err })
        else
          assert.is_nil(ok)
          -- the keyword's location ends the message (tested on its own below)
          assert.equal(row[3], (err.message:gsub(" %(keyword [^)]*%)$", "")))
          assert.equal("validation", kind)
          assert.equal(kind, err.kind)
        end
      end)
    end

    it("validates decoded JSON", function()
      local v = schema.validator(schema.normalize { tags = { "string" }, n = "integer",
        o = "object" })
      assert.is_true(v(json.decode('{"tags":[],"n":3,"o":{}}')))
      assert.is_true(v(json.decode('{"tags":["a"],"n":3.0,"o":{"x":null}}')))
      local ok, err = v(json.decode('{"tags":["a",null],"n":3,"o":{}}'))
      assert.is_nil(ok)
      assert.equal("tags[2]: expected string, got null (keyword /properties/tags/items/type)",
        err.message)
    end)

    it("names the instance and the keyword, as the basic output format does", function()
      local v = schema.validator {
        ["$defs"] = { pos = { type = "integer", minimum = 1 } },
        type = "object",
        properties = { ["a/b"] = { type = "array", items = { ["$ref"] = "#/$defs/pos" } },
          ["odd key"] = { enum = { 1 } } },
      }
      local _, err = v { ["a/b"] = { 1, 0 } }
      assert.equal('["a/b"][2]: must be >= 1, got 0 (keyword /properties/a~1b/items/$ref/minimum)',
        err.message)
      assert.equal("/a~1b/1", err.instance_location)
      assert.equal("/properties/a~1b/items/$ref/minimum", err.keyword_location)
      _, err = v { ["odd key"] = 2 }
      assert.equal("/odd key", err.instance_location)
      assert.equal("/properties/odd key/enum", err.keyword_location)
      _, err = v "x"
      assert.equal("expected object, got string (keyword /type)", err.message)
      assert.equal("", err.instance_location)
    end)

    it("takes and refuses the same values on its fast path for plain objects", function()
      -- minProperties = 0 changes nothing but keeps a schema off the fast path
      local function both(sch)
        local slow = {}
        for k, v in pairs(sch) do slow[k] = v end
        slow.minProperties = 0
        return schema.compile(sch), schema.compile(slow)
      end
      local props = { a = { type = "number" }, b = { type = "string" }, c = true }
      local schemas = {
        { type = "object", properties = props, required = { "a" } },
        { type = "object", properties = props, additionalProperties = false },
        { type = "object", properties = props, additionalProperties = { type = "integer" } },
        { type = "object", properties = props, required = { "a", "b" },
          additionalProperties = false },
        -- flat objects (string, number and boolean properties): one C call (core.flat_validator)
        { type = "object", properties = { a = { type = "number" }, b = { type = "string" },
          d = { type = "boolean" } }, required = { "a", "z" } },
        schema.normalize { a = "number", b = "string?", d = "boolean?" },
      }
      local values = { {}, { a = 1 }, { a = 1, b = "x" }, { a = "1" }, { a = 1, b = 2 },
        { a = 1, c = {} }, { a = 1, z = 1 }, { a = 1, z = 1.5 }, { a = 1, z = "s" }, { 1, 2 },
        { 1, a = 1 }, json.array(), json.object(), json.object { a = 1 }, json.array { 1 },
        json.null, "text", 5, true, { a = json.null }, { [1.5] = 1 }, { b = "x" },
        { a = 0 / 0 }, { a = 1 / 0, z = 1 }, { a = -1 / 0 }, { a = 2 ^ 60, z = false },
        { a = 1, d = true, z = json.null }, { a = 1, d = "true", z = 1 }, { a = 1.5, b = "" },
        setmetatable({ a = 1, z = 1 }, {}), json.object { a = 1, b = "x", z = {} },
        { a = 1, b = "x", d = false, z = 0 }, { z = 1 }, { a = math.mininteger } }
      for si, sch in ipairs(schemas) do
        local fast, slow = both(sch)
        for vi, v in ipairs(values) do
          local ok1, e1 = fast(v)
          local ok2, e2 = slow(v)
          assert.equal(ok2, ok1, "schema " .. si .. ", value " .. vi)
          assert.equal(e2 and e2.message, e1 and e1.message, "schema " .. si .. ", value " .. vi)
        end
      end
    end)

    it("is compiled once: a validator is a plain function", function()
      local v = schema.validator(schema.normalize { a = "number" })
      assert.is_function(v)
      for _ = 1, 1000 do assert.is_true(v { a = 1 }) end
    end)

    local bad_schemas = {
      { { type = "object", properties = { n = { minimum = "1" } } },
        "bad schema: n: 'minimum' must be a number" },
      { { type = "object", properties = { s = { minLength = -1 } } },
        "bad schema: s: 'minLength' must be a non-negative integer" },
      { { type = "object", properties = { s = { pattern = "(a" } } },
        "bad schema: s: invalid pattern /(a/: missing )" },
      { { type = "object", properties = { s = { ["$ref"] = "http://x/y" } } },
        "bad schema: $ref 'http://x/y' does not resolve (no loader: references outside the "
          .. "schema are never fetched by themselves)" },
      { { type = "object", properties = { s = { ["$ref"] = "#/nope" } } },
        "bad schema: $ref '#/nope' does not resolve (no such location)" },
      { { type = "thing" }, "bad schema: unknown type 'thing'" },
    }
    for _, row in ipairs(bad_schemas) do
      it("rejects a malformed schema: " .. row[2], function()
        local ok, err = pcall(schema.validator, row[1])
        assert.is_false(ok)
        assert.equal(row[2], (err:gsub("^[^:]+:%d+: ", "")))
        local f, cerr, kind = schema.compile(row[1])
        assert.is_nil(f)
        assert.equal("schema", kind)
        assert.equal(row[2], "bad schema: " .. cerr.message)
      end)
    end

    it("enforces every ECMA-262 pattern: lookbehind, backreferences, \\p{...}", function()
      for _, row in ipairs({ { "(?<=a)b", "ab", "cb" }, { "(?<!a)b", "cb", "ab" },
        { "^(a)\\1$", "aa", "ab" }, { "^\\p{L}+$", "été", "e1" } }) do
        local v = schema.validator { type = "object", properties = {
          s = { type = "string", pattern = row[1] } } }
        assert.is_true(v { s = row[2] })
        assert.is_nil(v { s = row[3] })
        v = schema.validator { type = "object", patternProperties = { [row[1]] = true },
          additionalProperties = false }
        assert.is_true(v { [row[2]] = 1 })
        assert.is_nil(v { [row[3]] = 1 })
      end
    end)

    it("takes no NaN or infinity as a number, on the fast path too", function()
      local leaf = schema.validator { type = "number" }
      local obj = schema.validator { type = "object", properties = { n = { type = "number" } } }
      for _, x in ipairs({ 0 / 0, 1 / 0, -1 / 0 }) do
        local ok, err = leaf(x)
        assert.is_nil(ok)
        assert.equal("expected number, got non-finite number (keyword /type)", err.message)
        ok, err = obj { n = x }
        assert.is_nil(ok)
        assert.equal("n: expected number, got non-finite number (keyword /properties/n/type)",
          err.message)
      end
      assert.is_true(obj { n = 1.5 })
      assert.is_true(obj(json.decode('{"n":1e300}')))
      assert.is_nil(obj(json.decode('{"n":1e999}')))
    end)

    it("takes an unmarked {} as an object, never as an array", function()
      local v = schema.validator { type = "object", properties = { t = { type = "array" } } }
      assert.is_nil(v { t = {} })
      assert.is_nil(v(json.decode('{"t":{}}')))
      assert.is_true(v { t = json.array() })
      assert.is_true(v(json.decode('{"t":[]}')))
      assert.is_true(v { t = { 1 } })
    end)
  end)

  describe("regex", function()
    local rows = {
      { "^[a-z]+$", "abc", true }, { "^[a-z]+$", "abC", false }, { "a|b", "xxb", true },
      { "^(ab)+$", "ababab", true }, { "^(ab)+$", "ababa", false },
      { "^\\d{3}-\\d{4}$", "555-1234", true }, { "^\\d{3}-\\d{4}$", "555-12345", false },
      { "^.$", "é", true }, { "^..$", "é", false }, { "^.$", "\n", false },
      { "^(?!foo).*$", "foobar", false }, { "^(?!foo).*$", "barfoo", true },
      { "^(?=.*\\d)\\w+$", "ab1", true }, { "^(?=.*\\d)\\w+$", "abc", false },
      { "colou?r", "the color", true }, { "^a.*?b$", "axxb", true },
      { "\\bfoo\\b", "a foo b", true }, { "\\bfoo\\b", "afoob", false },
      { "\\Bo\\B", "foo", true }, { "^[^\\s]+$", "a c", false },
      { "^\\u00e9\\x41$", "éA", true }, { "^\\u{1F600}$", "😀", true },
      { "^\\uD83D\\uDE00$", "😀", true }, { "^[😀-😂]$", "😁", true },
      { "^[\\w.-]+@[\\w-]+\\.\\w+$", "a.b@c.com", true }, { "^a{2,}$", "aaa", true },
      { "^a{2,}$", "a", false }, { "^a{,5}$", "a{,5}", true }, { "^[]$", "", false },
      { "^[^]$", "x", true }, { "^(?:a|bc)*$", "abca", true }, { "^(a*)*$", "aaaa", true },
      { "^(?<year>\\d{4})$", "2024", true }, { "[\\d-x]", "-", true },
      { "^\\/path\\.$", "/path.", true }, { "^\\t$", "\t", true }, { "^\\cJ$", "\n", true },
      { "(a+)+b", ("a"):rep(20) .. "b", true }, { "x*", "", true }, { "^$", "", true },
      { "(?<=a)b", "ab", true }, { "(?<=a)b", "cb", false }, { "(?<!a)b", "ab", false },
      { "(?<=^a+)b", "aaab", true }, { "(?<=^a+)b", "xab", false }, { "^(a)\\1$", "aa", true },
      { "^(?<x>a)\\k<x>$", "aa", true }, { "^(?<x>a)\\k<x>$", "ab", false },
      { "^\\p{L}+$", "été", true }, { "^\\p{Lu}$", "é", false },
      { "^\\p{Script=Greek}+$", "αβ", true }, { "^\\P{Letter}$", "1", true },
      { "^\\d$", "\u{0660}", false }, { "^\\w$", "é", false }, { "^\\s$", "\u{00a0}", true },
      { "^[\\S]$", "\u{2003}", false }, { "^abc$", "abc\n", false }, { "^\\k$", "k", true },
    }
    for _, row in ipairs(rows) do
      it(("/%s/ on %q"):format(row[1], row[2]), function()
        local re = assert(schema.regex(row[1]))
        assert.equal(row[3], re(row[2]))
      end)
    end

    local errors = {
      { "(a", "invalid pattern /(a/: missing )" }, { "a)", "invalid pattern /a)/: unmatched )" },
      { "*a", "invalid pattern /*a/: nothing to repeat" },
      { "a{2,1}", "invalid pattern /a{2,1}/: numbers out of order in {} quantifier" },
      { "[z-a]", "invalid pattern /[z-a]/: range out of order in character class" },
      { "[ab", "invalid pattern /[ab/: missing ] after [" },
      { "a**", "invalid pattern /a**/: nothing to repeat" },
      { "\\p{Nope}", "invalid pattern /\\p{Nope}/: unknown property after \\P or \\p" },
    }
    for _, row in ipairs(errors) do
      it(("/%s/ -> %s"):format(row[1], row[2]), function()
        local re, err, kind = schema.regex(row[1])
        assert.is_nil(re)
        assert.equal(kind, err.kind)
        assert.equal("schema", kind)
        assert.equal(row[2], err.message)
      end)
    end
  end)
end)
