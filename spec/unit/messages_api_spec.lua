-- The scripted Messages API's arguments for a tool, made from its input schema and the
-- numbers of the prompt (the demo's default model).
local messages_api = require "claude.testing.messages_api"
local json = require "claude.json"

describe("claude.testing.messages_api.arguments", function()
  local args = messages_api.arguments

  it("gives number properties the prompt's numbers in order (sorted by name)", function()
    local schema = { type = "object", required = { "a", "b" },
      properties = { a = { type = "number" }, b = { type = "number" } } }
    assert.same({ a = 15, b = 27 }, args(schema, "What is 15 + 27?"))
    assert.same({ a = -2.5, b = 1 }, args(schema, "half of -2.5"))
    -- a second tool takes the numbers after those the first one took, else from the start
    assert.same({ a = 1, b = 0 }, args(schema, "What is 15 + 27, and 1 / 0?", 2))
    assert.same({ a = 15, b = 27 }, args(schema, "What is 15 + 27?", 2))
  end)

  it("takes const, default, examples and enums, then the type's plain value", function()
    local schema = { type = "object", required = { "c", "d", "e", "f", "g", "h", "i" },
      properties = {
      c = { const = "x" }, d = { type = "string", default = "dflt" },
      e = { type = "string", examples = { "ex" } }, f = { enum = { "red", "blue" } },
      g = { type = "integer", minimum = 3 }, h = { type = "boolean" },
      i = { type = "array", items = { type = "string" }, minItems = 2 },
    } }
    local out = args(schema, "")
    assert.same({ c = "x", d = "dflt", e = "ex", f = "red", g = 3, h = true,
      i = { "example", "example" } }, out)
    assert.equal('["example","example"]', json.encode(out.i))
  end)

  it("leaves optional properties out unless the prompt has numbers for them", function()
    local schema = { type = "object",
      properties = { n = { type = "integer" }, s = { type = "string" } } }
    assert.same({}, args(schema, "nothing"))
    assert.equal("{}", json.encode(args(schema, "nothing")))
    assert.same({ n = 7 }, args(schema, "seven: 7"))
  end)

  it("nests objects and stops at a depth", function()
    local schema = { type = "object", required = { "p" }, properties = {
      p = { type = "object", required = { "x" }, properties = { x = { type = "integer" } } } } }
    assert.same({ p = { x = 4 } }, args(schema, "4.9"))
    assert.same({}, args(nil, "x"))
  end)

  it("checks its options", function()
    assert.has_error(function() messages_api.start { scenaro = {} } end,
      "unknown field 'scenaro' to 'start' (did you mean 'scenario'?)")
    assert.has_error(function() messages_api.start { scenario = {} } end,
      "bad field 'scenario' to 'start' ({ turns = {...} } expected)")
  end)
end)
