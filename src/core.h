/*
 * core.h -- declarations shared by the C files of claude.core (private).
 */
#ifndef CLAUDE_CORE_H
#define CLAUDE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>
#include <lauxlib.h>
#include <uv.h>

#include "claude.h"

/* Every libuv handle the module owns starts with this header, so the
 * context can list, count and close its own handles even on a loop it
 * shares with the application. */
typedef struct claude_handle claude_handle;
typedef void (*claude_teardown_fn)(claude_handle *h);

struct claude_handle {
  struct claude_ctx *ctx;
  claude_handle *prev, *next;
  claude_teardown_fn teardown; /* closes the object's libuv handles */
  const char *kind;
};

/* Per-lua_State context, kept in the registry (no C globals). */
typedef struct claude_ctx {
  uv_loop_t *loop;
  uv_loop_t own_loop;
  int owns_loop;
  lua_State *L;        /* main thread */
  lua_State *run_L;    /* thread running uv_run through core.run, or NULL */
  int closing;         /* the state is going away: no more callbacks */
  int live_handles;    /* libuv handles not yet closed */
  int live_refs;       /* registry refs held for callbacks */
  int error_ref;       /* Lua error handler, or LUA_NOREF */
  claude_handle objects; /* list head of live objects */
  int pdeathsig;       /* setpriv is available for parent-death signals */
  int step_timer_init;
  uv_timer_t step_timer;
  int defer_init;         /* the check handle below exists */
  uv_check_t defer_check; /* runs deferred functions after this turn's I/O */
  uv_idle_t defer_idle;   /* while work is deferred, the loop must not block */
  int defer_ref;          /* Lua list of deferred functions, or LUA_NOREF */
} claude_ctx;

/* loop.c */
claude_ctx *claude_ctx_get(lua_State *L);
void claude_object_link(claude_ctx *ctx, claude_handle *h, const char *kind,
                        claude_teardown_fn teardown);
void claude_object_unlink(claude_handle *h);
void claude_handle_opened(claude_ctx *ctx);
void claude_handle_closed(claude_ctx *ctx);
int claude_ref(claude_ctx *ctx, lua_State *L, int idx);
void claude_unref(claude_ctx *ctx, int *ref);
lua_State *claude_cb_state(claude_ctx *ctx);
int claude_pcall(claude_ctx *ctx, lua_State *L, int nargs);
int claude_push_uv_error(lua_State *L, int err);
void claude_open_loop(lua_State *L);

/* process.c */
void claude_open_process(lua_State *L);

/* json.c (encoding, the module's entry points) and json_decode.c */
#define CLAUDE_JSON_ARRAY_MT "claude.json.array"
#define CLAUDE_JSON_OBJECT_MT "claude.json.object"
/* The decoder's nesting limit, counted from the outermost value (a message),
 * far above what a model sends; the encoder takes twice as much, so that a
 * decoded value still encodes inside envelopes. Neither uses the C stack
 * per level. */
#define CLAUDE_JSON_MAX_DEPTH 20000
void claude_open_json(lua_State *L);
/* Pushes the value and returns 1, or pushes nil and a message and returns 0;
 * raises only for memory errors. */
int claude_json_decode_push(lua_State *L, const char *s, size_t len);
/* core.json_peek_ids(line) -> request_id, id, type (json_decode.c) */
int claude_json_peek_ids(lua_State *L);
int claude_json_encode_buffer(lua_State *L, int idx, char **out, size_t *len);
int claude_json_encode_append(lua_State *L, int idx, char **buf, size_t *len, size_t *cap);

/* budget.c */
void claude_open_budget(lua_State *L);

/* router.c */
void claude_open_router(lua_State *L);

/* Line framing over a growing buffer (jsonl.c). */
typedef struct claude_lines {
  char *data;
  size_t len;       /* bytes held */
  size_t cap;
  size_t start;     /* first byte not handed out yet */
  size_t scanned;   /* bytes already searched for '\n' */
  size_t max_line;  /* ceiling for one line */
  int discarding;   /* skipping the rest of an oversized line */
} claude_lines;

enum { CLAUDE_LINE_NONE, CLAUDE_LINE, CLAUDE_LINE_OVERFLOW };

void claude_lines_init(claude_lines *lb, size_t max_line);
void claude_lines_free(claude_lines *lb);
void claude_lines_space(claude_lines *lb, size_t want, char **buf, size_t *len);
/* After a read of `nread` bytes into the space claude_lines_space gave. */
void claude_lines_feed(claude_lines *lb, size_t nread);
/* The next complete line (CLAUDE_LINE, *line and *len set), a line past the
 * ceiling (CLAUDE_LINE_OVERFLOW, *len = its size so far), or CLAUDE_LINE_NONE. */
int claude_lines_next(claude_lines *lb, const char **line, size_t *len);
/* At EOF: the last line when it had no '\n'; 1 once, then 0. */
int claude_lines_rest(claude_lines *lb, const char **line, size_t *len);

#define CLAUDE_DEFAULT_MAX_LINE ((size_t)64 * 1024 * 1024)

#endif
