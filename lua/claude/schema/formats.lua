--- The formats of JSON Schema 2020-12 as assertions: `check[name](s) -> boolean` for a string
-- `s`. `format` is an annotation unless a schema is compiled with the `formats` option
-- (`claude.schema.compile`); then `claude.schema.validator` asks these. Each follows the RFC
-- the specification names, as the official test suite reads it: dates and times RFC 3339
-- (with its leap second rule and appendix A's durations), e-mail RFC 5321 (RFC 6531 for
-- `idn-email`), IPv4 RFC 2673's dotted quad without leading zeros, IPv6 RFC 4291, URIs RFC
-- 3986, IRIs RFC 3987, UUIDs RFC 4122, JSON Pointers RFC 6901, relative JSON Pointers
-- draft-bhutton-relative-json-pointer-00, URI templates RFC 6570, `regex` ECMA-262 (on
-- PCRE2); host names are `claude.schema.hostname`'s (IDNA2008 on libidn2).
-- @module claude.schema.formats
local hostname = require "claude.schema.hostname"
local core = require "claude.core"

local M = {}

local tonumber, byte, find, sub, match = tonumber, string.byte, string.find, string.sub,
  string.match

local function leap_year(y)
  return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)
end

local DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function date(s)
  local y, m, d = match(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  if not y then return false end
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if m < 1 or m > 12 or d < 1 then return false end
  local max = (m == 2 and leap_year(y)) and 29 or DAYS[m]
  return d <= max
end

-- partial-time time-offset; a leap second only at 23:59:60 UTC
local function time(s)
  local h, m, sec, frac, offset = match(s, "^(%d%d):(%d%d):(%d%d)(%.?%d*)(.*)$")
  if not h then return false end
  if frac ~= "" and (frac == "." or sub(frac, 1, 1) ~= ".") then return false end
  h, m, sec = tonumber(h), tonumber(m), tonumber(sec)
  if h > 23 or m > 59 or sec > 60 then return false end
  local shift = 0
  if offset ~= "Z" and offset ~= "z" then
    local sign, oh, om = match(offset, "^([+-])(%d%d):(%d%d)$")
    if not sign then return false end
    oh, om = tonumber(oh), tonumber(om)
    if oh > 23 or om > 59 then return false end
    shift = (oh * 60 + om) * (sign == "+" and 1 or -1)
  end
  if sec == 60 then return (h * 60 + m - shift) % 1440 == 23 * 60 + 59 end
  return true
end

local function date_time(s)
  local d, t = match(s, "^(%d%d%d%d%-%d%d%-%d%d)[Tt](.*)$")
  return d ~= nil and date(d) and time(t)
end

-- RFC 3339 appendix A: P (dur-date [dur-time] | dur-time | dur-week)
local DUR_DATE = { "^%d+D$", "^%d+M$", "^%d+M%d+D$", "^%d+Y$", "^%d+Y%d+M$", "^%d+Y%d+M%d+D$" }
local DUR_TIME = { "^%d+H$", "^%d+H%d+M$", "^%d+H%d+M%d+S$", "^%d+M$", "^%d+M%d+S$", "^%d+S$" }
local function any_of(s, patterns)
  for i = 1, #patterns do
    if find(s, patterns[i]) then return true end
  end
  return false
end
local function duration(s)
  local rest = match(s, "^P(.+)$")
  if not rest then return false end
  if find(rest, "^%d+W$") then return true end
  local d, t = match(rest, "^([^T]*)T(.*)$")
  if not d then return any_of(rest, DUR_DATE) end
  return (d == "" or any_of(d, DUR_DATE)) and any_of(t, DUR_TIME)
end

local function ipv4(s)
  local parts = { match(s, "^(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)%.(%d%d?%d?)$") }
  if #parts ~= 4 then return false end
  for i = 1, 4 do
    local p = parts[i]
    if (#p > 1 and sub(p, 1, 1) == "0") or tonumber(p) > 255 then return false end
  end
  return true
end

-- -> the number of groups of `part` ("a:b:c"), or nil when one is not 1-4 hex digits
local function groups(part)
  if part == "" then return 0 end
  local n = 0
  for g in (part .. ":"):gmatch("([^:]*):") do
    if not find(g, "^%x%x?%x?%x?$") then return nil end
    n = n + 1
  end
  return n
end

local function ipv6(s)
  if s == "" or find(s, "[^%x:%.]") then return false end
  local need = 8
  local head, v4 = match(s, "^(.*:)([^:]*%.[^:]*)$")
  if v4 then
    if not ipv4(v4) then return false end
    s, need = sub(head, -2) == "::" and head or sub(head, 1, -2), 6
  elseif find(s, ".", 1, true) then
    return false
  end
  local a, b = find(s, "::", 1, true)
  if not a then return groups(s) == need end
  local left, right = sub(s, 1, a - 1), sub(s, b + 1)
  if find(right, "::", 1, true) then return false end
  local n1, n2 = groups(left), groups(right)
  return n1 ~= nil and n2 ~= nil and n1 + n2 < need
end

-- RFC 3987's ucschar and iprivate: the code points an IRI may hold unescaped
local function ucschar(c)
  return (c >= 0xA0 and c <= 0xD7FF) or (c >= 0xF900 and c <= 0xFDCF)
    or (c >= 0xFDF0 and c <= 0xFFEF)
    or (c >= 0x10000 and c <= 0xEFFFD and c % 0x10000 <= 0xFFFD and c < 0xE0000)
    or (c >= 0xE1000 and c <= 0xEFFFD)
end
local function iprivate(c)
  return (c >= 0xE000 and c <= 0xF8FF) or (c >= 0xF0000 and c <= 0xFFFFD)
    or (c >= 0x100000 and c <= 0x10FFFD)
end

-- The ASCII each part of a URI may hold as it is (RFC 3986's classes, as Lua sets).
local UNRESERVED_SUB = "%w%-%._~!%$&'%(%)%*%+,;="
local PATH = "[" .. UNRESERVED_SUB .. ":@/]"
local QUERY = "[" .. UNRESERVED_SUB .. ":@/%?]"
local USERINFO = "[" .. UNRESERVED_SUB .. ":]"
local REG_NAME = "[" .. UNRESERVED_SUB .. "]"

-- Is every character of `s` in `class` (a Lua character class), a %XX escape, or (in an
-- IRI) a ucschar (or an iprivate, where `private`)?
local function only(s, class, iri, private)
  local i, n = 1, #s
  while i <= n do
    local c = byte(s, i)
    if c == 0x25 then
      if not find(s, "^%%%x%x", i) then return false end
      i = i + 3
    elseif c < 0x80 then
      if not find(sub(s, i, i), class) then return false end
      i = i + 1
    else
      if not iri then return false end
      local ok, cp = pcall(utf8.codepoint, s, i)
      if not ok or not (ucschar(cp) or (private and iprivate(cp))) then return false end
      i = i + #utf8.char(cp)
    end
  end
  return true
end

local function host(h, iri)
  local literal = match(h, "^%[(.*)%]$")
  if literal then
    if find(literal, "^[vV]%x+%.") then
      return only(match(literal, "^[vV]%x+%.(.+)$") or "", "[" .. UNRESERVED_SUB .. ":]")
    end
    return ipv6(literal)
  end
  return only(h, REG_NAME, iri)
end

local function authority(a, iri)
  local userinfo, rest = match(a, "^([^@]*)@(.*)$")
  if userinfo then
    if not only(userinfo, USERINFO, iri) then return false end
  else
    rest = a
  end
  local h, port = match(rest, "^(%[.*%]):(.*)$")
  if not h then
    if sub(rest, 1, 1) == "[" then
      h, port = rest, ""
    else
      h, port = match(rest, "^([^:]*):?(.*)$")
    end
  end
  return find(port, "^%d*$") ~= nil and host(h, iri)
end

-- A URI (`absolute`) or a URI reference; an IRI or IRI reference when `iri`.
local function reference(s, absolute, iri)
  local scheme, rest = match(s, "^(%a[%w%+%-%.]*):(.*)$")
  if not scheme then
    if absolute then return false end
    rest = s
    local first = match(s, "^[^/%?#]*")
    if find(first, ":", 1, true) then return false end -- path-noscheme
  end
  local body, fragment = match(rest, "^([^#]*)#(.*)$")
  if not body then body = rest end
  if fragment and not only(fragment, QUERY, iri) then return false end
  local hier, query = match(body, "^([^%?]*)%?(.*)$")
  if not hier then hier = body end
  if query and not only(query, QUERY, iri, iri) then return false end
  if sub(hier, 1, 2) == "//" then
    local a, path = match(hier, "^//([^/]*)(.*)$")
    return authority(a, iri) and only(path, PATH, iri)
  end
  return only(hier, PATH, iri)
end

-- RFC 5321's Mailbox (RFC 6531's with `idn`: UTF-8 in the local part, an IDN domain)
local ATEXT = "[%w!#%$%%&'%*%+%-/=%?%^_`{|}~]"
local function utf8_only(s)
  return utf8.len(s) ~= nil
end
local function dot_atom(s, idn)
  if s == "" then return false end
  for atom in (s .. "."):gmatch("([^%.]*)%.") do
    if atom == "" then return false end
    for i = 1, #atom do
      local c = byte(atom, i)
      if c < 0x80 and not find(sub(atom, i, i), ATEXT) then return false end
      if c >= 0x80 and not idn then return false end
    end
  end
  return not idn or utf8_only(s)
end
local function quoted(s, idn)
  local i, n = 2, #s
  while i <= n do
    local c = byte(s, i)
    if c == 0x22 then return i end
    if c == 0x5C then
      local e = byte(s, i + 1)
      if not e or e < 32 or e > 126 then return nil end
      i = i + 2
    elseif (c >= 32 and c <= 126) or (idn and c >= 0x80) then
      i = i + 1
    else
      return nil
    end
  end
  return nil
end
local function email(s, idn)
  local localpart, domain
  if sub(s, 1, 1) == '"' then
    local close = quoted(s, idn)
    if not close or sub(s, close + 1, close + 1) ~= "@" then return false end
    localpart, domain = sub(s, 1, close), sub(s, close + 2)
    if idn and not utf8_only(localpart) then return false end
  else
    localpart, domain = match(s, "^(.*)@([^@]*)$")
    if not localpart or not dot_atom(localpart, idn) then return false end
  end
  if #localpart > 64 or domain == "" then return false end
  local literal = match(domain, "^%[(.*)%]$")
  if literal then
    local v6 = match(literal, "^IPv6:(.*)$")
    if v6 then return ipv6(v6) end
    return ipv4(literal)
  end
  if idn then return hostname.idn(domain, true) end
  return hostname.ascii(domain)
end

local function json_pointer(s)
  if s == "" then return true end
  return sub(s, 1, 1) == "/" and not find((s:gsub("~[01]", "")), "~", 1, true)
end

local function relative_json_pointer(s)
  local n, rest = match(s, "^(%d+)(.*)$")
  if not n or (#n > 1 and sub(n, 1, 1) == "0") then return false end
  return rest == "#" or json_pointer(rest)
end

local function uuid(s)
  return find(s, "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$")
    ~= nil
end

-- RFC 6570: literals, and expressions {[op]varspec,...} (level 4)
local LITERAL_NOT = "[%c \"%%<>\\%^`{|}]" -- in ASCII; '%' only as an escape
local function varspec(v)
  local name, mod = match(v, "^([^:%*]*)(.*)$")
  if name == "" or not (mod == "" or mod == "*" or find(mod, "^:[1-9]%d?%d?%d?$")) then
    return false
  end
  for part in (name .. "."):gmatch("([^%.]*)%.") do
    if part == "" then return false end
    local plain = part:gsub("%%%x%x", "")
    if find(plain, "[^%w_]") then return false end
  end
  return true
end
local function uri_template(s)
  local i, n = 1, #s
  while i <= n do
    local c = sub(s, i, i)
    if c == "{" then
      local close = find(s, "}", i + 1, true)
      if not close then return false end
      local expr = sub(s, i + 1, close - 1)
      if find(expr, "{", 1, true) then return false end
      expr = expr:gsub("^[%+#%./;%?&]", "")
      if expr == "" then return false end
      for v in (expr .. ","):gmatch("([^,]*),") do
        if not varspec(v) then return false end
      end
      i = close + 1
    elseif c == "%" then
      if not find(s, "^%%%x%x", i) then return false end
      i = i + 3
    elseif byte(c) >= 0x80 then
      local ok, cp = pcall(utf8.codepoint, s, i)
      if not ok or not (ucschar(cp) or iprivate(cp)) then return false end
      i = i + #utf8.char(cp)
    else
      if find(c, LITERAL_NOT) or c == "\127" then return false end
      i = i + 1
    end
  end
  return true
end

-- The letters ECMA-262 lets follow a backslash (\cX, \xHH, \uHHHH, \k<name>, \p{...} too):
-- `pattern` takes the others as Annex B's identity escapes, a `regex` string may not.
local LETTER_ESCAPES = "[bBdDwWsSfnrtvcxukpP]"
local function ecma_regex(s)
  if not utf8_only(s) then return false end
  local i = find(s, "\\", 1, true)
  while i do
    local e = sub(s, i + 1, i + 1)
    if find(e, "%a") and not find(e, LETTER_ESCAPES) then return false end
    i = find(s, "\\", i + 2, true)
  end
  return (core.regex(s)) ~= nil
end

--- The checks, by format name: `(s) -> boolean`.
M.check = {
  date = date, time = time, ["date-time"] = date_time, duration = duration,
  email = function(s) return email(s, false) end,
  ["idn-email"] = function(s) return email(s, true) end,
  hostname = hostname.ascii, ["idn-hostname"] = function(s) return hostname.idn(s, false) end,
  ipv4 = ipv4, ipv6 = ipv6,
  uri = function(s) return reference(s, true, false) end,
  ["uri-reference"] = function(s) return reference(s, false, false) end,
  iri = function(s) return utf8_only(s) and reference(s, true, true) end,
  ["iri-reference"] = function(s) return utf8_only(s) and reference(s, false, true) end,
  uuid = uuid, ["json-pointer"] = json_pointer,
  ["relative-json-pointer"] = relative_json_pointer, regex = ecma_regex,
  ["uri-template"] = uri_template,
}

--- The formats that need libidn2 (`claude.schema.hostname`).
M.IDN = { hostname = true, ["idn-hostname"] = true, ["idn-email"] = true }

--- The names, sorted (for messages).
M.names = {}
for name in pairs(M.check) do M.names[#M.names + 1] = name end
table.sort(M.names)

return M
