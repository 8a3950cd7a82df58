--- claude.oauth: OAuth for remote MCP servers. The client itself runs
-- inside `claude.mcp.connect{ url = ..., auth = { ... } }` (see
-- claude.oauth.provider and docs/oauth.md); this module holds the helpers
-- an application gives it:
--
--     local oauth = require "claude.oauth"
--     local lb = assert(oauth.loopback { port = 8765 })
--     local c = assert(claude.mcp.connect { url = "https://mcp.example.com/mcp",
--       auth = { client_name = "my-app", redirect_uri = lb.redirect_uri,
--         on_authorize = lb.on_authorize,
--         store = oauth.file_store(os.getenv("HOME") .. "/.config/my-app/tokens.json") } })
-- @module claude.oauth
local errors = require "claude.errors"

local M = {}

--- A loopback redirect for interactive scripts: listens on 127.0.0.1 while
-- an authorization waits, opens the browser on the authorization URL and
-- returns the redirect the browser brings back.
-- @tparam[opt] table opts `port` (default 0: a free port, chosen at once),
--   `path` ("/callback"), `host` ("127.0.0.1"), `open_browser` (true:
--   $BROWSER, xdg-open or open; false: the URL is printed to stderr only; or
--   a function(url)), `timeout` (seconds to wait for the browser, 300)
-- @return `{ redirect_uri = ..., on_authorize = function(url) }`, for `auth`
--   | nil, err, kind when no port could be had
-- @function loopback
M.loopback = errors.public(function(opts)
  return require("claude.oauth.loopback").new(opts)
end)

--- A token store in a JSON file that only its owner can read or write
-- (mode 0600, replaced atomically), one record per MCP server (keyed by
-- its canonical URL).
-- @tparam string path
-- @return `{ load = function(key), save = function(key, record) }`
-- @function file_store
M.file_store = errors.public(function(path)
  errors.check(path, 1, "file_store", "string")
  return require("claude.oauth.store").file(path)
end)

--- Cross-app access (SEP-990, Enterprise-Managed Authorization): the
-- function for `auth.assertion` (with `grant = "jwt_bearer"`) that gets an
-- ID-JAG from the enterprise's identity provider, exchanging the user's ID
-- token for it (RFC 8693) with the authorization server's issuer as the
-- audience and the MCP server as the resource.
--
--     auth = { grant = "jwt_bearer", client_id = "my-app", client_secret = s,
--       assertion = oauth.id_jag { idp_token_endpoint = "https://idp.example/token",
--         id_token = function() return sso.id_token() end,
--         client_id = "my-app-at-idp", client_secret = idp_secret } }
-- @tparam table opts `idp_token_endpoint`, `id_token` (a string, or a
--   function returning one, called for each exchange), `client_id`,
--   `client_secret` (the client at the identity provider), `token_endpoint_auth_method`
--   (`client_secret_basic`, the default with a secret, `client_secret_post`, or `none`)
-- @return `function(ctx) -> ID-JAG | nil, err, "auth"`
-- @function id_jag
M.id_jag = errors.public(function(opts)
  return require("claude.oauth.id_jag").new(opts, "id_jag")
end)

--- A token store in memory (tokens last as long as the store).
-- @return `{ load = function(key), save = function(key, record) }`
function M.memory_store()
  return require("claude.oauth.store").memory()
end

-- The JWT and key-set modules, loaded on first use: `claude.oauth.jwt.sign(...)`.
local lazy = { jwt = "claude.oauth.jwt", jwks = "claude.oauth.jwks" }

return setmetatable(M, { __index = function(_, k)
  local name = lazy[k]
  if name then return require(name) end
end })
