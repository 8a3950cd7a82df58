--- `claude.http`: HTTP on claude's loop, each side loaded on first use:
-- `claude.http.client` (libcurl: `request`, `stream`) and `claude.http.server`
-- (h2o: `listen`). See docs/http-server.md.
-- @module claude.http
local lazy = { client = "claude.http.client", server = "claude.http.server" }

return setmetatable({}, { __index = function(_, k)
  local name = lazy[k]
  if name then return require(name) end
end })
