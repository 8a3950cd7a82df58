--- The `auth` option of a protected MCP server (the resource server's half of MCP
-- authorization): its fields and their rules, checked where the option is given (the tool
-- DSL's `claude.server`, `claude.mcp.http.listen`, the command line's flags), with no
-- transport loaded. What the fields do is the HTTP transport's (claude.mcp.server.auth).
-- @module claude.oauth.resource
local errors = require "claude.errors"
local urls = require "claude.url"

local M = {}

local type = type
local misuse, typename = errors.misuse, errors.typename


local FIELDS = {
  verify = "function", introspection_url = "string", jwks_url = "string",
  client_id = "string", client_secret = "string", client_auth = "string",
  issuer = "string", audience = "audience", algorithms = "list",
  resource = "string", authorization_servers = "list", scopes_supported = "list",
  required_scopes = "list", resource_name = "string", resource_documentation = "string",
  timeout = "number", cache = "number",
}

local function http_url(v)
  local u = urls.parse(v)
  return u ~= nil and (u.scheme == "http" or u.scheme == "https") and u.fragment == nil
end

local function list_of_strings(v)
  if type(v) ~= "table" then return false end
  local n = #v
  for k, s in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > n or type(s) ~= "string" or s == "" then
      return false
    end
  end
  return true
end

-- OAuth scope tokens (RFC 6749 section 3.3): no space, no quote, no backslash.
local function valid_scope(s)
  return s:find("^[!#-Z%[%]^-~]+$") ~= nil
end

--- The first problem of an `auth` option, for a caller that words it its own way (the
-- command line names its flags): nil when it is good (`false` and `nil` are "no auth").
-- @param spec the option's value
-- @return the field at fault (false: the option itself) and what is wrong, or nil
function M.problem(spec)
  if spec == nil or spec == false then return nil end
  local function bad(field, msg, ...) return field or false, msg:format(...) end
  if type(spec) ~= "table" then
    return bad(nil, "table or false expected, got %s", typename(spec))
  end
  for k, v in pairs(spec) do
    local want = FIELDS[k]
    if not want then return bad(tostring(k), "unknown field") end
    if want == "list" then
      if not list_of_strings(v) then
        return bad(k, "a list of strings expected, got %s", typename(v))
      end
    elseif want == "audience" then
      if v ~= false and type(v) ~= "string" and not list_of_strings(v) then
        return bad(k, "a string, a list of strings or false expected, got %s", typename(v))
      end
    elseif type(v) ~= want then
      return bad(k, "%s expected, got %s", want, typename(v))
    end
  end
  local forms = (spec.verify and 1 or 0) + (spec.introspection_url and 1 or 0)
    + (spec.jwks_url and 1 or 0)
  if forms ~= 1 then
    return bad(nil, "exactly one of 'verify', 'introspection_url' and 'jwks_url' expected, "
      .. "got %d", forms)
  end
  for _, f in ipairs { "introspection_url", "jwks_url", "resource", "resource_documentation" } do
    if spec[f] ~= nil and not http_url(spec[f]) then
      return bad(f, "an http(s) URL without a fragment expected, got '%s'", spec[f])
    end
  end
  for _, as in ipairs(spec.authorization_servers or {}) do
    if not http_url(as) then
      return bad("authorization_servers", "an http(s) URL expected, got '%s'", as)
    end
  end
  for _, f in ipairs { "scopes_supported", "required_scopes" } do
    for _, s in ipairs(spec[f] or {}) do
      if not valid_scope(s) then return bad(f, "'%s' is not a scope token", s) end
    end
  end
  if spec.client_auth ~= nil and spec.client_auth ~= "basic" and spec.client_auth ~= "post" then
    return bad("client_auth", "'basic' or 'post' expected, got '%s'", spec.client_auth)
  end
  if (spec.client_secret ~= nil or spec.client_auth ~= nil) and not spec.client_id then
    return bad("client_id", "needed with client_secret and client_auth")
  end
  if spec.client_id and not spec.introspection_url then
    return bad("client_id", "only with introspection_url")
  end
  if spec.cache ~= nil and not spec.introspection_url then
    return bad("cache", "only with introspection_url")
  end
  for _, f in ipairs { "issuer", "algorithms" } do
    if spec[f] ~= nil and not spec.jwks_url then return bad(f, "only with jwks_url") end
  end
  if spec.jwks_url and not spec.issuer then return bad("issuer", "needed with jwks_url") end
  if not spec.jwks_url and not (spec.authorization_servers and spec.authorization_servers[1])
  then
    return bad("authorization_servers", "needed: the URLs of the authorization servers "
      .. "clients get tokens from (the protected resource metadata names them)")
  end
  for _, f in ipairs { "timeout", "cache" } do
    if spec[f] ~= nil and (spec[f] < 0 or spec[f] ~= spec[f]) then
      return bad(f, "non-negative number expected")
    end
  end
end

--- Check an `auth` option: raises a misuse naming the field (call it under a public
-- function). `false` and `nil` are "no auth".
-- @param spec the option's value
-- @tparam string fname the public function's name, for the message
-- @return spec
function M.check(spec, fname)
  local field, why = M.problem(spec)
  if why == "unknown field" then errors.unknown_field(field, FIELDS, fname, "auth") end
  if field ~= nil then
    misuse("bad field '%s' to '%s' (%s)", "auth" .. (field and "." .. field or ""), fname, why)
  end
  return spec
end

return M
