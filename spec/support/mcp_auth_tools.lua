-- Tools for spec/integration/mcp_http_auth_spec.lua: servers with OAuth bearer checks.
--   notes (at /mcp): a verify function over the fixed tokens below; scope notes:read
--   intro (at /mcp/intro): RFC 7662 introspection at the URL given as the first argument,
--     with client credentials, answers cached for 60 s
--   open (at /mcp/open): auth = false (served without a token, on purpose)
-- Every token holds SECRET, so that a spec can grep for it in what the server says.
local claude = require "claude"
local json = require "claude.json"

local introspection_url = ...
local NOW = os.time()
local SHORT_EXP

local TOKENS = {
  ["alice-SECRET-1"] = { sub = "alice", iss = "https://as.example",
    scope = "notes:read notes:write", client_id = "app", exp = NOW + 3600, email = "a@x" },
  -- another token of alice (a refreshed one)
  ["alice-SECRET-2"] = { sub = "alice", iss = "https://as.example", scope = "notes:read",
    exp = NOW + 3600 },
  ["bob-SECRET-3"] = { sub = "bob", iss = "https://as.example", scope = "notes:read" },
  ["expired-SECRET-4"] = { sub = "alice", iss = "https://as.example", scope = "notes:read",
    exp = NOW - 10 },
  ["noscope-SECRET-5"] = { sub = "carol", scope = "other" },
  ["later-SECRET-6"] = { sub = "dave", scope = "notes:read", nbf = NOW + 3600 },
  ["list-SECRET-7"] = { sub = "erin", scp = { "notes:read", "x" } },
}

local function verify(token, request)
  if token == "raise-SECRET-8" then error("verifier crashed on " .. token) end
  if token == "down-SECRET-9" then return nil, "the key server is down", "unavailable" end
  if token == "hang-SECRET-10" then
    claude.sleep(3600)
  end
  if token == "slow-SECRET-11" then
    claude.sleep(0.05) -- verify may wait: it runs in the request's task
    return { sub = "slow", scope = "notes:read", path = request.path }
  end
  if token == "string-SECRET-12" then return "yes" end
  if token == "short-SECRET-13" then -- three seconds to live, from its first use
    SHORT_EXP = SHORT_EXP or os.time() + 3
    return { sub = "frank", scope = "notes:read", exp = SHORT_EXP }
  end
  local c = TOKENS[token]
  if not c then return nil, "unknown token '" .. token .. "'" end
  local copy = {}
  for k, v in pairs(c) do copy[k] = v end
  if token == "alice-SECRET-1" then copy.aud = { "https://elsewhere.example", request.resource } end
  return copy
end

local function whoami(name)
  return claude.tool("whoami", "What the call knows of its token", {}, function(_, ctx)
    local a = ctx.auth
    if not a then return json.encode { server = name, auth = json.null } end
    return json.encode { server = name, subject = a.subject or json.null,
      client_id = a.client_id or json.null, scopes = json.array(a.scopes),
      expires_at = a.expires_at or json.null, issuer = a.issuer or json.null,
      resource = a.resource, email = a.claims.email or json.null,
      write = a:has_scope("notes:write"), token_seen = (json.encode(a.claims):find("SECRET")
        or tostring(a):find("SECRET")) ~= nil }
  end)
end

return {
  claude.server("notes", {
    whoami("notes"),
    claude.resource { uri = "notes://me", name = "me", read = function(_, _, ctx)
      return "resource for " .. ctx.auth.subject end },
    claude.prompt { name = "me", get = function(_, ctx)
      return "prompt for " .. ctx.auth.subject end },
  }, { auth = {
    verify = verify,
    authorization_servers = { "https://as.example" },
    required_scopes = { "notes:read" },
    scopes_supported = { "notes:read", "notes:write" },
    resource_name = "Notes",
    timeout = 0.5,
  } }),
  claude.server("intro", { whoami("intro") }, { auth = introspection_url and {
    introspection_url = introspection_url, client_id = "rs id", client_secret = "rs:secret",
    authorization_servers = { "https://as.example" }, cache = 60,
  } or nil }),
  claude.server("open", { whoami("open") }, { auth = false }),
}
