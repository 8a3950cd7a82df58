/*
 * mcp/envelope.h -- the JSON-RPC envelope of a tool call (and of the answer
 * to a request) read in C, decoded only as far as routing needs (private).
 */
#ifndef CLAUDE_MCP_ENVELOPE_H
#define CLAUDE_MCP_ENVELOPE_H

#include <stddef.h>

#include "context.h"

/* The longest id the control reader holds back (claude_call_ids). */
#define CLAUDE_CALL_ID_MAX 64

/* The ids of a control request a stream's callback is handling, which the
 * control reader copies here instead of making them Lua strings: the request
 * id, only echoed in the answer, and the tool use id, read only when the call
 * waits or its tool sees its ctx. Lua gets core.MCP_REQUEST_ID and
 * core.MCP_TOOL_USE_ID for them; write_pieces writes them (claude_call_id),
 * core.call_id(v) makes them strings. They live in the line's frame, in the
 * C frame that calls the callback (the stream's deliver_lines_p), which
 * points the state's context at it while it runs (claude_ctx.line_frame);
 * the stream's writes spell them through claude_ctx.held_piece. */
typedef struct claude_call_ids {
  size_t rid_len, tuid_len; /* (size_t)-1: not held */
  char rid[CLAUDE_CALL_ID_MAX], tuid[CLAUDE_CALL_ID_MAX];
} claude_call_ids;

/* What a reader keeps between the lines of one stream: the last envelope of
 * the modern era it read (mcp/envelope.c), its text and version held by
 * registry refs. The stream owns it (claude_envelope_state_init, _release).
 * `ids`: where the control reader holds back the ids of the line it reads,
 * or NULL (it makes them strings). */
typedef struct claude_envelope_state {
  const char *members; /* its members as the line spelled them (in the text) */
  size_t len;          /* their length; 0: none kept */
  unsigned bits;       /* which keys of _meta they are */
  int text_ref, version_ref;
  int keys_ref; /* the response reader's keys of a usual result, made once */
  claude_call_ids *ids;
} claude_envelope_state;

/* Whether the value at idx is an id the control reader held back: 1 with its
 * bytes (a JSON string's, without the quotes or escapes) when the line is
 * still being handled, -1 when it no longer is, 0 for any other value. */
int claude_call_id(claude_ctx *ctx, lua_State *L, int idx, const char **s, size_t *n);

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

/* mcp/answer.c: the "response" reader (claude_envelope_of("response")). */
int claude_envelope_read_response(lua_State *L, const char *line, size_t len, int bound,
                                  claude_envelope_state *state);
/* mcp/answer.c: adds core.RPC_RESULT and core.usual_call to the module table on
 * top (claude_open_envelope calls it). */
void claude_open_answer(lua_State *L);

/* Adds core.MCP_CALL and core.RPC_RESULT (the first value a callback gets
 * for a line read by an envelope reader) to the module table on top. */
void claude_open_envelope(lua_State *L);
/* Adds core.envelope_reader, the envelope readers as line readers of a
 * stream (mcp/reader.c). */
void claude_open_reader(lua_State *L);

#endif
