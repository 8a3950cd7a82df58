/*
 * mcp/record.c -- the call record filled in C. Every reader hands the router
 * the same record (lua/claude/mcp/call.lua): the envelope readers fill the
 * one their transport gave them, so a tool call reaches Lua as two values,
 * the mark and the record, whichever reader read it.
 */
#include "mcp/record.h"

int claude_call_record_fill(lua_State *L, int record, int count, unsigned *filled) {
  unsigned was, now = 0;
  int slot;
  /* the envelope readers' values are in the record's slot order (mcp/envelope.c:
   * S_ID first; claude.mcp.call: ID first); the top one first, as each store pops it */
  if (filled == NULL) {
    for (slot = count - 1; slot >= 1; slot--) lua_rawseti(L, record, slot);
  } else { /* a store costs a call about 60 instructions: most calls leave the same slots empty */
    was = *filled;
    for (slot = count - 1; slot >= 1; slot--) {
      unsigned bit = 1u << slot;
      if (!lua_isnil(L, -1)) now |= bit;
      if ((now | was) & bit) lua_rawseti(L, record, slot);
      else lua_pop(L, 1);
    }
    *filled = now | (was & ~((1u << count) - 1u));
  }
  lua_pushvalue(L, record);
  return 2;
}
