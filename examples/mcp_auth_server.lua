-- mcp_auth_server.lua -- an MCP server over HTTP that only serves OAuth access tokens,
-- with notes kept per user: each tool sees who calls it in ctx.auth.
--
--   # tokens checked by your authorization server (RFC 7662 introspection):
--   CLAUDELUA_MCP_CLIENT_SECRET=... claudelua mcp --http 8080 \
--     examples/mcp_auth_server.lua https://as.example/introspect https://as.example my-rs-id
--
--   # or one static token per user, for a quick private deployment:
--   NOTES_TOKENS="alice=$(openssl rand -hex 32),bob=$(openssl rand -hex 32)" \
--     claudelua mcp --http 8080 examples/mcp_auth_server.lua
--
-- Clients get 401 with `WWW-Authenticate: Bearer resource_metadata=...`; an MCP client with
-- OAuth support (Claude Code, the TypeScript SDK's provider) follows it to the
-- authorization server. Reading needs the scope notes:read, adding notes:write.
local claude = require "claude"
local core = require "claude.core"

local introspection_url, issuer, client_id = ...

local notes = {} -- subject -> { note, ... }

local function mine(ctx)
  local who = ctx.auth.subject or ctx.auth.client_id
  notes[who] = notes[who] or {}
  return notes[who], who
end

-- Static tokens: NOTES_TOKENS="user=token,..." -> a verify function. The table is keyed by
-- the tokens' SHA-256, so that a look-up does not compare secrets byte by byte as they come.
local function static_tokens(list)
  local by_hash = {}
  for user, token in (list or ""):gmatch("([^=,%s]+)=([^,%s]+)") do
    by_hash[core.sha256(token)] = { sub = user, scope = "notes:read notes:write" }
  end
  assert(next(by_hash), "set NOTES_TOKENS=user=token,... or give an introspection URL")
  return function(token)
    return by_hash[core.sha256(token)] -- nil: 401 invalid_token
  end
end

local auth
if introspection_url then
  auth = { introspection_url = introspection_url, authorization_servers = { issuer },
    client_id = client_id, client_secret = client_id and os.getenv("CLAUDELUA_MCP_CLIENT_SECRET"),
    required_scopes = { "notes:read" }, scopes_supported = { "notes:read", "notes:write" },
    cache = 30 }
else
  auth = { verify = static_tokens(os.getenv("NOTES_TOKENS")),
    -- a private deployment: the metadata must still name an authorization server
    authorization_servers = { "https://auth.invalid" }, required_scopes = { "notes:read" } }
end
auth.resource_name = "Notes"

return claude.server("notes", {
  claude.tool("add_note", "Store a note (needs the scope notes:write)", { text = "string" },
    function(args, ctx)
      if not ctx.auth:has_scope("notes:write") then
        return nil, "this token may read notes but not add them (scope notes:write)"
      end
      local list, who = mine(ctx)
      list[#list + 1] = args.text
      return ("stored as %s's note #%d"):format(who, #list)
    end),
  claude.tool("list_notes", "The caller's notes", {}, function(_, ctx)
    local list, who = mine(ctx)
    if #list == 0 then return who .. " has no notes" end
    return table.concat(list, "\n")
  end),
}, { auth = auth, instructions = "Notes of the signed-in user." })
