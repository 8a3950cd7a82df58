--- Host names for JSON Schema's `hostname`, `idn-hostname` and `idn-email` formats.
-- `ascii(s)`: RFC 1123 labels (letters, digits, hyphens inside, 1-63 octets, 253 in all),
-- each A-label (`xn--`) a valid IDNA2008 one. `idn(s)`: RFC 5890's internationalized names,
-- with `.`, U+3002, U+FF0E and U+FF61 as separators. libidn2 (`core.idna_lookup`, IDNA2008
-- without TR46's mapping) judges code points, NFC, CONTEXTJ and Punycode; this module adds
-- what libidn2 leaves out: hyphens, empty labels, the canonical Punycode of an A-label, the
-- CONTEXTO rules of RFC 5892 appendix A and the Bidi rule of RFC 5893 (by ranges of code
-- points: the Hebrew, Arabic, Syriac, Thaana and N'Ko blocks are right to left).
-- @module claude.schema.hostname
local core = require "claude.core"
local errors = require "claude.errors"

local M = {}

local byte, sub, find, lower, char = string.byte, string.sub, string.find, string.lower,
  string.char
local floor = math.floor

---------------------------------------------------------------------------------------------
-- Punycode (RFC 3492)
---------------------------------------------------------------------------------------------

local BASE, TMIN, TMAX, SKEW, DAMP, INITIAL_BIAS, INITIAL_N = 36, 1, 26, 38, 700, 72, 128

local function adapt(delta, points, first)
  delta = first and floor(delta / DAMP) or floor(delta / 2)
  delta = delta + floor(delta / points)
  local k = 0
  while delta > floor((BASE - TMIN) * TMAX / 2) do
    delta = floor(delta / (BASE - TMIN))
    k = k + BASE
  end
  return k + floor((BASE - TMIN + 1) * delta / (delta + SKEW))
end

local function digit_value(c)
  if c >= 48 and c <= 57 then return c - 22 end
  if c >= 65 and c <= 90 then return c - 65 end
  if c >= 97 and c <= 122 then return c - 97 end
  return nil
end

local function digit_char(d)
  return char(d < 26 and d + 97 or d + 22)
end

-- -> the code points of `s` (the part after xn--), or nil
local function decode(s)
  local out, b = {}, 0
  for i = #s, 1, -1 do
    if byte(s, i) == 45 then b = i; break end
  end
  for i = 1, b - 1 do
    local c = byte(s, i)
    if c >= 0x80 then return nil end
    out[#out + 1] = c
  end
  local n, bias, i, pos = INITIAL_N, INITIAL_BIAS, 0, b > 0 and b + 1 or 1
  while pos <= #s do
    local old, w, k = i, 1, BASE
    while true do
      if pos > #s then return nil end
      local d = digit_value(byte(s, pos))
      pos = pos + 1
      if not d then return nil end
      i = i + d * w
      if i > 0x7FFFFFFF then return nil end
      local t = k <= bias and TMIN or (k >= bias + TMAX and TMAX or k - bias)
      if d < t then break end
      w = w * (BASE - t)
      k = k + BASE
    end
    bias = adapt(i - old, #out + 1, old == 0)
    n = n + floor(i / (#out + 1))
    i = i % (#out + 1)
    if n > 0x10FFFF then return nil end
    table.insert(out, i + 1, n)
    i = i + 1
  end
  return out
end

-- the Punycode of code points `cps` (lowercase)
local function encode(cps)
  local out, n, delta, bias = {}, INITIAL_N, 0, INITIAL_BIAS
  for _, c in ipairs(cps) do
    if c < 0x80 then out[#out + 1] = char(c) end
  end
  local h = #out
  local b = h
  if b > 0 then out[#out + 1] = "-" end
  while h < #cps do
    local m = math.huge
    for _, c in ipairs(cps) do
      if c >= n and c < m then m = c end
    end
    delta = delta + (m - n) * (h + 1)
    n = m
    for _, c in ipairs(cps) do
      if c < n then delta = delta + 1 end
      if c == n then
        local q, k = delta, BASE
        while true do
          local t = k <= bias and TMIN or (k >= bias + TMAX and TMAX or k - bias)
          if q < t then break end
          out[#out + 1] = digit_char(t + (q - t) % (BASE - t))
          q = floor((q - t) / (BASE - t))
          k = k + BASE
        end
        out[#out + 1] = digit_char(q)
        bias = adapt(delta, h + 1, h == b)
        delta = 0
        h = h + 1
      end
    end
    delta = delta + 1
    n = n + 1
  end
  return table.concat(out)
end

---------------------------------------------------------------------------------------------
-- The rules of a U-label libidn2 leaves out
---------------------------------------------------------------------------------------------

local function within(c, ranges)
  for i = 1, #ranges, 2 do
    if c >= ranges[i] and c <= ranges[i + 1] then return true end
  end
  return false
end

local GREEK = { 0x0370, 0x0373, 0x0375, 0x0377, 0x037A, 0x037D, 0x037F, 0x03FF,
  0x1F00, 0x1FFF }
local HEBREW = { 0x0591, 0x05F4, 0xFB1D, 0xFB4F }
local KANA_HAN = { 0x3041, 0x309F, 0x30A0, 0x30FA, 0x30FC, 0x30FF, 0x31F0, 0x31FF,
  0x3005, 0x3007, 0x3021, 0x3029, 0x3038, 0x303B, 0x3400, 0x4DBF, 0x4E00, 0x9FFF,
  0xF900, 0xFAFF, 0xFF66, 0xFF9D, 0x1B000, 0x1B16F, 0x20000, 0x3FFFF }

-- RFC 5892 appendix A.3 to A.9
local function contexto(cps)
  local arabic, extended, kana = false, false, false
  for _, c in ipairs(cps) do
    if c >= 0x0660 and c <= 0x0669 then arabic = true end
    if c >= 0x06F0 and c <= 0x06F9 then extended = true end
    if c ~= 0x30FB and within(c, KANA_HAN) then kana = true end
  end
  if arabic and extended then return false end
  for i, c in ipairs(cps) do
    if c == 0x00B7 then
      if cps[i - 1] ~= 0x6C or cps[i + 1] ~= 0x6C then return false end
    elseif c == 0x0375 then
      if not cps[i + 1] or not within(cps[i + 1], GREEK) then return false end
    elseif c == 0x05F3 or c == 0x05F4 then
      if not cps[i - 1] or not within(cps[i - 1], HEBREW) then return false end
    elseif c == 0x30FB then
      if not kana then return false end
    end
  end
  return true
end

-- The Bidi classes RFC 5893 tells apart, by ranges (the rest: L).
local NSM = { 0x0300, 0x036F, 0x0483, 0x0489, 0x0591, 0x05BD, 0x05BF, 0x05BF, 0x05C1, 0x05C2,
  0x05C4, 0x05C5, 0x05C7, 0x05C7, 0x0610, 0x061A, 0x064B, 0x065F, 0x0670, 0x0670,
  0x06D6, 0x06DC, 0x06DF, 0x06E4, 0x06E7, 0x06E8, 0x06EA, 0x06ED, 0x0711, 0x0711,
  0x0730, 0x074A, 0x07A6, 0x07B0, 0x07EB, 0x07F3, 0x0900, 0x0902, 0x093A, 0x093A,
  0x093C, 0x093C, 0x0941, 0x0948, 0x094D, 0x094D, 0x0951, 0x0957, 0x0962, 0x0963,
  0x200C, 0x200D }
local EN = { 0x30, 0x39, 0xB2, 0xB3, 0xB9, 0xB9, 0x06F0, 0x06F9, 0x2070, 0x2079,
  0xFF10, 0xFF19 }
local AN = { 0x0600, 0x0605, 0x0660, 0x0669, 0x066B, 0x066C, 0x06DD, 0x06DD }
local R = { 0x0590, 0x05FF, 0x07C0, 0x07EA, 0x07F4, 0x07FF, 0x0800, 0x085F, 0xFB1D, 0xFB4F,
  0x10800, 0x10FFF }
local AL = { 0x0600, 0x06FF, 0x0700, 0x074F, 0x0750, 0x07BF, 0x0860, 0x08FF, 0xFB50, 0xFDFF,
  0xFE70, 0xFEFF }
local ES_CS_ET_ON = { 0x21, 0x2F, 0x3A, 0x40, 0x5B, 0x60, 0x7B, 0x7E, 0xA0, 0xBF }

local function bidi(c)
  if within(c, NSM) then return "NSM" end
  if within(c, EN) then return "EN" end
  if within(c, AN) then return "AN" end
  if within(c, R) then return "R" end
  if within(c, AL) then return "AL" end
  if within(c, ES_CS_ET_ON) then return "ON" end
  return "L"
end

local function rtl_label(classes)
  for _, k in ipairs(classes) do
    if k == "R" or k == "AL" or k == "AN" then return true end
  end
  return false
end

local RTL_ALLOWED = { R = true, AL = true, AN = true, EN = true, ON = true, NSM = true }
local LTR_ALLOWED = { L = true, EN = true, ON = true, NSM = true }

-- RFC 5893 section 2, rules 1 to 6, for one label of a Bidi domain name
local function bidi_rule(classes)
  local first = classes[1]
  local last = #classes
  while last > 1 and classes[last] == "NSM" do last = last - 1 end
  local tail = classes[last]
  if first == "R" or first == "AL" then
    local en, an = false, false
    for _, k in ipairs(classes) do
      if not RTL_ALLOWED[k] then return false end
      en, an = en or k == "EN", an or k == "AN"
    end
    return not (en and an) and (tail == "R" or tail == "AL" or tail == "EN" or tail == "AN")
  elseif first == "L" then
    for _, k in ipairs(classes) do
      if not LTR_ALLOWED[k] then return false end
    end
    return tail == "L" or tail == "EN"
  end
  return false
end

-- -> the code points of a U-label (decoded from an A-label), or nil for a bad label
local function code_points(label)
  if #label == 0 or #label > 63 and not find(label, "[\128-\255]") then return nil end
  if find(lower(sub(label, 1, 4)), "^xn%-%-") then
    local body = sub(label, 5)
    local cps = decode(lower(body))
    if not cps then return nil end
    local ascii_only = true
    for _, c in ipairs(cps) do
      if c >= 0x80 then ascii_only = false end
    end
    -- an A-label of ASCII alone, or not the canonical encoding of its U-label, is fake
    if ascii_only or encode(cps) ~= lower(body) then return nil end
    return cps
  end
  local cps = {}
  for _, c in utf8.codes(label) do cps[#cps + 1] = c end
  return cps
end

local function u_label(cps)
  if cps[1] == 0x2D or cps[#cps] == 0x2D then return false end
  if cps[3] == 0x2D and cps[4] == 0x2D then
    for _, c in ipairs(cps) do
      if c >= 0x80 then return false end -- "--" at 3-4 is for A-labels only
    end
    return false
  end
  return contexto(cps)
end

local function labels(s, nfc)
  if s == "" or #s > 1024 or utf8.len(s) == nil then return false end
  local list = {}
  for label in (s .. "."):gmatch("([^%.]*)%.") do
    list[#list + 1] = label
  end
  local cps_of, any_rtl, classes_of = {}, false, {}
  for i, label in ipairs(list) do
    local cps = code_points(label)
    if not cps or #cps == 0 or not u_label(cps) then return false end
    local classes = {}
    for j, c in ipairs(cps) do classes[j] = bidi(c) end
    cps_of[i], classes_of[i] = cps, classes
    any_rtl = any_rtl or rtl_label(classes)
  end
  if any_rtl then
    for _, classes in ipairs(classes_of) do
      if not bidi_rule(classes) then return false end
    end
  end
  local ok, _, kind = core.idna_lookup(s, nfc)
  if kind == "unsupported" then errors.throw("unsupported", _) end
  if not ok then return false end
  -- the whole name, its labels as A-labels: 253 octets at most
  local ascii = {}
  for i, cps in ipairs(cps_of) do
    local plain = true
    for _, c in ipairs(cps) do
      if c >= 0x80 then plain = false end
    end
    ascii[i] = plain and list[i] or "xn--" .. encode(cps)
    if #ascii[i] > 63 then return false end
  end
  return #table.concat(ascii, ".") <= 253
end

--- Is `s` a host name of ASCII letters, digits, hyphens and dots (RFC 1123), its A-labels
-- valid IDNA2008 ones?
-- @tparam string s
-- @treturn boolean
function M.ascii(s)
  if find(s, "[^%w%-%.]") then return false end
  return labels(s, false)
end

--- Is `s` an internationalized host name (RFC 5890)?
-- @tparam string s
-- @tparam boolean nfc normalize to NFC first (RFC 6531's e-mail domains) instead of refusing
--   a name not in NFC
-- @treturn boolean
function M.idn(s, nfc)
  -- the ideographic full stops separate labels as `.` does (RFC 3490 3.1)
  s = s:gsub("\227\128\130", "."):gsub("\239\188\142", "."):gsub("\239\189\161", ".")
  if find(s, "[%z\1-\44\47\58-\64\91-\96\123-\127]") then return false end
  return labels(s, nfc)
end

--- Throws `unsupported` unless libidn2 can be loaded.
function M.require_idn2()
  local _, err, kind = core.idna_lookup("a")
  if kind == "unsupported" then errors.throw("unsupported", err) end
end

M.punycode = { decode = decode, encode = encode }

return M
