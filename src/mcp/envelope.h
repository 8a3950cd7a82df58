/*
 * mcp/envelope.h -- the JSON-RPC envelope of a tool call (and of the answer
 * to a request) read in C, decoded only as far as routing needs (private).
 */
#ifndef CLAUDE_MCP_ENVELOPE_H
#define CLAUDE_MCP_ENVELOPE_H

#include <stddef.h>

#include "context.h"

/* What a stream hands its callback for one line when the line has the usual
 * shape of its kind; returns how many values it pushed, or 0 (nothing
 * pushed): the stream decodes the line whole, as without it; or -1: it pushed
 * a function and its one argument, which the stream calls instead of its
 * callback (the answer to a request waiting in the set bound to the reader).
 * `bound`: the stack index of the value bound to the reader (a core.pending
 * set for "response"), or 0. */
typedef int (*claude_envelope_fn)(lua_State *L, const char *line, size_t len, int bound);

/* The reader of `kind` ("control", "request", "response"), or NULL. */
claude_envelope_fn claude_envelope_of(const char *kind);

/* Adds core.MCP_CALL and core.RPC_RESULT (the first value a callback gets
 * for a line read by an envelope reader) to the module table on top. */
void claude_open_envelope(lua_State *L);

#endif
