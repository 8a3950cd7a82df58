-- An HTTP API's OpenAPI document (3.0 or 3.1, JSON) served as MCP tools, one per operation:
--
--   claudelua mcp examples/openapi.lua DOCUMENT [BASE_URL]
--
-- DOCUMENT is a file or an http(s) URL; BASE_URL, when given, replaces the document's
-- servers. OPENAPI_TOKEN, when set, is the bearer token (or API key) of every security
-- scheme of the document; OPENAPI_ALLOW_LOCAL=1 lets the calls reach loopback and private
-- addresses (an API of your own on this machine), which the URL guard refuses by default.
-- See docs/openapi.md.
local claude = require "claude"

local source, base_url = ...
if not source then
  error("usage: claudelua mcp examples/openapi.lua DOCUMENT [BASE_URL]", 0)
end

local guard = claude.guard.url {
  allow_classes = os.getenv("OPENAPI_ALLOW_LOCAL") == "1" and { "loopback", "private" } or nil,
}

-- the token for every scheme the document declares: the first usable one is sent
local auth
local token = os.getenv("OPENAPI_TOKEN")
if token then
  auth = setmetatable({}, { __index = function() return token end })
end

local server, err = claude.openapi.server("openapi", source, {
  base_url = base_url, guard = guard, auth = auth })
if not server then error(tostring(err), 0) end
return server
