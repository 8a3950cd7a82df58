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

--- A token store in memory (tokens last as long as the store).
-- @return `{ load = function(key), save = function(key, record) }`
function M.memory_store()
  return require("claude.oauth.store").memory()
end

return M
