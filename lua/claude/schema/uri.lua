--- URI references as JSON Schema uses them (RFC 3986): resolving `$id` and `$ref` against a
-- base, splitting off the fragment, and JSON Pointers (RFC 6901) in fragments.
-- @module claude.schema.uri
local M = {}

local char, tonumber, concat = string.char, tonumber, table.concat

-- -> scheme, authority, path, query, fragment (nil where absent)
local function parse(s)
  local scheme, rest = s:match("^(%a[%w+.-]*):(.*)$")
  if not scheme then rest = s end
  local fragment, query, authority
  local i = rest:find("#", 1, true)
  if i then fragment, rest = rest:sub(i + 1), rest:sub(1, i - 1) end
  i = rest:find("?", 1, true)
  if i then query, rest = rest:sub(i + 1), rest:sub(1, i - 1) end
  if rest:sub(1, 2) == "//" then
    local j = rest:find("/", 3, true)
    authority = rest:sub(3, (j or #rest + 1) - 1)
    rest = j and rest:sub(j) or ""
  end
  return scheme, authority, rest, query, fragment
end

-- RFC 3986 5.2.4, as written there
local function remove_dots(input)
  if not input:find(".", 1, true) then return input end
  local out = {}
  while input ~= "" do
    if input:sub(1, 3) == "../" then input = input:sub(4)
    elseif input:sub(1, 2) == "./" then input = input:sub(3)
    elseif input:sub(1, 3) == "/./" then input = input:sub(3)
    elseif input == "/." then input = "/"
    elseif input:sub(1, 4) == "/../" then input = input:sub(4); out[#out] = nil
    elseif input == "/.." then input = "/"; out[#out] = nil
    elseif input == "." or input == ".." then input = ""
    else
      local seg = input:match("^/?[^/]*")
      out[#out + 1] = seg
      input = input:sub(#seg + 1)
    end
  end
  return concat(out)
end

local function compose(scheme, authority, path, query, fragment)
  local t = {}
  if scheme then t[#t + 1] = scheme .. ":" end
  if authority then t[#t + 1] = "//" .. authority end
  t[#t + 1] = path
  if query then t[#t + 1] = "?" .. query end
  if fragment then t[#t + 1] = "#" .. fragment end
  return concat(t)
end

--- `ref` resolved against `base` (RFC 3986 section 5.2); a relative base gives a relative
-- result, so that a schema without any `$id` still has consistent keys.
-- @tparam string base
-- @tparam string ref
-- @treturn string
function M.resolve(base, ref)
  local rs, ra, rp, rq, rf = parse(ref)
  if rs then return compose(rs, ra, remove_dots(rp), rq, rf) end
  local bs, ba, bp, bq = parse(base or "")
  local ts, ta, tp, tq = bs, nil, nil, nil -- luacheck: ignore 311
  if ra then
    ta, tp, tq = ra, remove_dots(rp), rq
  else
    ta = ba
    if rp == "" then
      tp = bp
      tq = rq or bq
    else
      if rp:sub(1, 1) == "/" then
        tp = remove_dots(rp)
      else
        local merged
        if ba and bp == "" then
          merged = "/" .. rp
        else
          merged = (bp:match("^(.*/)") or "") .. rp
        end
        tp = remove_dots(merged)
      end
      tq = rq
    end
  end
  return compose(ts, ta, tp, tq, rf)
end

--- `uri` without its fragment, and the fragment ("" when there is none), percent-decoded.
-- @tparam string uri
-- @treturn string, string
function M.split(uri)
  local i = uri:find("#", 1, true)
  if not i then return uri, "" end
  return uri:sub(1, i - 1), M.unescape(uri:sub(i + 1))
end

--- Percent-decoding.
function M.unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

--- Whether `uri` has a scheme (an absolute URI, maybe with a fragment).
function M.absolute(uri)
  return uri:match("^%a[%w+.-]*:") ~= nil
end

--- The tokens of a JSON Pointer (`"/a/b~1c"` -> `{"a", "b/c"}`), or nil if it is not one.
-- @tparam string pointer
-- @treturn table
function M.pointer(pointer)
  if pointer == "" then return {} end
  if pointer:sub(1, 1) ~= "/" then return nil end
  local out = {}
  for tok in (pointer:sub(2) .. "/"):gmatch("([^/]*)/") do
    out[#out + 1] = (tok:gsub("~1", "/"):gsub("~0", "~"))
  end
  return out
end

--- A JSON Pointer token for `name` (`~` and `/` escaped).
function M.escape_token(name)
  return (tostring(name):gsub("~", "~0"):gsub("/", "~1"))
end

return M
