-- Hostile schemas and values: each bound of claude.schema holds, fails closed, and says
-- which bound it was.
local json = require "claude.json"
local schema = require "claude.schema"

-- f() must return within `seconds` of CPU time (ten times that in a sanitized build); ->
-- its results. What is stopped would otherwise run for hours.
local slow = os.getenv("ASAN_OPTIONS") and 10 or 1
local function quick(seconds, f)
  seconds = seconds * slow
  local t = os.clock()
  local r = table.pack(f())
  assert(os.clock() - t < seconds, ("took %.2fs"):format(os.clock() - t))
  return table.unpack(r, 1, r.n)
end

local function nested(depth)
  local s = { type = "string" }
  for _ = 1, depth do s = { type = "object", properties = { x = s } } end
  return s
end

describe("claude.schema bounds", function()
  describe("max_depth", function()
    it("refuses a schema nested deeper than 64 subschemas, and says so", function()
      local v, err, kind = schema.compile(nested(100))
      assert.is_nil(v)
      assert.equal("schema", kind)
      assert.matches("nested deeper than 64 subschemas %(max_depth%)", err.message)
      assert.is_function(schema.compile(nested(60)))
      assert.is_function(schema.compile(nested(100), { max_depth = 128 }))
    end)
  end)

  describe("max_subschemas", function()
    it("refuses a schema with more than 10000 subschemas", function()
      local props = {}
      for i = 1, 10001 do props["p" .. i] = { type = "integer" } end
      local v, err, kind = quick(5, function()
        return schema.compile { type = "object", properties = props }
      end)
      assert.is_nil(v)
      assert.equal("schema", kind)
      assert.matches("more than 10000 subschemas %(max_subschemas%)", err.message)
      assert.is_function(schema.compile({ type = "object", properties = props },
        { max_subschemas = 20000 }))
    end)
  end)

  describe("max_steps", function()
    -- 2^30 evaluations if nothing stopped them
    local function laughs(key, n)
      local defs = { d30 = { type = "string" } }
      for i = 0, n - 1 do
        local next_ref = { ["$ref"] = "#/$defs/d" .. (i + 1) }
        defs["d" .. i] = { [key] = { next_ref, next_ref } }
      end
      return defs
    end

    it("stops anyOf on a billion paths, and fails closed", function()
      local v = schema.validator { ["$defs"] = laughs("anyOf", 30), ["$ref"] = "#/$defs/d0" }
      local ok, err, kind = quick(5, function() return v(1) end)
      assert.is_nil(ok)
      assert.equal("validation", kind)
      assert.equal("max_steps", err.bound)
      assert.matches("validation stopped after 1000000 steps %(max_steps%)", err.message)
      assert.is_true(v "s") -- the first branch of each: a short path
    end)

    it("fails closed under 'not' too (a stopped branch is no pass)", function()
      local v = schema.validator { ["$defs"] = laughs("allOf", 30),
        ["not"] = { ["$ref"] = "#/$defs/d0" } }
      local ok, err = quick(5, function() return v "s" end)
      assert.is_nil(ok)
      assert.equal("max_steps", err.bound)
    end)

    it("counts properties and patternProperties that both apply, through $refs", function()
      local defs = { d25 = true }
      for i = 0, 24 do
        local r = { ["$ref"] = "#/$defs/d" .. (i + 1) }
        defs["d" .. i] = { properties = { a = r },
          patternProperties = { ["^a$"] = r } }
      end
      local v = schema.validator { ["$defs"] = defs, ["$ref"] = "#/$defs/d0" }
      local value = 1
      for _ = 1, 25 do value = { a = value } end
      local ok, err = quick(5, function() return v(value) end)
      assert.is_nil(ok)
      assert.equal("max_steps", err.bound)
      assert.is_true(schema.validator({ ["$defs"] = defs, ["$ref"] = "#/$defs/d0" },
        { max_steps = 100000000 }) { a = { a = 1 } })
    end)

    it("takes a smaller budget", function()
      local v = schema.validator({ anyOf = { { anyOf = { { type = "string" }, { minimum = 2 } } },
        { anyOf = { { type = "string" }, { minimum = 3 } } } } }, { max_steps = 2 })
      local ok, err = v(1.5)
      assert.is_nil(ok)
      assert.equal("max_steps", err.bound)
    end)
  end)

  describe("max_ref_depth", function()
    it("stops a $ref that loops on the same value", function()
      local v = schema.validator { ["$ref"] = "#" }
      local ok, err, kind = quick(2, function() return v(1) end)
      assert.is_nil(ok)
      assert.equal("validation", kind)
      assert.matches("references nested deeper than 500 levels", err.message)
    end)

    it("stops a recursive schema on a value deeper than it allows", function()
      local v = schema.validator { type = "object", properties = { kid = { ["$ref"] = "#" } } }
      local deep = {}
      for _ = 1, 20000 do deep = { kid = deep } end
      local ok, err = quick(2, function() return v(deep) end)
      assert.is_nil(ok)
      assert.matches("references nested deeper than 500 levels", err.message)
      local shallow = {}
      for _ = 1, 400 do shallow = { kid = shallow } end
      assert.is_true(v(shallow))
      assert.is_true(schema.validator({ type = "object", properties = {
        kid = { ["$ref"] = "#" } } }, { max_ref_depth = 30000 })(deep))
    end)
  end)

  describe("patterns", function()
    it("stops catastrophic backtracking: the value is refused, never let through", function()
      local v = schema.validator { type = "string", pattern = "^(a+)+$" }
      local ok, err = quick(2, function() return v(("a"):rep(5000) .. "!") end)
      assert.is_nil(ok)
      assert.matches("could not be checked: the pattern took too many steps", err.message)
      assert.is_true(v(("a"):rep(5000)))
    end)

    it("stops a lookbehind of varying length as well", function()
      local v = schema.validator { type = "string", pattern = "(?<=(a+)+)b" }
      local ok = quick(2, function() return v(("a"):rep(3000) .. "c") end)
      assert.is_nil(ok)
    end)
  end)

  describe("values", function()
    it("checks uniqueItems on a large array of objects in linear time", function()
      local v = schema.validator { type = "array", uniqueItems = true }
      local a = {}
      for i = 1, 50000 do a[i] = { id = i, tags = { "x", i } } end
      assert.is_true(quick(3, function() return v(a) end))
      a[50001] = { tags = { "x", 7 }, id = 7 }
      local ok, err = quick(3, function() return v(a) end)
      assert.is_nil(ok)
      assert.matches("item 50001 repeats item 7", err.message)
    end)
  end)

  describe("references to other documents", function()
    local s = { type = "object", properties = { a = { ["$ref"] = "https://example.com/a.json" } } }

    it("are never fetched: without a loader the schema is refused", function()
      local v, err, kind = schema.compile(s)
      assert.is_nil(v)
      assert.equal("schema", kind)
      assert.matches("does not resolve %(no loader", err.message)
    end)

    it("come from a loader: a table of documents, or a function", function()
      local v = schema.validator(s, { loader = { ["https://example.com/a.json"] =
        '{"type":"integer"}' } })
      assert.is_true(v { a = 1 })
      assert.is_nil(v { a = "1" })
      local asked = {}
      v = schema.validator(s, { loader = function(uri)
        asked[#asked + 1] = uri
        return { type = "string" }
      end })
      assert.same({ "https://example.com/a.json" }, asked)
      assert.is_true(v { a = "x" })
    end)

    it("fail closed when the loader has nothing", function()
      local v, err = schema.compile(s, { loader = function() return nil, "offline" end })
      assert.is_nil(v)
      assert.matches("does not resolve: offline", err.message)
    end)

    it("to the standard meta-schemas resolve without a loader", function()
      local v = schema.validator { ["$ref"] = "https://json-schema.org/draft/2020-12/schema" }
      assert.is_true(v { type = "string" })
      assert.is_nil(v { type = 12 })
    end)
  end)

  describe("dialects", function()
    it("refuse an unknown $schema", function()
      local v, err, kind = schema.compile { ["$schema"] = "https://example.com/my-schema" }
      assert.is_nil(v)
      assert.equal("unsupported", kind)
      assert.matches("unknown %$schema 'https://example.com/my%-schema'", err.message)
    end)

    it("follow $schema, or the dialect option", function()
      local s7 = { items = { { type = "string" } }, additionalItems = false }
      assert.is_nil(schema.validator(s7, { dialect = "draft-07" })(json.decode('["a", 1]')))
      -- in 2020-12 the list form of items is no longer valid
      local v, err = schema.compile(s7)
      assert.is_nil(v)
      assert.matches("'items' must be a schema", err.message)
      s7["$schema"] = "http://json-schema.org/draft-07/schema#"
      assert.is_nil(schema.validator(s7)(json.decode('["a", 1]')))
    end)

    it("misuse of the options raises at the caller's line", function()
      assert.has_error(function() schema.compile(true, { dialect = "draft-99" }) end)
      assert.has_error(function() schema.compile(true, { max_steps = 0 }) end)
      assert.has_error(function() schema.compile(true, { nope = 1 }) end)
    end)
  end)
end)
