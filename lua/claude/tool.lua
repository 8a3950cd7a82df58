--- The name `claude.tool` kept for code written before the MCP modules moved to
-- `lua/claude/mcp/`: it is `claude.mcp.tool`.
-- @module claude.tool
return require "claude.mcp.tool"
