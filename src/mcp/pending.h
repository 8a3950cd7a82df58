/*
 * mcp/pending.h -- core.pending(): a JSON-RPC peer's requests waiting for their
 * answer, by integer id (private; pending.c).
 */
#ifndef CLAUDE_MCP_PENDING_H
#define CLAUDE_MCP_PENDING_H

#include "context.h"

typedef struct claude_pending claude_pending;

/* Whether the value at idx is a set (core.pending). */
int claude_is_pending(lua_State *L, int idx);
/* Takes request `id` (the value at idx_id) from the set at idx: pushes its
 * callback and method and returns 1, or pushes nothing and returns 0. */
int claude_pending_take(lua_State *L, int idx, int idx_id);
/* Adds core.pending to the module table on top of the stack. */
void claude_open_pending(lua_State *L);

#endif
