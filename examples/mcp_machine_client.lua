-- mcp_machine_client.lua -- a service calling a remote MCP server with no person in the
-- loop: OAuth client credentials, the client authenticated by a private key
-- (private_key_jwt, RFC 7523) rather than a shared secret.
--
--   claudelua examples/mcp_machine_client.lua https://mcp.example.com/mcp CLIENT_ID key.pem [tool]
--
-- The client is registered beforehand with the server's authorization server, with the
-- public half of key.pem (PKCS#8, SEC1 or PKCS#1 PEM; `openssl genpkey -algorithm EC
-- -pkeyopt ec_paramgen_curve:P-256 -out key.pem`). The library finds the authorization
-- server from the MCP server's challenge, signs a short-lived assertion for it with the
-- algorithm its metadata lists, and gets a new token whenever the old one expires.
-- KEY_ID names the key (the JWT's kid) when the server holds several; MCP_SCOPE a scope.
local claude = require "claude"

local server, client_id, key_file, tool = arg[1], arg[2], arg[3], arg[4]
if not key_file then
  io.stderr:write("usage: claudelua mcp_machine_client.lua <MCP server URL> <client id> "
    .. "<key.pem> [tool]\n")
  os.exit(2)
end
local f = assert(io.open(key_file, "rb"))
local pem = f:read("a")
f:close()

local c <close> = assert(claude.mcp.connect {
  url = server,
  auth = {
    grant = "client_credentials",
    client_id = client_id,
    private_key = pem,
    private_key_kid = os.getenv("KEY_ID"),
    scope = os.getenv("MCP_SCOPE"),
  },
})

print(string.format("connected to %s %s", c.server_info.name or "?",
  c.server_info.version or ""))
for _, t in ipairs(assert(c:list_tools())) do print("tool: " .. t.name) end
if tool then
  local r = assert(c:call_tool(tool, {}))
  for _, block in ipairs(r.content or {}) do
    if block.type == "text" then print(tool .. ": " .. block.text) end
  end
end
