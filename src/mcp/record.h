/*
 * mcp/record.h -- the call record (claude.mcp.call) filled in C: what an
 * envelope reader read of a tool call (private).
 */
#ifndef CLAUDE_MCP_RECORD_H
#define CLAUDE_MCP_RECORD_H

#include <lua.h>

/* Moves what an envelope reader pushed for a tool call (core.MCP_CALL and
 * count - 1 values above it, at the top of the stack) into the slots 1 to
 * count - 1 of the record table at `record` (claude.mcp.call: ID, TOOL,
 * ARGS, META, TOKEN, TOOL_USE_ID, VERSION, then, from the control reader, TAG
 * and SERVER). Leaves core.MCP_CALL and the record; returns 2. `filled`:
 * the slots that hold a value, kept by the filler from one call to the next
 * (a slot nil then and now is not stored again), or NULL: every slot. */
int claude_call_record_fill(lua_State *L, int record, int count, unsigned *filled);

#endif
