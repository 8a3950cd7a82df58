--- The name `claude.content` kept for code written before the MCP modules moved to
-- `lua/claude/mcp/`: it is `claude.mcp.content`.
-- @module claude.content
return require "claude.mcp.content"
