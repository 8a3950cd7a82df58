/*
 * trace/trace.h -- the C half of claude.trace (private to claude.core): a span's ids and
 * start time in one call (ids.c), and the OTLP/HTTP body of a batch of finished spans,
 * JSON or protobuf (otlp.c).
 */
#ifndef CLAUDE_TRACE_H
#define CLAUDE_TRACE_H

#include <lua.h>

/* Each adds its functions to the module table on top of the stack. */
void claude_open_trace_ids(lua_State *L);
void claude_open_otlp(lua_State *L);

#endif
