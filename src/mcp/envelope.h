/*
 * mcp/envelope.h -- the JSON-RPC envelope of a tool call (and of the answer
 * to a request) read in C, decoded only as far as routing needs (private).
 */
#ifndef CLAUDE_MCP_ENVELOPE_H
#define CLAUDE_MCP_ENVELOPE_H

#include <stddef.h>

#include "context.h"

/* What a reader keeps between the lines of one stream: the last envelope of
 * the modern era it read (mcp/envelope.c), its text and version held by
 * registry refs. The stream owns it (claude_envelope_state_init, _release). */
typedef struct claude_envelope_state {
  const char *members; /* its members as the line spelled them (in the text) */
  size_t len;          /* their length; 0: none kept */
  unsigned bits;       /* which keys of _meta they are */
  int text_ref, version_ref;
} claude_envelope_state;

void claude_envelope_state_init(claude_envelope_state *st);
void claude_envelope_state_release(lua_State *L, claude_envelope_state *st);

/* What a stream hands its callback for one line when the line has the usual
 * shape of its kind; returns how many values it pushed, or 0 (nothing
 * pushed): the stream decodes the line whole, as without it; or -1: it pushed
 * a function and its one argument, which the stream calls instead of its
 * callback (the answer to a request waiting in the set bound to the reader);
 * or CLAUDE_ENVELOPE_DONE: nothing pushed, the line was handled (the answer
 * resumed the task waiting for it: claude_pending_wake).
 * `bound`: the stack index of the value bound to the reader (a core.pending
 * set for "response"), or 0; `state`: the stream's (or NULL: none kept). */
#define CLAUDE_ENVELOPE_DONE (-2)
typedef int (*claude_envelope_fn)(lua_State *L, const char *line, size_t len, int bound,
                                  claude_envelope_state *state);

/* The reader of `kind` ("control", "request", "response"), or NULL. */
claude_envelope_fn claude_envelope_of(const char *kind);

/* Adds core.MCP_CALL and core.RPC_RESULT (the first value a callback gets
 * for a line read by an envelope reader) to the module table on top. */
void claude_open_envelope(lua_State *L);

#endif
