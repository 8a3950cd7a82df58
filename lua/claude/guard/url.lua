--- Allows or refuses URLs before a tool fetches them (server-side request
-- forgery).
--
-- `claude.guard.url{ ... }` returns a guard; `g:check(url)` parses the URL,
-- resolves its host and refuses it when the scheme, host or port is not
-- allowed or when ANY address the host resolves to is loopback, private,
-- link-local, a cloud metadata address, unspecified, multicast, shared
-- (carrier-grade NAT) or reserved, whatever way the address is spelled.
-- It returns what to connect to: `{ url =, scheme =, host =, port =, path =,
-- address =, resolve = "host:port:address" }`. Connect to `address` (with
-- libcurl, pass `resolve` as CURLOPT_RESOLVE; `claude.mcp` and the HTTP
-- client take it as `resolve`), so that a second look-up, which a DNS
-- rebinding attack answers differently, is never made.
--
-- `check` waits for the look-up: inside a task other tasks run meanwhile;
-- outside one it runs the loop.
-- @module claude.guard.url
local core = require "claude.core"
local async = require "claude.async"
local errors = require "claude.errors"
local urls = require "claude.url"
local common = require "claude.guard.common"

local violation = common.violation

local UrlGuard = common.class("claude.guard.Url")

local DEFAULT_PORTS = { http = 80, https = 443, ws = 80, wss = 443 }

-- Parses an absolute URL strictly (claude.url); `path` is all after the authority ("/" when
-- none), as the guard reports it.
local function parse(text)
  local u, why = urls.parse(text)
  if not u then return nil, why end
  return { url = text, scheme = u.scheme, host = u.host, port = u.port,
    path = u.tail ~= "" and u.tail or "/" }
end

-- "*.example.com" matches any subdomain of example.com, not itself.
local function host_matches(host, patterns)
  for _, p in ipairs(patterns) do
    if p == host then return true end
    if p:sub(1, 2) == "*." then
      local suffix = p:sub(2)
      if #host > #suffix and host:sub(-#suffix) == suffix then return true end
    end
  end
  return false
end

local function resolve(host)
  local ok, list, err = async.await(function(done)
    local started, serr = core.resolve(host, done)
    if not started then done(nil, serr) end
  end)
  if not ok then return nil, list end
  return list, err
end

--- Makes a URL guard.
-- @tparam table opts `schemes` (list, default `{ "https", "http" }`),
--   `allow_hosts` / `deny_hosts` (lists of names, `*.suffix` for subdomains),
--   `ports` (list of allowed ports; default any), `allow_classes` (list of
--   address classes to let through, e.g. `{ "loopback" }` for a local test
--   server; default none but "public")
-- @treturn claude.guard.Url
local function new(opts)
  opts = opts or {}
  common.check_options("guard.url", opts, { schemes = "table", allow_hosts = "table",
    deny_hosts = "table", ports = "table", allow_classes = "table" })
  for _, field in ipairs { "schemes", "allow_hosts", "deny_hosts", "allow_classes" } do
    common.check_strings("guard.url", field, opts[field])
  end
  local ports
  if opts.ports then
    ports = {}
    for i, p in ipairs(opts.ports) do
      if math.type(p) ~= "integer" then
        errors.misuse("bad field 'ports[%d]' to 'guard.url' (integer expected, got %s)",
          i, type(p))
      end
      ports[p] = true
    end
  end
  local classes = common.set(opts.allow_classes)
  classes.public = true
  return setmetatable({
    schemes = common.set(opts.schemes or { "https", "http" }),
    allow_hosts = opts.allow_hosts, deny_hosts = opts.deny_hosts or {},
    ports = ports, classes = classes,
  }, UrlGuard)
end

function UrlGuard:describe()
  local s = {}
  for k in pairs(self.schemes) do s[#s + 1] = k end
  table.sort(s)
  return "schemes " .. table.concat(s, ", ")
end

--- Checks a URL and resolves its host.
-- @tparam string url
-- @treturn table the parsed URL and the address to connect to
-- @return or nil, err, "guard"
function UrlGuard:check(url)
  if type(url) ~= "string" then
    return violation("url.invalid", "expected a URL, got %s", type(url))
  end
  local scheme = url:match("^(%a[%w+.-]*):")
  if scheme and not self.schemes[scheme:lower()] then
    return violation("url.scheme", "scheme '%s' is not allowed", scheme:lower())
  end
  local u, why = parse(url)
  if not u then return violation("url.invalid", "'%s' is refused: %s", url, why) end
  u.port = u.port or DEFAULT_PORTS[u.scheme]
  if not u.port then return violation("url.invalid", "'%s' names no port", url) end
  if self.ports and not self.ports[u.port] then
    return violation("url.port", "port %d is not allowed", u.port)
  end
  if host_matches(u.host, self.deny_hosts) then
    return violation("url.host_denied", "host '%s' is denied", u.host)
  end
  if self.allow_hosts and not host_matches(u.host, self.allow_hosts) then
    return violation("url.host_not_allowed", "host '%s' is not allowed", u.host)
  end
  local addresses
  if core.address_class(u.host) then
    addresses = { { address = u.host, family = u.host:find(":", 1, true) and 6 or 4 } }
  else
    local err
    addresses, err = resolve(u.host)
    if not addresses or #addresses == 0 then
      return violation("url.unresolved", "host '%s' does not resolve (%s)", u.host,
        tostring(err or "no address"))
    end
  end
  for _, a in ipairs(addresses) do
    local class = core.address_class(a.address)
    if not self.classes[class] then
      return violation("url.address", "host '%s' resolves to %s, a %s address", u.host,
        a.address, (class or "unknown"):gsub("_", "-"))
    end
  end
  local pinned = addresses[1]
  u.address = pinned.address
  u.resolve = string.format("%s:%d:%s", u.host, u.port,
    pinned.family == 6 and "[" .. pinned.address .. "]" or pinned.address)
  return u
end

return { new = errors.public(new), UrlGuard = UrlGuard, parse = parse }
