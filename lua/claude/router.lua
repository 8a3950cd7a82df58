--- The name `claude.router` kept for code written before the MCP modules moved to
-- `lua/claude/mcp/`: it is `claude.mcp.router`.
-- @module claude.router
return require "claude.mcp.router"
