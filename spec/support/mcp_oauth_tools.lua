-- Tools for the OAuth spec with the TypeScript SDK (spec/e2e/mcp_oauth_spec.lua):
--   claudelua mcp --http 127.0.0.1:0 --introspection-url URL --authorization-server AS
--     --required-scopes mcp:tools mcp_oauth_tools.lua URL AS
-- `notes` (at /mcp) has no auth of its own: the command line's applies (introspection, scope
-- mcp:tools). `admin` (at /mcp/admin) has its own: the same authorization server, scope
-- mcp:admin. Both have `whoami`, which answers what the tool sees of the token (ctx.auth).
-- Without arguments (a server whose command line says --jwks-url), `notes` alone.
local claude = require "claude"
local json = require "claude.json"

local introspection_url, issuer = ...

local function whoami(server)
  return claude.tool("whoami", "What this call knows of its access token", {},
    function(_, ctx)
      local a = ctx.auth
      return json.encode { server = server, subject = a.subject or json.null,
        issuer = a.issuer or json.null,
        client_id = a.client_id, scopes = a.scopes, expires_at = a.expires_at,
        resource = a.resource, audience = a.claims.aud, has_tools = a:has_scope("mcp:tools") }
    end)
end

if not introspection_url then return claude.server("notes", { whoami("notes") }) end

return {
  claude.server("notes", { whoami("notes") }),
  claude.server("admin", { whoami("admin") }, { auth = {
    introspection_url = introspection_url,
    authorization_servers = { issuer },
    required_scopes = { "mcp:admin" },
    scopes_supported = { "mcp:tools", "mcp:admin" },
  } }),
}
