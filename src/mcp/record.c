/*
 * mcp/record.c -- the call record filled in C. Every reader hands the router
 * the same record (lua/claude/mcp/call.lua): the envelope readers fill the
 * one their transport gave them, so a tool call reaches Lua as two values,
 * the mark and the record, whichever reader read it.
 */
#include "mcp/record.h"

int claude_call_record_fill(lua_State *L, int record, int count) {
  int slot;
  /* the envelope readers' values are in the record's slot order (mcp/envelope.c:
   * S_ID first; claude.mcp.call: ID first); the top one first, as each store pops it */
  for (slot = count - 1; slot >= 1; slot--) lua_rawseti(L, record, slot);
  lua_pushvalue(L, record);
  return 2;
}
