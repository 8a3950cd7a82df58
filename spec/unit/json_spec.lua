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
    assert.matches("nesting deeper than 40000 (a cycle?) at $.self.self.self", err, 1, true)
  end)

  it("encodes 40000 levels, twice what decodes (a decoded value inside envelopes)", function()
    local v = {}
    for _ = 1, 39999 do v = { v } end
    local text = json.encode(v)
    assert.equal(string.rep("[", 39999) .. "{}" .. string.rep("]", 39999), text)
    assert.has_error(function() json.encode({ v }) end)
  end)

  it("names the path of a bad value deep inside, cut short when long", function()
    local v = { f = print }
    for i = 1, 100 do v = i % 2 == 0 and { v } or { k = v } end
    local ok, err = pcall(json.encode, v)
    assert.is_false(ok)
    assert.matches("^json: cannot encode a function at %$%[1%]%.k%[1%]%.k", err)
    assert.matches("%.%.%.$", err)
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

describe("claude.json decoding", function()
  before_each(harness.before)
  after_each(harness.after)

  local function fails(text, message)
    local v, err = json.decode(text)
    assert.is_nil(v)
    assert.equal("invalid JSON: " .. message, err)
  end

  it("names what is wrong, the byte, and what it found", function()
    fails('{"a" 1}', "expected ':' at byte 6 (found '1')")
    fails("[1,]", "expected a value at byte 4 (found ']')")
    fails('{"a":1,}', "expected a string key at byte 8 (found '}')")
    fails("[1 2]", "expected ',' or ']' at byte 4 (found '2')")
    fails('{"a":1 "b"}', "expected ',' or '}' at byte 8 (found '\"')")
    fails('{"a":', "expected a value at byte 6 (the text ends)")
    fails("", "expected a value at byte 1 (the text ends)")
    fails("  ", "expected a value at byte 3 (the text ends)")
    fails("[1]]", "unexpected text after the value at byte 4 (found ']')")
    fails('"abc', "unterminated string at byte 1 (found '\"')")
    fails('["a\\', "unterminated string at byte 2 (found '\"')")
    fails('"a\tb"', "control character in string at byte 3 (found byte 0x09)")
    fails('"a\\qb"', "invalid escape at byte 3 (found '\\')")
    fails('"\\u12x4"', "invalid \\u escape at byte 2 (found '\\')")
    fails("01", "leading zero in number at byte 1 (found '0')")
    fails("-", "invalid number at byte 1 (found '-')")
    fails("1.", "invalid number at byte 1 (found '1')")
    fails("1e+", "invalid number at byte 1 (found '1')")
    fails("+1", "expected a value at byte 1 (found '+')")
    fails("nul", "expected a value at byte 1 (found 'n')")
    fails("[\0]", "expected a value at byte 2 (found byte 0x00)")
  end)

  it("decodes every escape, and a lone surrogate as U+FFFD", function()
    assert.equal('"\\/\b\f\n\r\tA', json.decode([["\"\\\/\b\f\n\r\t\u0041"]]))
    assert.equal("é中\0😀", json.decode([["\u00e9\u4e2d\u0000\ud83d\ude00"]]))
    -- JavaScript writes these for a string cut between the halves of a pair
    assert.equal("x\239\191\189y", json.decode([["x\ud83dy"]]))
    assert.equal("\239\191\189", json.decode([["\ude00"]]))
    assert.equal("\239\191\189\239\191\189", json.decode([["\ud83d\ud83d"]]))
  end)

  it("refuses invalid UTF-8 in strings and keys (RFC 8259 8.1), naming the byte", function()
    local bad = "invalid UTF-8 in string at byte "
    fails('"a\255b"', bad .. "3 (found byte 0xFF)")
    fails('["ok","\128"]', bad .. "8 (found byte 0x80)")            -- a lone continuation
    fails('"\192\128"', bad .. "2 (found byte 0xC0)")              -- overlong NUL
    fails('"\224\128\128"', bad .. "2 (found byte 0xE0)")         -- overlong
    fails('"\237\160\128"', bad .. "2 (found byte 0xED)")         -- a surrogate, U+D800
    fails('"\244\144\128\128"', bad .. "2 (found byte 0xF4)")    -- past U+10FFFF
    fails('"\245\128\128\128"', bad .. "2 (found byte 0xF5)")
    fails('"x\226\130"', bad .. "3 (found byte 0xE2)")             -- cut before the quote
    fails('"\226\130\\n"', bad .. "2 (found byte 0xE2)")        -- cut by an escape
    fails('"\\n\255"', bad .. "4 (found byte 0xFF)")             -- after an escape
    fails('{"k\255":1}', bad .. "4 (found byte 0xFF)")              -- in a key
    fails('"' .. string.rep("a", 40) .. "\195" .. '"', bad .. "42 (found byte 0xC3)")
    for _, ok in ipairs { "é", "中", "😀", "\239\191\191", "\244\143\191\191",
      "\237\159\191", "\238\128\128", string.rep("é中😀", 100) .. "\\n" .. "é" } do
      assert.is_string(json.decode('"' .. ok .. '"'), ok)
    end
  end)

  it("writes invalid UTF-8 in a Lua string as U+FFFD, one per maximal subpart", function()
    local R = "\u{FFFD}"
    for input, want in pairs {
      ["a\255b"] = "a" .. R .. "b", ["\226\130"] = R, ["\226\130x"] = R .. "x",
      ["\237\160\128"] = R .. R .. R, ["\192\128"] = R .. R, ["\240\159\152"] = R,
      ["\244\144\128\128"] = R .. R .. R .. R, ["\128\128"] = R .. R,
      ["é中😀"] = "é中😀", ["\239\191\191\244\143\191\191"] = "\239\191\191\244\143\191\191",
    } do
      assert.equal('"' .. want .. '"', json.encode(input), input)
      assert.equal(want, json.decode(json.encode(input)))
    end
    assert.equal('{"k' .. R .. '":"v' .. R .. '"}', json.encode { ["k\255"] = "v\255" })
    local long = string.rep("x", 1000) .. "\255" .. string.rep("y", 1000)
    assert.equal('"' .. string.rep("x", 1000) .. R .. string.rep("y", 1000) .. '"',
      json.encode(long))
  end)

  it("keeps integers exact as far as Lua integers go", function()
    assert.equal(math.maxinteger, json.decode("9223372036854775807"))
    assert.equal(math.mininteger, json.decode("-9223372036854775808"))
    assert.equal("float", math.type(json.decode("9223372036854775808")))
    assert.equal("integer", math.type(json.decode("-0")))
    assert.equal("integer", math.type(json.decode("1.5e3")))
    assert.equal("float", math.type(json.decode("1e300")))
    assert.equal(math.huge, json.decode("1e400"))
    assert.equal(1.5, json.decode("1.5" .. string.rep("0", 300)))   -- long numbers too
    assert.equal(1e300, json.decode("1" .. string.rep("0", 300)))
  end)

  it("keeps the last value of a key given twice", function()
    assert.equal(2, json.decode('{"a":1,"a":2}').a)
  end)

  it("fills arrays and objects larger than one chunk of the stack", function()
    for _, n in ipairs { 63, 64, 65, 128, 129, 5000 } do
      local list, obj = {}, {}
      for i = 1, n do
        list[i] = { i, "v" .. i }
        obj["k" .. i] = i
      end
      local back = assert(json.decode(json.encode(list)))
      assert.equal(n, #back)
      for i = 1, n do assert.same({ i, "v" .. i }, back[i]) end
      local oback = assert(json.decode(json.encode(obj)))
      for i = 1, n do assert.equal(i, oback["k" .. i]) end
      assert.equal(n, #json.decode(" \n" .. json.encode(list) .. " \r\n"))
    end
  end)

  it("nests 20000 levels, counted from the outermost value, and refuses 20001", function()
    local deep = assert(json.decode(string.rep("[", 20000) .. string.rep("]", 20000)))
    local depth = 0
    while deep do depth, deep = depth + 1, deep[1] end
    assert.equal(20000, depth)
    assert.is_table(json.decode(string.rep('{"a":', 19999) .. "{}" .. string.rep("}", 19999)))
    fails(string.rep("[", 20001) .. string.rep("]", 20001),
      "nested deeper than 20000 levels at byte 20001 (found '[')")
    fails(string.rep('{"a":', 20000) .. "{}" .. string.rep("}", 20000),
      "nested deeper than 20000 levels at byte 100001 (found '{')")
  end)

  it("keeps every element of arrays that hold values when a deeper container opens", function()
    -- [1,...,70,[1,...,70,[...]]] 3000 levels: past a few dozen levels an array moves what
    -- it holds into its table before the nested one opens
    local items = {}
    for i = 1, 70 do items[i] = tostring(i) end
    local head = "[" .. table.concat(items, ",") .. ","
    local text = string.rep(head, 3000) .. '{"end":true}' .. string.rep("]", 3000)
    local v = assert(json.decode(text))
    for _ = 1, 3000 do
      assert.equal(71, #v)
      for i = 1, 70 do assert.equal(i, v[i]) end
      v = v[71]
    end
    assert.same({ ["end"] = true }, v)
  end)

  it("takes a tool input nested 1000 deep inside a control request, and writes it back", function()
    local input = string.rep('{"x":[', 500) .. "1" .. string.rep("]}", 500)
    local line = '{"type":"control_request","request_id":"r1","request":{"subtype":"mcp_message",'
      .. '"server_name":"s","message":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":'
      .. '{"name":"t","arguments":' .. input .. "}}}}"
    local message = assert(json.decode(line))
    local again = assert(json.decode(json.encode(message)))
    assert.same(message, again)
    local x = again.request.message.params.arguments
    for _ = 1, 500 do x = x.x[1] end
    assert.equal(1, x)
  end)

  it("decodes and encodes at the limit inside a coroutine (no C stack per level)", function()
    local text = string.rep("[", 20000) .. string.rep("]", 20000)
    local co = coroutine.wrap(function()
      local v = assert(json.decode(text))
      return json.encode(v)
    end)
    assert.equal(text, co())
  end)

  it("decodes long strings, with and without escapes", function()
    local long = string.rep("abcdefg", 3000)
    assert.equal(long, json.decode('"' .. long .. '"'))
    assert.equal(long .. "\n" .. long, json.decode('"' .. long .. "\\n" .. long .. '"'))
    local key = string.rep("k", 2000)
    assert.equal(1, json.decode('{"' .. key .. '":1}')[key])
  end)

  it("decodes escaped strings whose text outgrows the first buffer at any point", function()
    for n = 500, 520 do
      for _, esc in ipairs { "\\n", "\\u00e9", "\\ud83d\\ude00", "\\\\" } do
        local raw = string.rep("a", n) .. esc .. string.rep("b", 40)
        local want = string.rep("a", n) .. json.decode('"' .. esc .. '"') .. string.rep("b", 40)
        assert.equal(want, json.decode('"' .. raw .. '"'))
        assert.equal(want, json.decode('{"k":"' .. raw .. '","x":[1,"' .. raw .. '"]}').x[2])
      end
    end
  end)

end)

describe("claude.json decoding against cjson, on generated texts", function()
  local cjson = require("cjson").new()
  cjson.decode_invalid_numbers(false) -- no hex, NaN or Infinity: not JSON
  before_each(harness.before)
  after_each(harness.after)

  local seed = 42
  local function rand(a, b) -- a small LCG: the same texts on every run
    seed = (seed * 1103515245 + 12345) % 2147483648
    local x = seed / 2147483648
    if not a then return x end
    if not b then return 1 + math.floor(x * a) end
    return a + math.floor(x * (b - a + 1))
  end

  local pieces = { "\\n", "\\t", '\\"', "\\\\", "\\/", "\\u00e9", "\\ud83d\\ude00", "\\u0041",
    "x", "abcdefgh", "é", "日本", " " }
  local function string_text(long)
    local parts = {}
    for i = 1, (long and rand(150, 900) or rand(0, 6)) do parts[i] = pieces[rand(#pieces)] end
    return '"' .. table.concat(parts) .. '"'
  end
  local numbers = { "0", "-0", "7", "-12", "3.25", "1e3", "-2.5E-3", "123456789012345",
    "9007199254740992", "0.1" }
  local ws = { "", "", "", " ", "\n  ", "\t", "\r\n" }

  local function value(depth)
    local r = rand()
    if depth > 4 or r < 0.45 then
      local k = rand(5)
      if k == 1 then return string_text(rand() < 0.1)
      elseif k == 2 then return numbers[rand(#numbers)]
      elseif k == 3 then return ({ "true", "false", "null" })[rand(3)]
      else return string_text(false) end
    end
    local n, parts = rand(0, depth < 2 and rand() < 0.1 and 150 or 6), {}
    if r < 0.7 then
      for i = 1, n do parts[i] = ws[rand(#ws)] .. value(depth + 1) .. ws[rand(#ws)] end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    for i = 1, n do
      parts[i] = ws[rand(#ws)] .. string_text(false) .. ws[rand(#ws)] .. ":" .. ws[rand(#ws)]
        .. value(depth + 1)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end

  it("decodes 500 valid texts to the values cjson gives", function()
    for _ = 1, 500 do
      local text = value(0)
      local got, err = json.decode(text)
      assert.is_nil(err, text:sub(1, 200))
      assert.same(cjson.decode(text), got, text:sub(1, 200))
    end
  end)

  it("refuses what cjson refuses, in 2000 damaged texts", function()
    local refused = 0
    for _ = 1, 2000 do
      local text = value(1)
      local at = rand(#text)
      local cut = rand() < 0.5 and text:sub(1, at - 1) .. text:sub(at + 1)
        or text:sub(1, at) .. ({ ",", "]", "}", ":", '"', "\\", "x", "[", "{" })[rand(9)]
          .. text:sub(at + 1)
      local ok, want = pcall(cjson.decode, cut)
      local got, err = json.decode(cut)
      if ok and got == nil and err:find("UTF-8", 1, true) then
        -- cjson takes invalid UTF-8 (a byte of "é" cut out), which RFC 8259 refuses
        assert.matches("^invalid JSON: invalid UTF%-8 in string at", err)
      elseif ok and got == nil then -- cjson takes numbers RFC 8259 refuses: 007, 1.
        assert.matches("^invalid JSON: [a-z ]*number at", err)
      elseif ok then
        assert.same(want, got, cut:sub(1, 200))
      elseif got ~= nil then -- the one text cjson refuses and we take: a lone surrogate
        assert.matches("invalid unicode escape", want, 1, true)
      else
        refused = refused + 1
        assert.matches("^invalid JSON: .* at byte %d+ %(", err)
      end
    end
    assert.is_true(refused > 1000)
  end)

  it("never raises on 20000 mutated texts, and what it takes survives a round trip", function()
    local samples = {
      '{"type":"assistant","message":{"content":[{"type":"text","text":"hi\\n\\u00e9"}]}}',
      '[1,2.5,-3e10,true,false,null,"x",[],{},[[[]]],{"a":{"b":[1,{"d":null}]}}]',
      '{"a":"' .. string.rep("x", 100) .. '\\"' .. string.rep("y", 50) .. '"}',
      '"\\ud83d\\ude00"', "12345678901234567890", '{"k":[' .. string.rep("1,", 200) .. "1]}",
    }
    local bytes = { "{", "}", "[", "]", ",", ":", '"', "\\", "u", "d", "8", "e", "-", ".", " ",
      "\0", "\1", "\255", "n", "1" }
    for _ = 1, 20000 do
      local text = samples[rand(#samples)]
      for _ = 1, rand(4) do
        local at, r = rand(0, #text), rand(4)
        if r == 1 then text = text:sub(1, at) .. bytes[rand(#bytes)] .. text:sub(at + 1)
        elseif r == 2 then text = text:sub(1, at) .. text:sub(at + 2)
        elseif r == 3 then text = text:sub(1, at)
        else text = text:sub(at + 1) end
      end
      local v, err = json.decode(text)
      if v == nil then
        assert.matches("^invalid JSON: .* at byte %d+ %(", err)
      else
        local ok, again = pcall(json.encode, v)
        if ok then assert.same(v, json.decode(again)) else assert.matches("infinity", again) end
      end
    end
  end)
end)

describe("core.json_peek_ids", function()
  local core = require "claude.core"
  local deep = string.rep("[", 30000) .. string.rep("]", 30000)

  -- { description, line, request_id, id, type }
  local rows = {
    { "a control request too deep to decode",
      '{"type":"control_request","request_id":"req_1","request":{"x":' .. deep .. "}}",
      "req_1", nil, "control_request" },
    { "a request id after the deep part", '{"type":"control_request","request":' .. deep
      .. ',"request_id":"req_2"}', "req_2", nil, "control_request" },
    { "a JSON-RPC request cut short",
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":', nil, 7, nil },
    { "a string id", '{"id":"abc","params":[1,2', nil, "abc", nil },
    { "an escaped request id", '{"request_id":"a\\"b\\u00e9","x":\\z}', 'a"b\u{e9}', nil, nil },
    { "a control response's nested request id", '{"type":"control_response","response":'
      .. '{"subtype":"success","request_id":"req_3","response":' .. deep .. "}}",
      "req_3", nil, "control_response" },
    { "a control response cut inside", '{"type":"control_response","response":'
      .. '{"request_id":"r4","response":{"a":[1,', "r4", nil, "control_response" },
    { "ids that are not ids", '{"request_id":5,"id":1.5,"type":{}}', nil, nil, nil },
    { "an id of 1e400", '{"id":1e400}', nil, nil, nil },
    { "the last of duplicates, as decoding", '{"id":1,"id":2,"x":}', nil, 2, nil },
    { "nothing after a bad key", '{"a":1,b:2,"request_id":"r"}', nil, nil, nil },
    { "an id inside a nested object is not the top-level one",
      '{"x":{"id":1,"request_id":"r"}', nil, nil, nil },
    { "a string with brackets inside", '{"x":"{[\\"","id":9,"y":[', nil, 9, nil },
    { "not an object", "[1,2", nil, nil, nil },
    { "empty", "", nil, nil, nil },
    { "an unterminated key", '{"request_id', nil, nil, nil },
    { "a request id whose string never ends", '{"request_id":"abc', nil, nil, nil },
  }
  for _, row in ipairs(rows) do
    it(row[1], function()
      local request_id, id, kind = core.json_peek_ids(row[2])
      assert.equal(row[3], request_id)
      assert.equal(row[4], id)
      assert.equal(row[5], kind)
      if type(id) == "number" then assert.equal("integer", math.type(id)) end
    end)
  end

  it("agrees with the decoder on lines that decode", function()
    local line = '{"type":"control_request","request_id":"q","id":12,"request":{"id":3}}'
    local m = assert(json.decode(line))
    assert.same({ m.request_id, m.id, m.type, false }, { core.json_peek_ids(line) })
  end)

  it("says whether a top-level method was seen: a JSON-RPC request, not an answer", function()
    local function method(line) return select(4, core.json_peek_ids(line)) end
    assert.is_true(method('{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage",'
      .. '"params":{"x":"\255"}}'))
    assert.is_true(method('{"id":3,"method":"x\255"}'))   -- whatever its value
    assert.is_false(method('{"jsonrpc":"2.0","id":3,"result":{"text":"\255"}}'))
    assert.is_false(method('{"id":3,"result":{"method":"nested"},"x":"\255"}'))
    assert.is_false(method("not json"))
  end)

  it("raises for a line that is not a string", function()
    assert.has_error(function() core.json_peek_ids({}) end)
  end)

  it("never raises on mutated lines", function()
    local line = '{"type":"control_request","request_id":"r\\u00e9","request":{"a":[1,"x\\"y",{}]}}'
    for _ = 1, 5000 do
      local at = math.random(0, #line)
      local text = line:sub(1, at) .. string.char(math.random(0, 255)) .. line:sub(at + 2)
      local r, i, t = core.json_peek_ids(text)
      assert.is_true(r == nil or type(r) == "string")
      assert.is_true(i == nil or math.type(i) == "integer" or type(i) == "string")
      assert.is_true(t == nil or type(t) == "string")
    end
  end)
end)
