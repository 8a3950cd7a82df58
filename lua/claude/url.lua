--- Absolute URLs, parsed strictly, for the places that decide by a URL's parts (the URL
-- guard, OAuth's origin and issuer checks). A URL that browsers and libraries read two ways
-- (blanks, control bytes, backslashes, user information, a percent sign in the host, port 0)
-- is refused rather than guessed at.
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

return M
