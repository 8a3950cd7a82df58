-- The demo model's arguments for a tool call (claude.testing.tool_arguments): the schema's
-- own values first, then the prompt's, then plausible ones by name, type and format.
local tool_arguments = require "claude.testing.tool_arguments"
local json = require "claude.json"

local function object(required, properties)
  return { type = "object", required = required, properties = properties }
end

describe("claude.testing.tool_arguments", function()
  local args = tool_arguments.arguments

  it("takes enum, default and examples before the prompt", function()
    local schema = object({ "units", "style", "lang", "mood" }, {
      units = { type = "string", enum = { "metric", "imperial" } },
      style = { type = "string", enum = { "plain", "fancy" }, default = "fancy" },
      lang = { type = "string", default = "fr" },
      mood = { type = "string", examples = { "cheerful", "calm" } },
    })
    assert.same({ units = "metric", style = "fancy", lang = "fr", mood = "cheerful" },
      args(schema, "say hi"))
    -- an enum value the prompt names wins, and brings an optional property in
    schema.required = { "style" }
    assert.same({ style = "fancy", units = "imperial" }, args(schema, "in imperial units"))
  end)

  it("takes values from the prompt, matched to the property by name and type", function()
    local weather = object({ "city" }, { city = { type = "string" },
      days = { type = "integer", minimum = 1, maximum = 5 } })
    assert.same({ city = "New York", days = 3 },
      args(weather, "What's the weather in New York for the next 3 days?"))
    -- a number after the property's name, within its bounds
    assert.same({ city = "Lisbon", days = 5 }, args(weather, "weather in Lisbon, days: 9"))
    -- the words after the tool's name, a quoted text
    local echo = object({ "message" }, { message = { type = "string" } })
    assert.same({ message = "hi" }, args(echo, "Echo hi", { tool = "echo" }))
    assert.same({ message = "good morning" }, args(echo, 'Say "good morning" twice'))
    -- formats and names: an address, a URL, a date from the prompt
    local mail = object({ "to", "link", "when" }, { to = { type = "string", format = "email" },
      link = { type = "string" }, when = { type = "string", format = "date" } })
    assert.same({ to = "bob@corp.example", link = "https://x.example/a", when = "2024-03-02" },
      args(mail, "Mail bob@corp.example about https://x.example/a. on 2024-03-02"))
    -- "name is Bob", "limit 5"; the number named is not the next property's too
    local find = object({ "firstName", "count" }, { firstName = { type = "string" },
      count = { type = "integer" }, limit = { type = "integer" } })
    assert.same({ firstName = "Bob", count = 7, limit = 5 },
      args(find, "my name is Bob, limit 5 and 7 more"))
  end)

  it("makes plausible values by name, type and format", function()
    local schema = object({ "city", "userEmail", "firstName", "site", "start", "at", "id",
      "lat", "n", "tags", "ok" }, {
      city = { type = "string" }, userEmail = { type = "string" },
      firstName = { type = "string" }, site = { type = "string", format = "uri" },
      start = { type = "string", format = "date" }, at = { type = "string", format = "date-time" },
      id = { type = "string", format = "uuid" }, lat = { type = "number" },
      n = { type = "integer", minimum = 5, maximum = 8 },
      tags = { type = "array", items = { type = "string" }, minItems = 2 },
      ok = { type = "boolean" },
    })
    local out = args(schema, "do it")
    assert.same({ city = "Paris", userEmail = "ada@example.com", firstName = "Ada",
      site = "https://example.com/", start = "2025-06-01", at = "2025-06-01T09:30:00Z",
      id = "3f1c2a9e-7b4d-4e8a-9c61-2d5f0b8e7a14", lat = 48.8566, n = 5,
      tags = { "demo", "example" }, ok = true }, out)
    assert.equal(out.city, args(schema, "do it").city) -- the same every time
    -- integers stay within their bounds, strings within their lengths
    assert.same({ k = 2, s = "exa" }, args(object({ "k", "s" }, {
      k = { type = "integer", exclusiveMinimum = 1, maximum = 4 },
      s = { type = "string", maxLength = 3 } }), ""))
  end)

  it("always fills required properties, optional ones only from the prompt", function()
    local schema = object({ "city" }, { city = { type = "string" },
      country = { type = "string" }, limit = { type = "integer", default = 10 } })
    assert.same({ city = "Paris" }, args(schema, "weather?"))
    assert.equal('{"city":"Paris"}', json.encode(args(schema, "weather?")))
    -- a value the prompt gives by the property's name beats its default
    assert.same({ city = "Rome", limit = 3 }, args(schema, "weather in Rome, limit 3"))
    assert.same({}, args(nil, "x"))
  end)
end)
