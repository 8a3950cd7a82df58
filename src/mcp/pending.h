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
 * callback and returns 1 (*co: the coroutine the request wakes, or NULL), or
 * pushes nothing and returns 0. */
int claude_pending_take(lua_State *L, int idx, int idx_id, lua_State **co);
/* What the reader checks of the answer to request `id` (an integer) of the
 * set at idx (set:add's `usual`): CLAUDE_PENDING_USUAL, a modern tools/call's,
 * whose usual complete answer the reader builds without "resultType";
 * CLAUDE_PENDING_OBJECT, a legacy tools/call's, whose result must be an
 * object. Either way it wakes the request with claude_pending_wake's `usual`
 * when the check held; 0: nothing to check. */
enum { CLAUDE_PENDING_USUAL = 2, CLAUDE_PENDING_OBJECT = 3 };
int claude_pending_usual(lua_State *L, int idx, lua_Integer id);
/* Wakes the task at stack slot `task`, waiting in coroutine co for the
 * answer just taken from the set at slot `set` (an absolute index), with
 * `true` and the value at `result`, and nil and `true` after them when
 * `usual` (the answer was the usual complete result, its "resultType" left
 * out: Peer:request_written's `checked`): claude_task_wake's, returns 1, or 0
 * when co does not wait (the caller calls the task instead). May raise. */
int claude_pending_wake(lua_State *L, int set, lua_State *co, int task, int result,
                        int usual);
/* Adds core.pending to the module table on top of the stack. */
void claude_open_pending(lua_State *L);

#endif
