--- Absolute URLs, parsed strictly, for the places that decide by a URL's parts (the URL
-- guard, OAuth's origin, issuer and resource checks); and the query strings and forms of
-- OAuth's requests. A URL that browsers and libraries read two ways (blanks, control bytes,
-- backslashes, user information, a percent sign in the host, port 0) is refused rather than
-- guessed at.
-- @module claude.url
local M = {}

--- Parses an absolute URL.
-- @tparam string s
-- @treturn table `{ scheme (lower case), host (lower case, IPv6 without brackets, no
--   trailing dot), port (the number written, or nil), tail (all after the authority),
--   path ("" when none), query (nil when none), fragment (nil when none) }`, or nil and why
function M.parse(s)
  if type(s) ~= "string" then return nil, "not a string" end
  if s:find("[%s%c\\]") then return nil, "blanks, control characters or backslashes" end
  local scheme, rest = s:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil, "not an absolute URL" end
  local authority, tail = rest:match("^([^/?#]*)(.*)$")
  if authority:find("@", 1, true) then return nil, "user information in the URL" end
  local host, port
  if authority:sub(1, 1) == "[" then
    host, port = authority:match("^%[([%x:.]+)%](.*)$")
    if not host then return nil, "a malformed IPv6 host" end
  else
    host, port = authority:match("^([^:]*)(.*)$")
  end
  if port ~= "" then
    port = tonumber(port:match("^:(%d+)$"))
    if not port or port > 65535 or port == 0 then return nil, "a malformed port" end
  else
    port = nil
  end
  host = host:lower():gsub("%.$", "") -- "example.com." is example.com
  if host == "" then return nil, "no host" end
  if host:find("%", 1, true) then return nil, "a percent sign in the host" end
  local path, query, fragment = tail, nil, nil
  local hash = path:find("#", 1, true)
  if hash then path, fragment = path:sub(1, hash - 1), path:sub(hash + 1) end
  local q = path:find("?", 1, true)
  if q then path, query = path:sub(1, q - 1), path:sub(q + 1) end
  return { scheme = scheme:lower(), host = host, port = port, tail = tail, path = path,
    query = query, fragment = fragment }
end

local DEFAULT_PORTS = { http = 80, https = 443 }

--- Parses an absolute URL as OAuth compares URLs (an issuer, a resource, an endpoint):
-- `parse`'s strictness, the default port left out.
-- @tparam string s
-- @treturn table `{ scheme, host (lower case, IPv6 without brackets), port
--   (number or nil), authority (host[:port] as a URL writes it), path ("" when
--   none), query (nil when none), fragment (nil when none) }`, or nil and why
function M.parse_canonical(s)
  local u, why = M.parse(s)
  if not u then return nil, why end
  if u.port == DEFAULT_PORTS[u.scheme] then u.port = nil end
  local shown = u.host:find(":", 1, true) and ("[" .. u.host .. "]") or u.host
  u.authority = u.port and (shown .. ":" .. u.port) or shown
  u.tail = nil
  return u
end

--- `scheme://authority` of a parsed URL (the default port left out).
function M.origin(u)
  return u.scheme .. "://" .. u.authority
end

--- The URL without its fragment, with the scheme and host in lower case and
-- the default port left out: a canonical resource identifier (RFC 8707).
function M.canonical(u)
  return M.origin(u) .. u.path .. (u.query and ("?" .. u.query) or "")
end

--- Is `host` (as `parse` gives it) the loopback interface? `localhost`,
-- 127.0.0.0/8 and ::1, decided from the name alone: nothing is resolved.
function M.is_loopback(host)
  if host == "localhost" or host == "::1" then return true end
  local a, b, c, d = host:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if a and tonumber(a) == 127 and tonumber(b) < 256 and tonumber(c) < 256
    and tonumber(d) < 256 then
    return true
  end
  return false
end

--- Percent-encodes everything but the unreserved characters (RFC 3986).
function M.encode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

--- Decodes a form or query component (`+` is a blank).
function M.decode(s)
  return (s:gsub("+", " "):gsub("%%(%x%x)", function(h)
    return string.char(tonumber(h, 16))
  end))
end

--- Encodes a table of string fields as `application/x-www-form-urlencoded`
-- (names sorted, so that the text is always the same); nil fields are left
-- out.
function M.form(fields)
  local names = {}
  for k in pairs(fields) do names[#names + 1] = k end
  table.sort(names)
  local out = {}
  for i, k in ipairs(names) do out[i] = M.encode(k) .. "=" .. M.encode(fields[k]) end
  return table.concat(out, "&")
end

--- Parses a query string into name -> value.
-- @return the table, and the name of the first parameter that came twice (a
--   response with a repeated parameter is not to be trusted), if any
function M.params(query)
  local out, repeated = {}, nil
  for pair in (query or ""):gmatch("[^&]+") do
    local k, v = pair:match("^([^=]*)=?(.*)$")
    k, v = M.decode(k), M.decode(v)
    if out[k] ~= nil and not repeated then repeated = k end
    out[k] = v
  end
  return out, repeated
end

--- `url` with the fields added to its query (existing parameters kept).
function M.with_query(url, fields)
  local hash = url:find("#", 1, true)
  if hash then url = url:sub(1, hash - 1) end
  local extra = M.form(fields)
  if extra == "" then return url end
  return url .. (url:find("?", 1, true) and "&" or "?") .. extra
end

return M
