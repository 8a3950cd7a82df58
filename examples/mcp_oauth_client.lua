-- mcp_oauth_client.lua -- a remote MCP server that wants OAuth: sign in once
-- in the browser, keep the tokens, list and call the server's tools.
--
--   claudelua examples/mcp_oauth_client.lua https://mcp.example.com/mcp [tokens.json]
--
-- The first run registers the script with the server's authorization server
-- (dynamic client registration), opens the browser on its sign-in page and
-- waits for the redirect on http://127.0.0.1:8765/callback; the tokens go to
-- tokens.json (default ~/.config/claudelua-example/tokens.json, mode 0600).
-- Later runs use them, refreshed when they expire, without the browser.
-- OAUTH_PORT picks another redirect port; BROWSER another browser.
local claude = require "claude"
local oauth = require "claude.oauth"

local server = arg[1]
if not server then
  io.stderr:write("usage: claudelua mcp_oauth_client.lua <MCP server URL> [tokens.json]\n")
  os.exit(2)
end
local tokens = arg[2] or ((os.getenv("HOME") or ".") .. "/.config/claudelua-example/tokens.json")

-- The redirect URI is registered with the authorization server: a fixed
-- port keeps it the same from one run to the next.
local lb = assert(oauth.loopback { port = tonumber(os.getenv("OAUTH_PORT") or "8765") })

local c <close> = assert(claude.mcp.connect {
  url = server,
  auth = {
    client_name = "claudelua example",
    redirect_uri = lb.redirect_uri,
    on_authorize = lb.on_authorize,
    store = oauth.file_store(tokens),
  },
})

print(string.format("connected to %s %s", c.server_info.name or "?",
  c.server_info.version or ""))
for _, tool in ipairs(assert(c:list_tools())) do
  print("tool: " .. tool.name .. (tool.description and (" -- " .. tool.description) or ""))
end
local first = arg[3]
if first then
  local r = assert(c:call_tool(first, {}))
  for _, block in ipairs(r.content or {}) do
    if block.type == "text" then print(first .. ": " .. block.text) end
  end
end
