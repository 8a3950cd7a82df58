--- Host and Origin checks of the Streamable HTTP transport, against DNS rebinding: a web page
-- whose name was made to resolve to 127.0.0.1 must not reach a local server from a browser.
--
--     local g = guard.new{ host = "127.0.0.1" }        -- the transport's options
--     local why = guard.forbidden(g, req.headers)       -- nil, or the reason for a 403
--
-- On a loopback bind (or with `dns_rebinding_protection = true`, or `allowed_hosts` given)
-- the `Host` must be one of the allowed names (default: localhost, 127.0.0.1, [::1] and the
-- bind address; any port), and an `Origin`, when sent, must name one of them too.
-- `allowed_origins` (full origins, or `*`) replaces the Origin check wherever it is given.
-- @module claude.mcp.server.origin
local core = require "claude.core"

local M = {}

local fmt = string.format

local LOCAL_HOSTS = { localhost = true, ["127.0.0.1"] = true, ["[::1]"] = true, ["::1"] = true }

-- "Host:port" or "[v6]:port" -> the lower-case name, brackets kept; nil when it is not of
-- that form (RFC 3986 host [ ":" port ]): "[::1]evil.com" must not read as "[::1]"
local function host_name(hostport)
  if not hostport then return nil end
  hostport = hostport:lower()
  local name, port = hostport:match("^(%[[^%]]*%])(.*)$")
  if not name then name, port = hostport:match("^([^:%[%]]*)(.*)$") end
  if name and (port == "" or port:match("^:%d*$")) then return name end
  return nil
end

local function set_of(list)
  if list == nil then return nil end
  local s = {}
  for _, v in ipairs(list) do s[(v:lower():gsub("/$", ""))] = true end
  return s
end

local function is_loopback(host)
  return host == "localhost" or core.address_class(host) == "loopback"
end

--- Whether `host` (a bind address or a name) is loopback: 127.0.0.0/8, ::1, localhost.
-- @tparam string host
-- @treturn boolean
M.is_loopback = is_loopback

--- The checks for a transport's options.
-- @tparam table o `host`, `allowed_hosts`, `allowed_origins`, `dns_rebinding_protection`
function M.new(o)
  local protect = o.dns_rebinding_protection
  if protect == nil then protect = o.allowed_hosts ~= nil or is_loopback(o.host) end
  local hosts = set_of(o.allowed_hosts)
  if not hosts then
    hosts = {}
    for h in pairs(LOCAL_HOSTS) do hosts[h] = true end
    hosts[o.host:find(":") and "[" .. o.host:lower() .. "]" or o.host:lower()] = true
  end
  return { protect = protect, allowed_hosts = hosts, allowed_origins = set_of(o.allowed_origins),
    ok_hosts = {}, ok_origins = {}, nok = 0 }
end

-- A client sends the same Host (and Origin) on every request: the values that passed are
-- kept (at most KEEP of up to KEEP_LEN bytes, then all forgotten), so the common request
-- runs no pattern. Only a pass is kept: a refusal is worked out again, in its words.
local KEEP, KEEP_LEN = 64, 256

local function passed(g, set, value)
  if #value > KEEP_LEN then return end
  if g.nok >= KEEP then g.ok_hosts, g.ok_origins, g.nok = {}, {}, 0 end
  g[set][value] = true
  g.nok = g.nok + 1
end

--- Whether a request may go on.
-- @tparam table g from `new`
-- @tparam table headers the request's headers (lower-case names)
-- @treturn string|nil nil, or the reason for a 403
function M.forbidden(g, headers)
  local host, origin = headers.host, headers.origin
  if g.protect and not (host and g.ok_hosts[host]) then
    local h = host_name(host)
    if not h or not g.allowed_hosts[h] then
      return fmt("Forbidden: Host '%s' is not allowed", tostring(host))
    end
    passed(g, "ok_hosts", host)
  end
  if origin and not g.ok_origins[origin] then
    local o = origin:lower():gsub("/$", "")
    local list = g.allowed_origins
    if list then
      if not (list[o] or list["*"]) then
        return fmt("Forbidden: Origin '%s' is not allowed", origin)
      end
    elseif g.protect then
      local h = host_name(o:match("^[%a][%w+.-]*://([^/]*)$"))
      if not h or not g.allowed_hosts[h] then
        return fmt("Forbidden: Origin '%s' is not allowed", origin)
      end
    end
    passed(g, "ok_origins", origin)
  end
  return nil
end

return M
