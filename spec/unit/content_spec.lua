local json = require "claude.json"
local content = require "claude.mcp.content"
local tool = require "claude.mcp.tool"

local PNG = "\137PNG\r\n\26\n\0\0\0\rIHDR"

-- What goes over the wire, decoded again (so markers and key order do not matter).
local function wire(v)
  return json.decode(json.encode(v))
end

local function raises(msg, f)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  local where, text = err:match("^(.-:%d+): (.*)$")
  assert.equal(msg, text or err)
  assert.matches("content_spec%.lua", where or "")
end

describe("claude.content", function()
  describe("base64", function()
    local rows = {  -- RFC 4648 test vectors, and lengths around the 12-byte block
      { "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg==" },
      { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
      { "foobarbazqux", "Zm9vYmFyYmF6cXV4" }, { "foobarbazqux1", "Zm9vYmFyYmF6cXV4MQ==" },
      { "foobarbazqux12", "Zm9vYmFyYmF6cXV4MTI=" }, { "\0\255\254", "AP/+" },
    }
    for _, row in ipairs(rows) do
      it(("%q"):format(row[1]), function() assert.equal(row[2], content.base64(row[1])) end)
    end

    it("agrees with a bit-by-bit reference on all byte values", function()
      local B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
      local function ref(s)
        local bits = s:gsub(".", function(c)
          local b, n = {}, c:byte()
          for i = 8, 1, -1 do b[i] = n % 2; n = n // 2 end
          return table.concat(b)
        end)
        local out = (bits .. "00000"):gsub("%d%d%d%d%d%d", function(six)
          local v = tonumber(six, 2)
          return B:sub(v + 1, v + 1)
        end)
        out = out:sub(1, math.ceil(#s * 4 / 3))
        return out .. ("="):rep((4 - #out % 4) % 4)
      end
      local all = {}
      for i = 0, 255 do all[#all + 1] = string.char(i) end
      all = table.concat(all)
      for n = 0, 40 do
        assert.equal(ref(all:sub(1, n)), content.base64(all:sub(1, n)))
      end
      assert.equal(ref(all), content.base64(all))
    end)
  end)

  describe("format_number", function()
    local rows = {
      { 42, "42" }, { 42.0, "42" }, { -7, "-7" }, { 0.0, "0" }, { 3.5, "3.5" },
      { 0.1, "0.1" }, { 0.1 + 0.2, "0.30000000000000004" }, { 1 / 3, "0.3333333333333333" },
      { 1e15, "1000000000000000" }, { 1e300, "1e+300" }, { math.maxinteger, "9223372036854775807" },
      { math.mininteger, "-9223372036854775808" }, { 1 / 0, "inf" }, { -1 / 0, "-inf" },
      { 2.5e-8, "2.5e-08" }, { 0 / 0, "nan" }, { -0.0, "0" }, { 2^63, "9.223372036854776e+18" },
      { 123456789.125, "123456789.125" },
    }
    for _, row in ipairs(rows) do
      it(tostring(row[1]), function() assert.equal(row[2], content.format_number(row[1])) end)
    end
  end)

  describe("constructors", function()
    it("text", function()
      assert.same({ type = "text", text = "hi" }, content.text "hi")
      assert.same({ type = "text", text = "42" }, content.text(42))
      assert.is_true(content.is_content(content.text "x"))
      assert.is_false(content.is_content { type = "text", text = "x" })
    end)

    it("image from raw bytes, sniffing the type", function()
      assert.same({ type = "image", data = content.base64(PNG), mimeType = "image/png" },
        content.image(PNG))
      assert.same({ type = "image", data = "AAE=", mimeType = "image/x-raw" },
        content.image("\0\1", "image/x-raw"))
    end)

    it("image from a table", function()
      assert.same({ type = "image", data = "QUJD", mimeType = "image/gif" },
        content.image { data = "QUJD", mime_type = "image/gif" })
      assert.same({ type = "image", data = "QUJD", mimeType = "image/gif",
        annotations = { priority = 1 } },
        content.image { bytes = "ABC", mime_type = "image/gif", annotations = { priority = 1 } })
    end)

    it("audio", function()
      assert.same({ type = "audio", data = content.base64("OggSxx"), mimeType = "audio/ogg" },
        content.audio "OggSxx")
      assert.same({ type = "audio", data = "AA==", mimeType = "audio/wav" },
        content.audio { data = "AA==", mime_type = "audio/wav" })
    end)

    local sniff = {
      { PNG, "image/png" }, { "\255\216\255\224", "image/jpeg" }, { "GIF89a", "image/gif" },
      { "RIFF\0\0\0\0WEBPVP8", "image/webp" }, { "RIFF\0\0\0\0WAVEfmt", "audio/wav" },
      { "ID3\3", "audio/mpeg" }, { "\255\251\144", "audio/mpeg" }, { "OggS", "audio/ogg" },
      { "fLaC", "audio/flac" }, { "hello", nil },
    }
    for _, row in ipairs(sniff) do
      it(("sniff %q"):format(row[1]), function() assert.equal(row[2], content.sniff(row[1])) end)
    end

    it("resource", function()
      assert.same({ type = "resource", resource = { uri = "mem://a", text = "t",
        mimeType = "text/plain" } },
        content.resource { uri = "mem://a", text = "t", mime_type = "text/plain" })
      assert.same({ type = "resource", resource = { uri = "mem://b", blob = "AAE=" } },
        content.resource { uri = "mem://b", bytes = "\0\1" })
      assert.same({ type = "resource", resource = { uri = "mem://c", blob = "QQ==" } },
        content.resource { uri = "mem://c", blob = "QQ==" })
    end)

    it("resource_link", function()
      assert.same({ type = "resource_link", uri = "file:///a", name = "a", title = "A",
        description = "d", mimeType = "text/plain", size = 3 },
        content.resource_link { uri = "file:///a", name = "a", title = "A", description = "d",
          mime_type = "text/plain", size = 3 })
    end)

    local misuse = {
      { "bad argument #1 to 'text' (string expected, got nil)", function() content.text() end },
      { "bad argument #1 to 'text' (string expected, got table)",
        function() content.text {} end },
      { "bad argument #2 to 'image' (mime type expected (it could not be told from the data))",
        function() content.image "abc" end },
      { "bad argument #2 to 'image' (image/ mime type expected, got 'audio/ogg')",
        function() content.image "OggS" end },
      { "bad argument #1 to 'image' (string or table expected, got number)",
        function() content.image(1) end },
      { "bad argument #2 to 'image' (no second argument with a table)",
        function() content.image({ data = "AA==" }, "image/png") end },
      { "bad field 'data' to 'image' (base64 string expected, got number)",
        function() content.image { data = 1, mime_type = "image/png" } end },
      { "bad field 'bytes' to 'image' (string expected, got nil)",
        function() content.image { mime_type = "image/png" } end },
      { "bad argument #2 to 'image' (mime type expected (it could not be told from the data))",
        function() content.image { data = "AA==" } end },
      { "bad argument #2 to 'audio' (audio/ mime type expected, got 'image/png')",
        function() content.audio(PNG) end },
      { "bad argument #1 to 'resource' (table expected, got string)",
        function() content.resource "x" end },
      { "bad field 'uri' to 'resource' (string expected, got nil)",
        function() content.resource { text = "x" } end },
      { "bad field 'text' to 'resource' (one of text, blob (base64) or bytes (raw) expected)",
        function() content.resource { uri = "a://b" } end },
      { "bad field 'mime_type' to 'resource' (string expected, got number)",
        function() content.resource { uri = "a://b", text = "", mime_type = 1 } end },
      { "bad field 'name' to 'resource_link' (string expected, got nil)",
        function() content.resource_link { uri = "a://b" } end },
    }
    for _, row in ipairs(misuse) do
      it("raises: " .. row[1], function() raises(row[1], row[2]) end)
    end
  end)

  describe("result", function()
    local function text(s) return { content = { { type = "text", text = s } } } end
    local function err(s) return { content = { { type = "text", text = s } }, isError = true } end
    local img = content.image(PNG)
    local rows = {
      { "a string", { true, "hello" }, text "hello" },
      { "an empty string", { true, "" }, text "" },
      { "an integer", { true, 42 }, text "42" },
      { "an integral float", { true, 42.0 }, text "42" },
      { "a float", { true, 0.1 }, text "0.1" },
      { "true", { true, true }, text "true" },
      { "false", { true, false }, text "false" },
      { "json.null", { true, json.null }, text "null" },
      { "nothing", { true }, { content = {} } },
      { "nil, message", { true, nil, "no such city" }, err "no such city" },
      { "nil, error object", { true, nil, setmetatable({}, { __tostring = function()
        return "E!" end }) }, err "E!" },
      { "a raised string loses its position", { false, "calc.lua:12: boom" }, err "boom" },
      { "a raised string without position", { false, "boom" }, err "boom" },
      { "a raised table with message", { false, { message = "bad thing" } }, err "bad thing" },
      { "a raised error object", { false, setmetatable({}, { __tostring = function()
        return "tostring'd" end }) }, err "tostring'd" },
      { "an object", { true, { temp = 21.5, city = "Oslo" } }, {
        content = { { type = "text", text = json.encode { temp = 21.5, city = "Oslo" } } },
        structuredContent = { temp = 21.5, city = "Oslo" } } },
      { "an empty table", { true, {} }, { content = { { type = "text", text = "{}" } },
        structuredContent = {} } },
      { "an array: text only", { true, { 1, 2, 3 } }, text "[1,2,3]" },
      { "a content value", { true, content.text "x" }, text "x" },
      { "a list of content", { true, { content.text "a", img } },
        { content = { { type = "text", text = "a" }, wire(img) } } },
      { "a list mixing content and data", { true, { content.text "a", "b" } },
        { content = { { type = "text", text = '[{"type":"text","text":"a"},"b"]' } } } },
      { "a function", { true, print }, err("the tool returned a function, which is not a valid "
        .. "result") },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local r = content.result(nil, table.unpack(row[2], 1, 3))
        local got = wire(r)
        -- JSON text of an object has no fixed key order: compare it decoded
        local want_text = row[3].content and row[3].content[1] and row[3].content[1].text
        local want_json = type(want_text) == "string" and want_text:match("^[%[{]")
          and json.decode(want_text)
        if type(want_json) == "table" then
          assert.same(want_json, json.decode(got.content[1].text))
          got.content[1].text = want_text
        end
        assert.same(row[3], got)
      end)
    end

    it("an unencodable table is an isError", function()
      local r = content.result(nil, true, { f = print })
      assert.is_true(r.isError)
      assert.matches("^result could not be encoded as JSON: .*function", r.content[1].text)
    end)

    it("keeps {} as {} on the wire and does not touch the returned table", function()
      local t = setmetatable({}, { __index = {} })
      local r = content.result(nil, true, {})
      assert.matches('"structuredContent":{}', json.encode(r))
      content.result(nil, true, t)
      assert.is_table(getmetatable(t).__index)
    end)

    local with = tool.tool { name = "o", output_schema = { n = "integer" }, execute = print }
    local out_rows = {
      { { true, { n = 1 } }, { content = { { type = "text", text = '{"n":1}' } },
        structuredContent = { n = 1 } } },
      { { true, { n = 1.5 } }, err("Output validation error: n: expected integer, got number "
        .. "(keyword /properties/n/type)") },
      { { true, {} },
        err "Output validation error: missing required property 'n' (keyword /required)" },
      { { true, "1" }, err("Output validation error: the tool has an output schema but "
        .. "returned a string") },
      { { true, { content.text "x" } }, err("Output validation error: the tool has an output "
        .. "schema but returned content") },
      { { true, nil, "failed" }, err "failed" },
      { { false, "x.lua:1: raised" }, err "raised" },
    }
    for i, row in ipairs(out_rows) do
      it("output_schema row " .. i, function()
        assert.same(row[2], wire(content.result(with, table.unpack(row[1], 1, 3))))
      end)
    end

    it("error()", function()
      assert.same(err "x", wire(content.error "x"))
    end)
  end)

  describe("read_result", function()
    local res = { mime_type = "text/plain" }
    local rows = {
      { "a string", { true, "hi" }, { contents = { { uri = "u://a", text = "hi",
        mimeType = "text/plain" } } } },
      { "a table with bytes", { true, { bytes = "\0", mime_type = "application/x" } },
        { contents = { { uri = "u://a", blob = "AA==", mimeType = "application/x" } } } },
      { "a list", { true, { "a", { uri = "u://b", text = "b" } } }, { contents = {
        { uri = "u://a", text = "a", mimeType = "text/plain" },
        { uri = "u://b", text = "b", mimeType = "text/plain" } } } },
      { "a content.resource", { true, content.resource { uri = "u://c", text = "c" } },
        { contents = { { uri = "u://c", text = "c" } } } },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        assert.same(row[3], wire(content.read_result(res, "u://a", table.unpack(row[2], 1, 3))))
      end)
    end

    local failures = {
      { { true, nil, "gone" }, "gone" }, { { true }, "resource not found: u://a" },
      { { false, "r.lua:3: broke" }, "broke" }, { { true, 5 }, "read() returned a number" },
      { { true, { mime_type = "x" } },
        "bad field 'text' to 'read' (one of text, blob (base64) or bytes (raw) expected)" },
    }
    for i, row in ipairs(failures) do
      it("failure " .. i, function()
        local r, err, kind = content.read_result(res, "u://a", table.unpack(row[1]))
        assert.is_nil(r)
        assert.equal(row[2], err.message)
        assert.equal("result", kind)
        assert.equal(kind, err.kind)
      end)
    end
  end)

  describe("prompt_result", function()
    local p = { description = "P" }
    local function user(s) return { role = "user", content = { type = "text", text = s } } end
    local rows = {
      { "a string", { true, "hi" }, { description = "P", messages = { user "hi" } } },
      { "a list of strings and messages", { true, { "a", { role = "assistant", content = "b" } } },
        { description = "P", messages = { user "a",
          { role = "assistant", content = { type = "text", text = "b" } } } } },
      { "a content value", { true, content.image(PNG) }, { description = "P", messages = {
        { role = "user", content = wire(content.image(PNG)) } } } },
      { "a full result", { true, { description = "D", messages = { "x" } } },
        { description = "D", messages = { user "x" } } },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        assert.same(row[3], wire(content.prompt_result(p, table.unpack(row[2], 1, 3))))
      end)
    end

    local failures = {
      { { true, nil, "nope" }, "nope" }, { { true }, "the prompt returned nothing" },
      { { false, "p.lua:1: err" }, "err" }, { { true, 1 }, "get() returned a number" },
      { { true, { { role = "system", content = "x" } } },
        "message 1: role must be 'user' or 'assistant'" },
      { { true, { { role = "user", content = 5 } } }, "message 1: bad content (number)" },
      { { true, { messages = "x" } }, "'messages' must be a list" },
    }
    for i, row in ipairs(failures) do
      it("failure " .. i, function()
        local r, err, kind = content.prompt_result(p, table.unpack(row[1]))
        assert.is_nil(r)
        assert.equal(row[2], err.message)
        assert.equal("result", kind)
        assert.equal(kind, err.kind)
      end)
    end
  end)
end)
