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

return M
