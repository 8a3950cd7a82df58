local json = require "claude.json"
local harness = require "support.harness"

describe("claude.json", function()
  before_each(harness.before)
  after_each(harness.after)

  -- text in -> text out after decode + encode (objects with one key keep order)
  local round_trips = {
    { "integer", "42", "42" },
    { "negative integer", "-7", "-7" },
    { "2^53", "9007199254740992", "9007199254740992" },
    { "-2^53", "-9007199254740992", "-9007199254740992" },
    { "float", "0.1", "0.1" },
    { "float keeps all digits", "3.141592653589793", "3.141592653589793" },
    { "exponent", "1e300", "1e+300" },
    { "integral float", "1.0", "1" },
    { "string", '"h\\u00e9llo"', '"héllo"' },
    { "escapes", '"a\\"b\\\\c\\n\\t\\u0001"', '"a\\"b\\\\c\\n\\t\\u0001"' },
    { "slash is not escaped", '"a/b"', '"a/b"' },
    { "utf-8 passes through", '"日本 \\u2028"', '"日本 \226\128\168"' },
    { "true", "true", "true" },
    { "false", "false", "false" },
    { "null", "null", "null" },
    { "empty array", "[]", "[]" },
    { "empty array with space", "[ ]", "[]" },
    { "empty object", "{}", "{}" },
    { "nested empties", '{"a":[[],{}]}', '{"a":[[],{}]}' },
    { "array in string is text", '"[]"', '"[]"' },
    { "escaped quote before []", '{"s":"x\\"[]","a":[]}', nil },
    { "array of ids", "[1,2,3]", "[1,2,3]" },
    { "request id", '{"id":123456789012345}', '{"id":123456789012345}' },
    { "nested", '{"a":{"b":{"c":[1,{"d":null}]}}}', '{"a":{"b":{"c":[1,{"d":null}]}}}' },
  }

  for _, row in ipairs(round_trips) do
    local name, text, expected = row[1], row[2], row[3]
    it("round-trips " .. name, function()
      local v, err = json.decode(text)
      assert.is_nil(err)
      local out = json.encode(v)
      if expected then
        assert.equal(expected, out)
      else
        assert.same(v, json.decode(out))
      end
    end)
  end

  it("decodes integers as Lua integers", function()
    local v = json.decode('{"a":15,"b":27,"id":9007199254740993,"f":2.5}')
    assert.equal("integer", math.type(v.a))
    assert.equal("42", tostring(v.a + v.b))
    assert.equal("integer", math.type(v.id))
    assert.equal("float", math.type(v.f))
  end)

  it("encodes every Lua integer exactly", function()
    for _, n in ipairs { 123456789012345678, math.maxinteger, math.mininteger } do
      assert.equal(tostring(n), json.encode(n))
    end
  end)

  it("round-trips integers up to 2^53 exactly", function()
    for _, n in ipairs { 2 ^ 53 | 0, -(2 ^ 53 | 0), 99999999999999, 100000000000001 } do
      local back = json.decode(json.encode(n))
      assert.equal("integer", math.type(back))
      assert.equal(n, back)
    end
  end)

  it("writes floats with the shortest exact text", function()
    for _, x in ipairs { 0.1, 1 / 3, 2.5, 1e-300, 123.456, -0.000001 } do
      assert.equal(x, json.decode(json.encode(x)))
    end
    assert.equal("0.1", json.encode(0.1))
    assert.equal("42", json.encode(42.0))
  end)

  it("has null, array and object markers", function()
    assert.equal("null", json.encode(json.null))
    assert.equal("[]", json.encode(json.array()))
    assert.equal("{}", json.encode(json.object()))
    assert.equal("{}", json.encode({}))
    assert.equal('{"a":null}', json.encode({ a = json.null }))
    assert.equal("[1,2]", json.encode(json.array { 1, 2 }))
    assert.is_true(json.is_array(json.decode("[]")))
    assert.is_false(json.is_array(json.decode("{}")))
    assert.equal(json.null, json.decode("null"))
    assert.equal(json.null, json.decode("[null]")[1])
  end)

  it("re-encodes a decoded empty object as {} and empty array as []", function()
    local v = json.decode('{"input":{},"tags":[],"suggestions":[]}')
    local again = json.decode(json.encode(v))
    assert.equal("{}", json.encode(again.input))
    assert.equal("[]", json.encode(again.tags))
  end)

  local bad_values = {
    { "a function", { f = print }, "cannot encode a function at $.f" },
    { "NaN", { x = 0 / 0 }, "cannot encode NaN at $.x" },
    { "infinity", { 1, math.huge }, "cannot encode infinity at $[2]" },
    { "mixed keys", { 1, 2, x = 3 }, "both list items and other keys" },
    { "a boolean key", { [true] = 1 }, "boolean key" },
    { "a deep path", { a = { b = { { c = print } } } }, "at $.a.b[1].c" },
  }
  for _, row in ipairs(bad_values) do
    it("refuses " .. row[1], function()
      local ok, err = pcall(json.encode, row[2])
      assert.is_false(ok)
      assert.matches(row[3], err, 1, true)
    end)
  end

  it("refuses a cycle", function()
    local t = {}
    t.self = t
    local ok, err = pcall(json.encode, t)
    assert.is_false(ok)
    assert.matches("nesting deeper", err)
  end)

  local bad_texts = { "{", "[1,", '{"a" 1}', "NaN", "nope", "", '{"a":1}x', "0x10" }
  for _, text in ipairs(bad_texts) do
    it("returns nil, err for invalid text " .. string.format("%q", text), function()
      local v, err = json.decode(text)
      assert.is_nil(v)
      assert.matches("^invalid JSON", err)
    end)
  end
end)

describe("claude.json with long strings (decoded in C, not by cjson)", function()
  local cjson = require "cjson"
  before_each(harness.before)
  after_each(harness.after)

  local long = string.rep("abc", 700) -- 2100 bytes: over the 1 KiB threshold
  local pad = string.rep(" ", 9000)   -- makes a text long enough to be scanned

  -- each row: a JSON string literal body (between the quotes), as cjson reads it
  local bodies = {
    { "plain", long },
    { "escapes", long .. [[\"\\\/\b\f\n\r\t]] .. long },
    { "unicode escapes", long .. [[\u00e9\u4e2d\u0000\u001f]] },
    { "a surrogate pair", long .. [[\ud83d\ude00]] .. long },
    { "raw UTF-8", long .. "日本語" },
    { "a hole-like prefix", [[\u0000claude:s:1]] .. long },
  }
  for _, row in ipairs(bodies) do
    it("decodes a long string with " .. row[1] .. " exactly as cjson does", function()
      local text = '{"a":"' .. row[2] .. '","n":[1,2],"k":{"x":"' .. row[2] .. '"}}' .. pad
      local want = cjson.decode(text)
      local got = assert(json.decode(text))
      assert.equal(want.a, got.a)
      assert.equal(want.k.x, got.k.x)
      assert.equal("integer", math.type(got.n[1]))
      -- a long string as the whole value
      local whole = '"' .. row[2] .. '"' .. pad
      assert.equal(cjson.decode(whole), json.decode(whole))
    end)
  end

  local invalid = {
    { "a lone high surrogate", long .. [[\ud83d]] },
    { "a lone low surrogate", long .. [[\ude00]] },
    { "a bad escape", long .. [[\x]] },
    { "a raw control character", long .. "\1" },
  }
  for _, row in ipairs(invalid) do
    it("leaves " .. row[1] .. " to cjson's verdict", function()
      local text = '{"a":"' .. row[2] .. '"}' .. pad
      local ok = pcall(cjson.decode, text)
      local v, err = json.decode(text)
      if ok then assert.equal(cjson.decode(text).a, v.a)
      else assert.is_nil(v); assert.matches("^invalid JSON", err) end
    end)
  end

  it("keeps a long key as a key", function()
    local key = string.rep("k", 2000)
    local v = assert(json.decode('{"' .. key .. '":1,"empty":[]}' .. pad))
    assert.equal(1, v[key])
    assert.equal("[]", json.encode(v.empty))
  end)

  it("reports an unterminated long string", function()
    local v, err = json.decode('{"a":"' .. long .. pad)
    assert.is_nil(v)
    assert.matches("^invalid JSON", err)
  end)
end)

describe("claude.json long strings against cjson, on generated texts", function()
  local cjson = require "cjson"
  local pad = string.rep(" ", 9000)
  local valid = { "\\n", "\\t", '\\"', "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0041",
    "x", "abcdefgh", "é", "日本" }
  local broken = { '"', "\1", "\\u12", "\\ud83d", "\\q" }

  -- a long string body from the pieces; with `p_bad`, sometimes a piece that breaks it
  local function body(rand, p_bad)
    local parts = {}
    for i = 1, rand(150, 700) do
      if rand() < p_bad then parts[i] = broken[rand(#broken)]
      else parts[i] = valid[rand(#valid)] end
    end
    return table.concat(parts)
  end

  for _, case in ipairs { { "valid", 0 }, { "sometimes broken", 0.002 } } do
    it("decodes 300 " .. case[1] .. " texts exactly as cjson does", function()
      local seed = 42
      local function rand(a, b) -- a small LCG: the same texts on every run
        seed = (seed * 1103515245 + 12345) % 2147483648
        local x = seed / 2147483648
        if not a then return x end
        if not b then return 1 + math.floor(x * a) end
        return a + math.floor(x * (b - a + 1))
      end
      local valid_texts = 0
      for i = 1, 300 do
        local text = '{"a":"' .. body(rand, case[2]) .. '","i":' .. i .. "}" .. pad
        local ok, want = pcall(cjson.decode, text)
        local got = json.decode(text)
        if ok then
          valid_texts = valid_texts + 1
          assert.is_table(got, text:sub(1, 80))
          assert.equal(want.a, got.a)
          assert.equal(i, got.i)
        else
          assert.is_nil(got)
        end
      end
      -- the generator made both kinds where it should
      if case[2] == 0 then assert.equal(300, valid_texts)
      else assert.is_true(valid_texts > 0 and valid_texts < 300) end
    end)
  end
end)
