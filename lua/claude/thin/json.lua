--- JSON in plain Lua 5.1 (LuaJIT, Neovim) for the thin client, which cannot load
-- claudelua's own codec (C, Lua 5.4). It also runs on Lua 5.2-5.4.
--
-- `null` decodes to `json.null`; an empty table encodes as `{}` unless it is `json.array()`'s;
-- a table whose keys are 1..n encodes as an array.
-- @module claude.thin.json
local M = {}

local byte, char, find, format, sub = string.byte, string.char, string.find, string.format,
  string.sub
local concat = table.concat
local floor, huge = math.floor, math.huge

M.null = setmetatable({}, { __tostring = function() return "json.null" end })

local ARRAY = setmetatable({}, { __mode = "k" })

--- Marks `t` (default a new table) as an array, so that it encodes as `[]` when empty.
function M.array(t)
  t = t or {}
  ARRAY[t] = true
  return t
end

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function escape(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESCAPES[c] or format("\\u%04x", byte(c))
  end) .. '"'
end

-- The length of `t` when its keys are exactly 1..n (n > 0, or an array's mark), else nil.
local function array_length(t)
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or floor(k) ~= k then return nil end
    if k > n then n = k end
  end
  if n == 0 and not ARRAY[t] then return nil end
  for i = 1, n do
    if t[i] == nil then return nil end
  end
  return n
end

local encode_value

local function encode_table(t, out, seen)
  if seen[t] then error("cannot encode a table that contains itself", 0) end
  seen[t] = true
  local n = array_length(t)
  if n then
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], out, seen)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = "{"
    local first = true
    for k, v in pairs(t) do
      if type(k) ~= "string" then
        if type(k) ~= "number" then error("cannot encode a key of type " .. type(k), 0) end
        k = tostring(k)
      end
      if not first then out[#out + 1] = "," end
      first = false
      out[#out + 1] = escape(k)
      out[#out + 1] = ":"
      encode_value(v, out, seen)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

function encode_value(v, out, seen)
  local t = type(v)
  if v == nil or v == M.null then
    out[#out + 1] = "null"
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "number" then
    if v ~= v or v == huge or v == -huge then error("cannot encode " .. tostring(v), 0) end
    if floor(v) == v and v > -2 ^ 53 and v < 2 ^ 53 then
      out[#out + 1] = format("%d", v)
    else
      out[#out + 1] = format("%.17g", v)
    end
  elseif t == "string" then
    out[#out + 1] = escape(v)
  elseif t == "table" then
    encode_table(v, out, seen)
  else
    error("cannot encode a " .. t, 0)
  end
end

--- The JSON text of `value`; raises for what JSON cannot carry (a function, NaN, a cycle).
function M.encode(value)
  local out = {}
  encode_value(value, out, {})
  return concat(out)
end

-- Decoding: each function takes the text and a position, returns the value and the next one.
local decode_value

local function decode_error(_, i, what)
  error(format("invalid JSON at byte %d: %s", i, what), 0)
end

local function skip(s, i)
  return find(s, "[^ \t\r\n]", i) or #s + 1
end

local function utf8_char(code)
  if code < 0x80 then return char(code) end
  if code < 0x800 then return char(0xC0 + floor(code / 0x40), 0x80 + code % 0x40) end
  if code < 0x10000 then
    return char(0xE0 + floor(code / 0x1000), 0x80 + floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
  end
  return char(0xF0 + floor(code / 0x40000), 0x80 + floor(code / 0x1000) % 0x40,
    0x80 + floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
end

local SIMPLE = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\",
  ["/"] = "/" }

local function decode_string(s, i)
  local parts, j = {}, i + 1
  while true do
    local k = find(s, '["\\%c]', j)
    if not k then decode_error(s, i, "unterminated string") end
    parts[#parts + 1] = sub(s, j, k - 1)
    local c = sub(s, k, k)
    if c == '"' then return concat(parts), k + 1 end
    if c ~= "\\" then decode_error(s, k, "control character in a string") end
    local e = sub(s, k + 1, k + 1)
    if SIMPLE[e] then
      parts[#parts + 1] = SIMPLE[e]
      j = k + 2
    elseif e == "u" then
      local hex = sub(s, k + 2, k + 5)
      if not hex:find("^%x%x%x%x$") then decode_error(s, k, "bad \\u escape") end
      local code = tonumber(hex, 16)
      j = k + 6
      local low = code >= 0xD800 and code < 0xDC00 and sub(s, j, j + 5):match("^\\u(%x%x%x%x)$")
      low = low and tonumber(low, 16)
      if low and low >= 0xDC00 and low < 0xE000 then
        code = 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00)
        j = j + 6
      end
      parts[#parts + 1] = utf8_char(code)
    else
      decode_error(s, k, "bad escape")
    end
  end
end

local function decode_number(s, i)
  local text = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  local n = text and tonumber(text)
  if not n then decode_error(s, i, "bad number") end
  return n, i + #text
end

local function decode_list(s, i, close, item)
  i = skip(s, i + 1)
  if sub(s, i, i) == close then return i + 1 end
  while true do
    i = skip(s, item(i))
    local c = sub(s, i, i)
    if c == close then return i + 1 end
    if c ~= "," then decode_error(s, i, "',' or '" .. close .. "' expected") end
    i = skip(s, i + 1)
  end
end

local LITERALS = { ["true"] = true, ["false"] = false, ["null"] = M.null }

function decode_value(s, i)
  i = skip(s, i)
  local c = sub(s, i, i)
  if c == "{" then
    local t = {}
    local after = decode_list(s, i, "}", function(j)
      if sub(s, j, j) ~= '"' then decode_error(s, j, "a key expected") end
      local key, k = decode_string(s, j)
      k = skip(s, k)
      if sub(s, k, k) ~= ":" then decode_error(s, k, "':' expected") end
      local v
      v, k = decode_value(s, k + 1)
      t[key] = v
      return k
    end)
    return t, after
  elseif c == "[" then
    local t = M.array()
    local after = decode_list(s, i, "]", function(j)
      local v
      v, j = decode_value(s, j)
      t[#t + 1] = v
      return j
    end)
    return t, after
  elseif c == '"' then
    return decode_string(s, i)
  elseif c == "-" or c:find("%d") then
    return decode_number(s, i)
  end
  for word, value in pairs(LITERALS) do
    if sub(s, i, i + #word - 1) == word then return value, i + #word end
  end
  decode_error(s, i, "unexpected " .. (c == "" and "end" or "'" .. c .. "'"))
end

--- The value of the JSON text `s`; `nil, err` when it is not JSON.
function M.decode(s)
  local ok, value, i = pcall(decode_value, s, 1)
  if not ok then return nil, value end
  i = skip(s, i)
  if i <= #s then return nil, format("invalid JSON at byte %d: text after the value", i) end
  return value
end

return M
