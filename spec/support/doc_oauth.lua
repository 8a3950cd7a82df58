--- Runs a Lua block of the docs that reaches a remote MCP server with OAuth (docs/oauth.md,
-- docs/mcp-client.md) against the specs' scripted authorization server and protected MCP
-- server (support.oauth_server, in this process), which stand in for the doc's hosts:
--
--   <!-- doc: cmd claudelua spec/support/doc_oauth.lua SETUP FILE -->
--
-- The block runs as written but for its hosts: the URL of every `claude.mcp.connect` and the
-- identity provider's endpoint of every `claude.oauth.id_jag` lead to the stand-in, whatever
-- their host. What the block takes from its setting is made here:
--
--   browser    the authorization code grant: the browser `claude.oauth.loopback` opens is curl,
--              which follows the authorization server's redirect to the loopback; TOKEN holds
--              an access token the server accepts (for a static Authorization header)
--   machine    client credentials: `billing-sync` is registered with the public half of the
--              key written to billing-sync-key.pem
--   cross-app  cross-app access: `my-app` is registered (MY_APP_SECRET), the identity provider
--              knows `my-app-at-idp` (MY_IDP_SECRET), and the module `my_sso` gives the ID
--              token it accepts
local setup, script = arg[1], arg[2]
if not (setup and script) then
  io.stderr:write("usage: claudelua spec/support/doc_oauth.lua SETUP FILE\n")
  os.exit(2)
end
package.path = arg[0]:gsub("support/doc_oauth%.lua$", "?.lua") .. ";" .. package.path

local claude = require "claude"
local core = require "claude.core"
local http = require "claude.http.client"
local jwt = require "claude.oauth.jwt"
local oauth = require "claude.oauth"
local mcp = require "claude.mcp"
local oauth_server = require "support.oauth_server"

local function write(path, text, mode)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
  if mode then os.execute("chmod " .. mode .. " " .. path) end
end

local ID_TOKEN = "eyJhbGciOiJFUzI1NiJ9.doc-id-token.sig"
local cfg, browser_dir
if setup == "browser" then
  cfg = { client_id = "doc-static", client_secret = "doc-static-secret" }
  -- the browser: curl, following the redirect to the loopback that waits for it
  browser_dir = assert(core.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/doc-oauth-"))
  write(browser_dir .. "/browser", '#!/bin/sh\nexec curl -s -L -o /dev/null "$1"\n', "755")
  core.setenv("BROWSER", browser_dir .. "/browser")
elseif setup == "machine" then
  local key = assert(jwt.generate { alg = "ES256" })
  write("billing-sync-key.pem", key:pem(true), "600")
  cfg = { client_id = "billing-sync", client_key = key:public(), signing_algs = { "ES256" } }
elseif setup == "cross-app" then
  cfg = { client_id = "my-app", client_secret = os.getenv("MY_APP_SECRET"),
    idp = { id_token = ID_TOKEN, client_id = "my-app-at-idp",
      client_secret = os.getenv("MY_IDP_SECRET") } }
  package.preload.my_sso = function()
    return { current_id_token = function() return ID_TOKEN end }
  end
else
  error("doc_oauth: unknown setup '" .. setup .. "'")
end

local fake, mcp_url = oauth_server.start(cfg)

if setup == "browser" then
  -- a token for the static header, by the pre-registered client's credentials
  local r = assert(http.request { url = fake.base .. "/as/token", method = "POST",
    headers = { ["content-type"] = "application/x-www-form-urlencoded" },
    body = "grant_type=client_credentials&client_id=doc-static&client_secret=doc-static-secret"
      .. "&resource=" .. mcp_url })
  core.setenv("TOKEN", require("claude.json").decode(r.body).access_token)
end

-- the doc's hosts lead here
local connect, id_jag = mcp.connect, oauth.id_jag
mcp.connect = function(opts)
  if type(opts) == "table" and opts.url then opts.url = mcp_url end
  return connect(opts)
end
oauth.id_jag = function(opts)
  if type(opts) == "table" and opts.idp_token_endpoint then
    opts.idp_token_endpoint = fake.base .. "/idp/token"
  end
  return id_jag(opts)
end

local args = table.move(arg, 3, #arg, 1, {})
local chunk = assert(loadfile(script))
local ok, err = xpcall(chunk, debug.traceback, table.unpack(args))
fake.close()
if browser_dir then os.execute("rm -rf '" .. browser_dir .. "'") end
if not ok then
  io.stderr:write(tostring(err), "\n")
  os.exit(1)
end
claude.sleep(0) -- the block's to-be-closed clients are closed by now
