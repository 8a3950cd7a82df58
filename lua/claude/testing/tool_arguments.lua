--- A tool call's arguments as a model would write them, from the tool's input schema and the
-- prompt: what the demo's scripted model (claude.testing.messages_api) sends. For each
-- property, in order: the schema's `const`, an `enum` value (the one the prompt names, else
-- the default, else the first); a value the prompt gives by the property's name (`limit 5`,
-- `name is Ada`); its `default`, its first of `examples`; then a value of the prompt matched
-- to the property by type and name (a city after "in", an address, a URL, a date, a quoted
-- text, the words after the tool's name, the prompt's numbers in order); then a plausible
-- value by name, type and format (a `city` is a real city, an
-- `email` an address, an integer within its bounds). Required properties always get one;
-- optional ones only when the prompt gives a value for them. The same input gives the same
-- arguments: no randomness, no clock.
-- @module claude.testing.tool_arguments
local json = require "claude.json"

local M = {}

local MAX_DEPTH = 4

-- ------------------------------------------------------------ what the prompt offers

local function trim(s)
  return (s:gsub("^[%s%p]+", ""):gsub("[%s,;:%.!%?]+$", ""))
end

-- The Lua pattern of `s` as plain text, case-insensitive (`s` is lower case).
local function plain(s)
  return (s:gsub("%p", "%%%0"):gsub("%a", function(c) return "[" .. c .. c:upper() .. "]" end))
end

-- `cityName`, `city_name`, `city-name` -> "city name"
local function words(name)
  return (name:gsub("(%l)(%u)", "%1 %2"):gsub("[_%-%.]+", " "):lower())
end

-- The values a prompt holds, each taken once (`used`).
local function read_prompt(text, tool)
  local p = { text = text, numbers = {}, quoted = {}, emails = {}, urls = {}, dates = {},
    places = {}, used = {} }
  for n in text:gsub("https?://%S+", ""):gsub("[%w%.%-]+@[%w%.%-]+", "")
    :gsub("%d%d%d%d%-%d%d%-%d%d", ""):gmatch("%-?%d+%.?%d*") do
    p.numbers[#p.numbers + 1] = tonumber((n:gsub("%.$", "")))
  end
  for _, q in ipairs { '"([^"]+)"', "“([^”]+)”", "`([^`]+)`", "%f[%w']'([^']+)'%f[^%w]" } do
    for s in text:gmatch(q) do p.quoted[#p.quoted + 1] = s end
  end
  for s in text:gmatch("[%w%.%+_%-]+@[%w%-]+%.[%w%.%-]*%a") do p.emails[#p.emails + 1] = s end
  for s in text:gmatch("https?://[^%s\"'<>]+") do
    p.urls[#p.urls + 1] = (s:gsub("[%.,;:!%?%)]+$", ""))
  end
  for s in text:gmatch("%d%d%d%d%-%d%d%-%d%d") do p.dates[#p.dates + 1] = s end
  -- a place: capitalised words after "in", "at", "for", "to", "from", "near" (New York)
  local found, padded = {}, " " .. text
  for _, prep in ipairs { "in", "at", "for", "to", "from", "near" } do
    for at in padded:gmatch("%s" .. prep .. "%s+()%u") do
      local place, after = padded:match("^(%u[%a%-]*)()", at)
      for _ = 1, 3 do
        local w, nxt = padded:match("^ (%u[%a%-]*)()", after)
        if not w then break end
        place, after = place .. " " .. w, nxt
      end
      found[#found + 1] = { at = at, place = place }
    end
  end
  table.sort(found, function(a, b) return a.at < b.at end)
  for i, f in ipairs(found) do p.places[i] = f.place end
  -- the words after the tool's name ("Echo hi" -> "hi"), for the first text it takes
  if tool then
    local name = words(tool)
    local after = text:match(plain(name) .. "%s+(.+)$")
      or text:match(plain((name:gsub(" ", "-"))) .. "%s+(.+)$")
    if after then
      after = trim(after:gsub("^[Tt]he%s+", ""):gsub("^[Aa]n?%s+", ""))
      if after ~= "" then p.after_name = after end
    end
  end
  return p
end

local function take(p, list)
  for _, v in ipairs(list) do
    if not p.used[v] then
      p.used[v] = true
      return v
    end
  end
end

-- The value right after the property's name ("limit 5", "name: Ada", "units = metric"), or
-- a number right before it ("5 results" for `results`).
local function named_as(p, spelled, numeric)
  local pat = "%f[%w]" .. plain(spelled) .. "s?%f[^%w]"
  local v = p.text:match(pat .. "%s*[:=]%s*\"([^\"]+)\"")
    or p.text:match(pat .. "%s*[:=]%s*([^%s,;]+)")
    or p.text:match(pat .. "%s+is%s+([^%s,;]+)")
  if numeric then
    local number = "(%-?%d+%.?%d*)"
    v = tonumber(v) or tonumber(p.text:match(pat .. "%s+of%s+" .. number)
      or p.text:match(pat .. "%s+" .. number) or p.text:match(number .. "%s+" .. pat))
  elseif v then
    v = trim(v)
  end
  return v ~= "" and v or nil
end

local function named(p, name, numeric)
  local spelled = words(name)
  local v = named_as(p, spelled, numeric)
  local last = spelled:match(" (%S+)$")
  if v == nil and last then v = named_as(p, last, numeric) end
  return v
end

-- ------------------------------------------------------------ plausible values

-- By a word of the property's name: values, the first used first (an array takes more).
local BY_NAME = {
  city = { "Paris", "Tokyo", "Lisbon" }, town = { "Paris", "Tokyo" },
  location = { "Paris", "Tokyo" }, place = { "Paris", "Tokyo" },
  country = { "France", "Japan" }, region = { "Europe", "Asia" },
  address = { "10 Downing Street, London" }, street = { "10 Downing Street" },
  email = { "ada@example.com", "alan@example.com" }, mail = { "ada@example.com" },
  url = { "https://example.com/" }, uri = { "https://example.com/" },
  link = { "https://example.com/" }, website = { "https://example.com/" },
  domain = { "example.com" }, host = { "example.com" }, hostname = { "example.com" },
  ip = { "192.0.2.1" },
  name = { "Ada Lovelace", "Alan Turing" }, ["first name"] = { "Ada" },
  ["last name"] = { "Lovelace" }, ["user name"] = { "ada" }, ["user id"] = { "42" },
  username = { "ada" }, user = { "ada" }, author = { "Ada Lovelace" },
  phone = { "+1 555 0100" }, language = { "en" }, lang = { "en" }, locale = { "en-US" },
  currency = { "EUR", "USD" }, timezone = { "Europe/Paris" }, tz = { "Europe/Paris" },
  color = { "blue", "green" }, colour = { "blue", "green" },
  path = { "README.md" }, file = { "README.md" }, filename = { "README.md" },
  dir = { "." }, directory = { "." }, folder = { "." },
  title = { "Hello" }, subject = { "Hello" }, tag = { "demo", "example" },
  query = { "lua" }, search = { "lua" }, q = { "lua" }, keyword = { "lua" }, topic = { "Lua" },
  message = { "Hello!" }, text = { "Hello!" }, content = { "Hello!" }, body = { "Hello!" },
  comment = { "Looks good." }, description = { "An example." }, note = { "An example." },
  code = { "print('hello')" }, command = { "echo hello" }, id = { "1" }, key = { "example" },
  uuid = { "3f1c2a9e-7b4d-4e8a-9c61-2d5f0b8e7a14" }, date = { "2025-06-01" },
  time = { "09:30:00" }, status = { "active" }, category = { "general" }, type = { "default" },
  format = { "json" }, unit = { "celsius" }, units = { "metric" }, mode = { "default" },
}

local BY_FORMAT = {
  email = "ada@example.com", ["idn-email"] = "ada@example.com",
  uri = "https://example.com/", url = "https://example.com/", iri = "https://example.com/",
  ["uri-reference"] = "https://example.com/", ["iri-reference"] = "https://example.com/",
  date = "2025-06-01", ["date-time"] = "2025-06-01T09:30:00Z", time = "09:30:00Z",
  duration = "PT1H", uuid = "3f1c2a9e-7b4d-4e8a-9c61-2d5f0b8e7a14", hostname = "example.com",
  ["idn-hostname"] = "example.com", ipv4 = "192.0.2.1", ipv6 = "2001:db8::1",
  regex = ".*", ["json-pointer"] = "/", ["uri-template"] = "https://example.com/{id}",
}

local NUMBER_BY_NAME = {
  latitude = 48.8566, lat = 48.8566, longitude = 2.3522, lon = 2.3522, lng = 2.3522,
  temperature = 21.5, price = 9.99, amount = 10, age = 36, year = 2025, month = 6, day = 1,
  port = 8080, count = 3, limit = 10, max = 10, n = 3, page = 1, size = 10, days = 7,
  hours = 1, minutes = 5, seconds = 30, timeout = 30, quantity = 2, rating = 4, score = 80,
  percent = 50, percentage = 50, width = 800, height = 600, steps = 5, duration = 10,
}

-- Words that say less about a value than the words beside them (`cityName` is a city,
-- `userEmail` an address).
local WEAK = { name = true, id = true, key = true, type = true, text = true, value = true,
  code = true, number = true, address = true, string = true, mode = true, format = true,
  status = true, data = true, info = true }

-- What the table holds for `name`: for all its words (`first name`), else for its last word
-- that says most (a plural as its singular).
local function by_words(t, name)
  local all = words(name)
  if t[all] ~= nil then return t[all] end
  local list = {}
  for w in all:gmatch("%S+") do list[#list + 1] = w end
  for pass = 1, 2 do
    for i = #list, 1, -1 do
      local w = list[i]
      if (pass == 2) == (WEAK[w] == true) then
        if t[w] ~= nil then return t[w] end
        local singular = w:match("^(.-)s$")
        if singular and t[singular] ~= nil then return t[singular] end
      end
    end
  end
end

-- Which of the prompt's lists a string property takes from, by format, then by name.
local KIND_OF_FORMAT = { email = "emails", ["idn-email"] = "emails", uri = "urls", url = "urls",
  iri = "urls", ["uri-reference"] = "urls", date = "dates" }
local KIND_OF_WORD = { email = "emails", mail = "emails", url = "urls", uri = "urls",
  link = "urls", website = "urls", href = "urls", date = "dates", city = "places",
  town = "places", location = "places", place = "places", country = "places",
  destination = "places", origin = "places" }

local function fit_length(s, schema)
  local min, max = tonumber(schema.minLength), tonumber(schema.maxLength)
  if max and utf8.len(s) and utf8.len(s) > max then s = s:sub(1, utf8.offset(s, max + 1) - 1) end
  if min and #s < min then s = s .. string.rep("x", min - #s) end
  return s
end

-- ------------------------------------------------------------ a value per schema

local function clamp(n, schema, integer)
  local min = tonumber(schema.minimum)
  local max = tonumber(schema.maximum)
  local xmin, xmax = tonumber(schema.exclusiveMinimum), tonumber(schema.exclusiveMaximum)
  local step = integer and 1 or 0
  if xmin and n <= xmin then n = xmin + (step > 0 and step or 1) end
  if xmax and n >= xmax then n = xmax - (step > 0 and step or 1) end
  if min and n < min then n = min end
  if max and n > max then n = max end
  local multiple = tonumber(schema.multipleOf)
  if multiple and multiple > 0 then n = math.ceil(n / multiple) * multiple end
  if integer then n = math.tointeger(n) or math.floor(n) end
  return n
end

-- The type a schema names (a `["string", "null"]` union is its first that is not null).
local function type_of(schema)
  local t = schema.type
  if type(t) == "table" then t = t[1] == "null" and t[2] or t[1] end
  if t == nil then
    if schema.properties then return "object" end
    if schema.items then return "array" end
  end
  return t
end

local sample

-- A value the schema itself gives, else nil. An enum value the prompt names wins.
local function given(schema, p)
  if schema.const ~= nil then return schema.const end
  local enum = schema.enum
  if type(enum) == "table" and enum[1] ~= nil then
    for _, v in ipairs(enum) do
      if type(v) == "string" and #v > 1 and p.text:lower():find(v:lower(), 1, true) then
        return v, true
      end
    end
    for _, v in ipairs(enum) do if v == schema.default then return v end end
    return enum[1]
  end
  if schema.default ~= nil then return schema.default end
  local examples = schema.examples
  if type(examples) == "table" and examples[1] ~= nil then return examples[1] end
end

-- A value of the prompt for a property (nil: the prompt has none for it).
local function from_prompt(schema, name, p, t)
  if t == "integer" or t == "number" then
    local n = table.remove(p.numbers, 1)
    return n and clamp(n, schema, t == "integer")
  elseif t == "string" then
    local kind = KIND_OF_FORMAT[schema.format] or (name and by_words(KIND_OF_WORD, name))
    if kind then return take(p, p[kind]) end
    if schema.format then return nil end
    local v = take(p, p.quoted)
    if v then return v end
    if p.after_name and not p.used[p.after_name] then
      p.used[p.after_name] = true
      return p.after_name
    end
  end
end

-- A plausible value by type, name and format.
local function plausible(schema, name, t, index)
  if t == "integer" or t == "number" then
    local n = name and by_words(NUMBER_BY_NAME, name)
    if n == nil then
      n = tonumber(schema.minimum) or (tonumber(schema.exclusiveMinimum) or 0) + 1
    end
    return clamp(n, schema, t == "integer")
  elseif t == "boolean" then
    return true
  elseif t == "null" then
    return json.null
  end
  local v = BY_FORMAT[schema.format]
  if v == nil then
    local list = name and by_words(BY_NAME, name)
    v = list and list[(index - 1) % #list + 1] or "example"
  end
  return fit_length(v, schema)
end

local function object(schema, p, depth)
  local out = json.object {}
  if depth > MAX_DEPTH or type(schema.properties) ~= "table" then return out end
  local required = {}
  for _, k in ipairs(type(schema.required) == "table" and schema.required or {}) do
    required[k] = true
  end
  local keys = {}
  for k in pairs(schema.properties) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) -- required first (they take the prompt's values first)
    if required[a] ~= required[b] then return required[a] == true end
    return a < b
  end)
  -- values the prompt gives by the property's name ("limit 5") first: they beat a default,
  -- and their numbers are not the next property's
  local by_name = {}
  for _, k in ipairs(keys) do
    local s = schema.properties[k]
    local t = type(s) == "table" and s.const == nil and s.enum == nil and type_of(s)
    local numeric = t == "integer" or t == "number"
    local v = (numeric or t == "string") and named(p, k, numeric)
    if v and numeric then
      by_name[k] = clamp(v, s, t == "integer")
      for i, m in ipairs(p.numbers) do
        if m == v then table.remove(p.numbers, i) break end
      end
    elseif v then
      by_name[k] = fit_length(v, s)
    end
  end
  for _, k in ipairs(keys) do
    if by_name[k] ~= nil then
      out[k] = by_name[k]
    else
      local v, from_the_prompt = sample(schema.properties[k], p, depth + 1, k, 1,
        not required[k])
      if required[k] or from_the_prompt then out[k] = v end
    end
  end
  return out
end

-- A value for `schema` (the property `name`, the `index`th item of an array), and whether
-- it came from the prompt. `optional`: only a value of the prompt is wanted.
function sample(schema, p, depth, name, index, optional)
  if type(schema) ~= "table" then return "example" end
  local v, named_in_prompt = given(schema, p)
  if v ~= nil then return v, named_in_prompt end
  local alt = schema.anyOf or schema.oneOf
  if type(alt) == "table" and type(alt[1]) == "table" then
    for _, a in ipairs(alt) do -- the first that is not null
      if type_of(a) ~= "null" then return sample(a, p, depth, name, index, optional) end
    end
  end
  local t = type_of(schema)
  if t == "object" then
    return object(schema, p, depth)
  elseif t == "array" then
    local out = json.array {}
    if depth > MAX_DEPTH then return out end
    local item_name = name and (name:match("^(.-)s$") or name)
    local any = false
    for i = 1, math.max(1, tonumber(schema.minItems) or 1) do
      local item, from = sample(schema.items, p, depth + 1, item_name, i, optional)
      out[i] = item
      any = any or from
    end
    return out, any
  end
  v = from_prompt(schema, name, p, t)
  if v ~= nil then return v, true end
  if optional then return nil end
  return plausible(schema, name, t, index)
end

--- Arguments for a tool from its input schema and a prompt.
-- @tparam table schema a JSON Schema of type object
-- @tparam[opt] string text the prompt
-- @tparam[opt] table opts `{ skip = 0 (numbers of the prompt taken by calls before; when
--   fewer are left than the schema has number properties, they are taken from the start
--   again), tool = nil (the tool's name: the words after it in the prompt are a value) }`
-- @treturn table
function M.arguments(schema, text, opts)
  opts = opts or {}
  local p = read_prompt(tostring(text or ""), opts.tool)
  local wanted = 0
  for _, s in pairs(type(schema) == "table" and type(schema.properties) == "table"
    and schema.properties or {}) do
    local t = type(s) == "table" and type_of(s)
    if t == "number" or t == "integer" then wanted = wanted + 1 end
  end
  local skip = opts.skip or 0
  if #p.numbers - skip < wanted then skip = 0 end
  for _ = 1, skip do table.remove(p.numbers, 1) end
  if type(schema) ~= "table" then return json.object {} end
  return object(schema, p, 0)
end

return M
