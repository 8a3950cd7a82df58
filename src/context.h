/*
 * context.h -- the per-lua_State context (context.c) that every part of
 * claude.core is built on: the loop, the objects that own libuv handles,
 * registry refs, protected calls into Lua, classes; and the open functions
 * of the files at the top of src/ (core.c calls them). Private to
 * claude.core.
 */
#ifndef CLAUDE_CONTEXT_H
#define CLAUDE_CONTEXT_H

#include <stddef.h>

#include <lua.h>
#include <lauxlib.h>
#include <uv.h>

#include "claude.h"
#include "watch.h"

/* The default ceiling of one message a peer sends: a line (lines.c), an SSE
 * event, a collected HTTP body. */
#define CLAUDE_DEFAULT_MAX_LINE ((size_t)64 * 1024 * 1024)

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
  int wake_init;          /* the async handle below exists */
  uv_async_t wake;        /* makes the loop's descriptor readable */
  claude_watch watch;     /* the watchdog's side of the state (watchdog.c) */
  int run_nowait;         /* the loop runs a turn that must not sleep (claude.step's) */
  unsigned writes;        /* messages handed to peers (a stream's bytes, an HTTP response or
                           * request): the busy poll waits for an answer only after one */
  struct claude_busy_poll *busy_poll; /* busy_poll.c's, once a window was set */
  /* the scratch frame of the line whose callback runs, where the line's reader keeps what
   * the callback may still ask for (io/io.h: claude_line_reader), or NULL */
  void *line_frame;
  /* spells a light userdata piece of a stream's write_pieces that stands for bytes a line
   * reader holds aside (mcp/envelope.c: a control request's ids): 1 with the bytes, -1 when
   * no longer held, 0 when it is not one; NULL: no reader holds any */
  int (*held_piece)(struct claude_ctx *ctx, lua_State *L, int idx, const char **s, size_t *n);
} claude_ctx;

/* The state's context, made on first use (with a loop of its own unless
 * claude_set_loop gave one). */
claude_ctx *claude_ctx_get(lua_State *L);
/* The state's context, or NULL when it has none or it was closed (its __gc
 * ran): never makes one. */
claude_ctx *claude_ctx_find(lua_State *L);
void claude_object_link(claude_ctx *ctx, claude_handle *h, const char *kind,
                        claude_teardown_fn teardown);
void claude_object_unlink(claude_handle *h);
void claude_handle_opened(claude_ctx *ctx);
void claude_handle_closed(claude_ctx *ctx);
void claude_registry_weak(lua_State *L, const void *key, const char *mode);
int claude_ref(claude_ctx *ctx, lua_State *L, int idx);
void claude_unref(claude_ctx *ctx, int *ref);
lua_State *claude_cb_state(claude_ctx *ctx);
int claude_pcall(claude_ctx *ctx, lua_State *L, int nargs);
int claude_push_uv_error(lua_State *L, int err);
void claude_new_class(lua_State *L, const char *name, const luaL_Reg *meta,
                      const luaL_Reg *methods);
/* The userdata at idx when it is an object of class `name`: luaL_checkudata,
 * without its look-up of the metatable by name when the running function is
 * a method or metamethod of that class (claude_new_class gives them the
 * metatable and the name as upvalues 1 and 2): one compare on the hot paths
 * (a stream's write, a timer's ref, a pending set's add). Anything else takes
 * luaL_checkudata's way, which raises for a value of another kind. */
static inline void *claude_check_object(lua_State *L, int idx, const char *name) {
  void *p = lua_touserdata(L, idx);
  if (p != NULL && lua_touserdata(L, lua_upvalueindex(2)) == (const void *)name &&
      lua_getmetatable(L, idx)) {
    int same = lua_rawequal(L, -1, lua_upvalueindex(1));
    lua_pop(L, 1);
    if (same) return p;
  }
  return luaL_checkudata(L, idx, name);
}
/* The upvalues claude_check_object reads: pushes the metatable on top and the
 * name, for luaL_setfuncs(L, fns, 2) (claude_new_class, and a class made by
 * hand). */
void claude_class_upvalues(lua_State *L, const char *name);
/* Work was added: an application that polls claude.pollfd() must step. */
void claude_wake(claude_ctx *ctx);

/* Each adds its functions (and classes) to the module table on top of the
 * stack: the context's (run, step, pollfd, defer, ...), timer.c, signal.c,
 * os.c, fs.c, guard.c. */
void claude_open_context(lua_State *L);
void claude_open_timer(lua_State *L);
void claude_open_signal(lua_State *L);
void claude_open_os(lua_State *L);
void claude_open_fs(lua_State *L);
void claude_open_guard(lua_State *L);
void claude_open_busy_poll(lua_State *L);

#endif
