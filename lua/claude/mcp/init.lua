--- `claude.mcp`: the MCP client side. `connect` opens one server (stdio or
-- HTTP), `manager` holds many. See docs/mcp-client.md.
-- @module claude.mcp
local M = {}

local client_mod, manager_mod

--- Connects to an MCP server; see claude.mcp.client.
-- @function connect
function M.connect(...)
  client_mod = client_mod or require "claude.mcp.client"
  return client_mod.connect(...)
end

--- Holds many servers; see claude.mcp.manager.
-- @function manager
function M.manager(...)
  manager_mod = manager_mod or require "claude.mcp.manager"
  return manager_mod.new(...)
end

--- Is `v` a client made by `connect`?
function M.is_client(v)
  client_mod = client_mod or require "claude.mcp.client"
  return client_mod.is_client(v)
end

-- The server side's modules, loaded on first use: `claude.mcp.http.listen(...)`.
local lazy = {
  tool = "claude.mcp.tool",               -- the DSL (claude.tool, claude.server, ...)
  content = "claude.mcp.content",         -- results (also claude.content)
  router = "claude.mcp.router",           -- running servers in-process
  http = "claude.mcp.server.http",        -- the Streamable HTTP transport
  http_auth = "claude.mcp.server.auth",   -- its OAuth bearer checks
  middleware = "claude.mcp.middleware",   -- around a server's requests
}

return setmetatable(M, { __index = function(_, k)
  local name = lazy[k]
  if name then return require(name) end
end })
