/*
 * context.c -- the per-lua_State context: its libuv loop, the objects that
 * own libuv handles, registry refs, protected callbacks into Lua, and the
 * functions that run the loop (directly, or a step at a time from somebody
 * else's loop: pollfd, timeout, step, and the wake that keeps pollfd
 * truthful) and defer work to the end of a turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "context.h"

static const char CTX_KEY = 'c'; /* its address keys the registry entry */

/* -------------------------------------------------------------------------
 * The wake: keeps claude.pollfd() truthful
 *
 * An application that runs its own event loop polls the descriptor of
 * claude's private loop and calls claude.step() when it is readable. Work
 * started outside step (a task, a timer, a process, a write, a query, from
 * the application's own callbacks) only queues libuv watchers: the kernel
 * learns of them at the loop's next turn, so nothing would ever make the
 * descriptor readable. claude_wake() sends on an async handle whose eventfd
 * is in the loop's epoll set: the descriptor becomes readable, the
 * application steps, and that turn registers the new watchers. Inside step
 * (or any turn of the loop) no wake is needed: the turn sees the work itself.
 * ---------------------------------------------------------------------- */

static void wake_cb(uv_async_t *h) { (void)h; }

static void wake_closed(uv_handle_t *h) {
  claude_handle_closed((claude_ctx *)h->data);
}

/* For a loop the context owns, right after uv_loop_init: the handle, and
 * one turn that cannot run anything else (the loop is new) so that its
 * descriptor joins the epoll set. Unreferenced: it never keeps the loop
 * alive. A loop the application owns is run by the application: no wake. */
static void wake_open(claude_ctx *ctx) {
  if (!ctx->owns_loop || ctx->wake_init) return;
  if (uv_async_init(ctx->loop, &ctx->wake, wake_cb) != 0) return;
  ctx->wake.data = ctx;
  ctx->wake_init = 1;
  claude_handle_opened(ctx);
  uv_run(ctx->loop, UV_RUN_NOWAIT);
  uv_unref((uv_handle_t *)&ctx->wake);
}

/* Called where work is added; cheap when the loop is running (nothing) and
 * when a wake is already pending (libuv sends once until the loop turns). */
void claude_wake(claude_ctx *ctx) {
  if (ctx->wake_init && ctx->run_L == NULL && !ctx->closing) uv_async_send(&ctx->wake);
}

static void wake_close(claude_ctx *ctx) {
  if (!ctx->wake_init) return;
  ctx->wake_init = 0;
  uv_close((uv_handle_t *)&ctx->wake, wake_closed);
}

/* -------------------------------------------------------------------------
 * Context
 * ---------------------------------------------------------------------- */

static void ctx_free_if_done(claude_ctx *ctx) {
  if (ctx->closing == 2 && ctx->live_handles == 0) free(ctx);
}

void claude_handle_opened(claude_ctx *ctx) { ctx->live_handles++; }

void claude_handle_closed(claude_ctx *ctx) {
  ctx->live_handles--;
  ctx_free_if_done(ctx);
}

void claude_object_link(claude_ctx *ctx, claude_handle *h, const char *kind,
                        claude_teardown_fn teardown) {
  h->ctx = ctx;
  h->kind = kind;
  h->teardown = teardown;
  h->next = ctx->objects.next;
  h->prev = &ctx->objects;
  ctx->objects.next->prev = h;
  ctx->objects.next = h;
  claude_wake(ctx); /* new work for an application that polls claude.pollfd() */
}

void claude_object_unlink(claude_handle *h) {
  if (h->next == NULL) return;
  h->prev->next = h->next;
  h->next->prev = h->prev;
  h->next = h->prev = NULL;
}

static void step_timer_closed(uv_handle_t *h) {
  claude_handle_closed((claude_ctx *)h->data);
}

/* __gc of the context: close every handle we own, then the loop if ours.
 * On a loop the application owns, the close callbacks arrive when it next
 * runs its loop, so the context outlives the state until the last one. The
 * same when the state closes from inside a callback (os.exit in a task):
 * uv_run cannot be re-entered, and the process is about to end. */
static int ctx_gc(lua_State *L) {
  claude_ctx **box = (claude_ctx **)lua_touserdata(L, 1);
  claude_ctx *ctx = *box;
  if (ctx == NULL) return 0;
  *box = NULL;
  ctx->closing = 1;
  wake_close(ctx);
  while (ctx->objects.next != &ctx->objects) {
    claude_handle *h = ctx->objects.next;
    claude_object_unlink(h);
    h->teardown(h);
  }
  /* after the signal watchers gave up their interest in it */
  claude_watch_close(&ctx->watch);
  if (ctx->step_timer_init) {
    ctx->step_timer_init = 0;
    uv_close((uv_handle_t *)&ctx->step_timer, step_timer_closed);
  }
  if (ctx->defer_init) {
    ctx->defer_init = 0;
    uv_close((uv_handle_t *)&ctx->defer_check, step_timer_closed);
    uv_close((uv_handle_t *)&ctx->defer_idle, step_timer_closed);
  }
  if (ctx->owns_loop && ctx->run_L == NULL) {
    while (ctx->live_handles > 0 && uv_run(ctx->loop, UV_RUN_ONCE)) {
    }
    uv_run(ctx->loop, UV_RUN_NOWAIT);
    if (uv_loop_close(ctx->loop) != 0)
      fprintf(stderr, "claude: loop closed with %d live handles\n", ctx->live_handles);
    free(ctx);
    return 0;
  }
  ctx->closing = 2;
  ctx_free_if_done(ctx);
  return 0;
}

static int ctx_tostring(lua_State *L) {
  claude_ctx *ctx = *(claude_ctx **)lua_touserdata(L, 1);
  if (ctx == NULL) lua_pushliteral(L, "claude.core.Context (closed)");
  else lua_pushfstring(L, "claude.core.Context (%d handles)", ctx->live_handles);
  return 1;
}

static claude_ctx *ctx_create(lua_State *L, uv_loop_t *loop) {
  claude_ctx **box = (claude_ctx **)lua_newuserdatauv(L, sizeof(*box), 0);
  claude_ctx *ctx = (claude_ctx *)calloc(1, sizeof(*ctx));
  *box = NULL;
  if (ctx == NULL) luaL_error(L, "claude: out of memory");
  claude_watch_init(&ctx->watch);
  if (loop == NULL) {
    int err = uv_loop_init(&ctx->own_loop);
    if (err != 0) {
      free(ctx);
      luaL_error(L, "claude: uv_loop_init: %s", uv_strerror(err));
    }
    ctx->loop = &ctx->own_loop;
    ctx->owns_loop = 1;
  } else {
    ctx->loop = loop;
  }
  *box = ctx;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  ctx->L = lua_tothread(L, -1);
  lua_pop(L, 1);
  ctx->error_ref = LUA_NOREF;
  ctx->defer_ref = LUA_NOREF;
  ctx->objects.next = ctx->objects.prev = &ctx->objects;
  ctx->pdeathsig = access("/usr/bin/setpriv", X_OK) == 0;
  wake_open(ctx);
  if (luaL_newmetatable(L, "claude.core.Context")) {
    lua_pushcfunction(L, ctx_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, ctx_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &CTX_KEY);
  return ctx;
}

/* The registry's box is NULL from the start of ctx_gc on. */
claude_ctx *claude_ctx_find(lua_State *L) {
  claude_ctx *ctx = NULL;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &CTX_KEY) == LUA_TUSERDATA)
    ctx = *(claude_ctx **)lua_touserdata(L, -1);
  lua_pop(L, 1);
  return ctx;
}

claude_ctx *claude_ctx_get(lua_State *L) {
  claude_ctx *ctx = claude_ctx_find(L);
  if (ctx == NULL) ctx = ctx_create(L, NULL);
  return ctx;
}

int claude_set_loop(lua_State *L, uv_loop_t *loop) {
  claude_ctx *ctx = claude_ctx_find(L);
  if (ctx != NULL) return ctx->loop == loop ? 0 : -1;
  ctx_create(L, loop);
  return 0;
}

uv_loop_t *claude_get_loop(lua_State *L) { return claude_ctx_get(L)->loop; }

/* -------------------------------------------------------------------------
 * Refs and protected calls
 * ---------------------------------------------------------------------- */

/* Pushes the registry's table at `key`, made on first use with weak `mode`
 * ("k" or "v"): a state-wide side table that keeps nothing alive. */
void claude_registry_weak(lua_State *L, const void *key, const char *mode) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushstring(L, mode);
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

int claude_ref(claude_ctx *ctx, lua_State *L, int idx) {
  lua_pushvalue(L, idx);
  ctx->live_refs++;
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

void claude_unref(claude_ctx *ctx, int *ref) {
  if (*ref == LUA_NOREF || *ref == LUA_REFNIL) return;
  luaL_unref(ctx->L, LUA_REGISTRYINDEX, *ref);
  ctx->live_refs--;
  *ref = LUA_NOREF;
}

lua_State *claude_cb_state(claude_ctx *ctx) {
  return ctx->run_L != NULL ? ctx->run_L : ctx->L;
}

static int traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL && !lua_isnoneornil(L, 1)) return 1; /* error object: keep */
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the function below `nargs` arguments on L's stack, protected; an
 * error goes to the Lua error handler (claude.on_error) or stderr. Pops the
 * function and arguments; returns the lua_pcall status. */
int claude_pcall(claude_ctx *ctx, lua_State *L, int nargs) {
  int base = lua_gettop(L) - nargs;
  int status;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  status = lua_pcall(L, nargs, 0, base);
  if (status != LUA_OK) {
    if (ctx->error_ref != LUA_NOREF && !ctx->closing) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->error_ref);
      lua_insert(L, -2);
      if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        fprintf(stderr, "claude: error in error handler: %s\n", luaL_tolstring(L, -1, NULL));
        lua_pop(L, 2);
      }
    } else {
      fprintf(stderr, "claude: %s\n", luaL_tolstring(L, -1, NULL));
      lua_pop(L, 2);
    }
  }
  lua_remove(L, base);
  return status;
}

/* Pushes the fail triple for a libuv error: nil, "ENOENT: message", "ENOENT". */
int claude_push_uv_error(lua_State *L, int err) {
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", uv_err_name(err), uv_strerror(err));
  lua_pushstring(L, uv_err_name(err));
  return 3;
}

/* -------------------------------------------------------------------------
 * Running the loop
 * ---------------------------------------------------------------------- */

static int run_guarded(lua_State *L, claude_ctx *ctx, uv_run_mode mode) {
  int alive;
  if (ctx->run_L != NULL)
    return luaL_error(L, "the claude loop is already running: a wait outside a task "
                         "cannot happen inside a callback or a foreign coroutine "
                         "(run the code in claude.spawn)");
  ctx->run_L = L;
  ctx->run_nowait = mode == UV_RUN_NOWAIT;
  alive = uv_run(ctx->loop, mode);
  ctx->run_nowait = 0;
  ctx->run_L = NULL;
  return alive;
}

/* core.stop(): a run of the loop (core.run) returns after this turn */
static int l_stop(lua_State *L) {
  uv_stop(claude_ctx_get(L)->loop);
  return 0;
}

/* core.run([mode]) -> alive; mode "once" (default), "nowait" or "default" */
static int l_run(lua_State *L) {
  static const char *const modes[] = {"once", "nowait", "default", NULL};
  static const uv_run_mode values[] = {UV_RUN_ONCE, UV_RUN_NOWAIT, UV_RUN_DEFAULT};
  claude_ctx *ctx = claude_ctx_get(L);
  int mode = luaL_checkoption(L, 1, "once", modes);
  lua_pushboolean(L, run_guarded(L, ctx, values[mode]));
  return 1;
}

static void step_timer_fired(uv_timer_t *h) { (void)h; }

/* core.step([timeout]) -> alive: waits at most `timeout` seconds for events
 * and handles them, for applications that drive the loop from their own. */
static int l_step(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  double secs = luaL_optnumber(L, 1, 0);
  int alive;
  if (secs <= 0) {
    alive = run_guarded(L, ctx, UV_RUN_NOWAIT);
  } else {
    if (!ctx->step_timer_init) {
      uv_timer_init(ctx->loop, &ctx->step_timer);
      ctx->step_timer.data = ctx;
      ctx->step_timer_init = 1;
      claude_handle_opened(ctx);
    }
    uv_timer_start(&ctx->step_timer, step_timer_fired, (uint64_t)(secs * 1000.0 + 0.5), 0);
    alive = run_guarded(L, ctx, UV_RUN_ONCE);
    uv_timer_stop(&ctx->step_timer);
  }
  lua_pushboolean(L, alive);
  return 1;
}

/* core.pollfd() -> the loop's backend descriptor (readable when work is due) */
static int l_pollfd(lua_State *L) {
  lua_pushinteger(L, uv_backend_fd(claude_ctx_get(L)->loop));
  return 1;
}

/* core.timeout() -> seconds until the next timer, 0 if work is pending, or
 * nil when nothing is scheduled (libuv says 0 for an idle loop: we do not) */
static int l_timeout(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  int ms;
  uv_update_time(ctx->loop);
  ms = uv_backend_timeout(ctx->loop);
  if (ms < 0 || !uv_loop_alive(ctx->loop)) lua_pushnil(L);
  else lua_pushnumber(L, ms / 1000.0);
  return 1;
}

/* core.running() -> true while the loop runs (inside a callback) */
static int l_running(lua_State *L) {
  lua_pushboolean(L, claude_ctx_get(L)->run_L != NULL);
  return 1;
}

static int l_alive(lua_State *L) {
  lua_pushboolean(L, uv_loop_alive(claude_ctx_get(L)->loop));
  return 1;
}

/* core.now() -> seconds, monotonic, high resolution */
static int l_now(lua_State *L) {
  lua_pushnumber(L, (double)uv_hrtime() / 1e9);
  return 1;
}

/* core.unix_nanos(): the wall clock in nanoseconds since the epoch, an integer (a trace's
 * span times: OTLP wants them so, and a double loses the nanoseconds) */
static int l_unix_nanos(lua_State *L) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return luaL_error(L, "no wall clock");
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

/* Runs the functions deferred during this turn of the loop, each protected;
 * functions deferred meanwhile run in the next turn. */
static void defer_run(uv_check_t *h) {
  claude_ctx *ctx = (claude_ctx *)h->data;
  lua_State *L;
  int list, i, n;
  uv_check_stop(h);
  uv_idle_stop(&ctx->defer_idle);
  if (ctx->closing || ctx->defer_ref == LUA_NOREF) return;
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->defer_ref);
  list = lua_gettop(L);
  luaL_unref(L, LUA_REGISTRYINDEX, ctx->defer_ref);
  ctx->defer_ref = LUA_NOREF;
  ctx->live_refs--;
  n = (int)lua_rawlen(L, list);
  for (i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    claude_pcall(ctx, L, 0);
  }
  lua_pop(L, 1);
}

static void defer_idle_cb(uv_idle_t *h) { (void)h; }

/* core.defer(fn): runs fn once this turn of the loop has handled its I/O
 * (a libuv check handle), so work triggered by many messages of one read
 * can be done once for all of them. */
static int l_defer(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (!ctx->defer_init) {
    uv_check_init(ctx->loop, &ctx->defer_check);
    ctx->defer_check.data = ctx;
    uv_idle_init(ctx->loop, &ctx->defer_idle);
    ctx->defer_idle.data = ctx;
    ctx->defer_init = 1;
    claude_handle_opened(ctx);
    claude_handle_opened(ctx);
  }
  if (ctx->defer_ref == LUA_NOREF) {
    lua_createtable(L, 4, 0);
    ctx->defer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    ctx->live_refs++;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->defer_ref);
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  if (!uv_is_active((uv_handle_t *)&ctx->defer_check)) {
    uv_check_start(&ctx->defer_check, defer_run);
    uv_idle_start(&ctx->defer_idle, defer_idle_cb);
    claude_wake(ctx);
  }
  return 0;
}

/* core.set_error_handler(fn): where errors raised in callbacks go */
static int l_set_error_handler(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  claude_unref(ctx, &ctx->error_ref);
  if (!lua_isnoneornil(L, 1)) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    ctx->error_ref = claude_ref(ctx, L, 1);
  }
  return 0;
}

/* core.stats() -> { handles = n, refs = n, objects = {kind = n} } */
static int l_stats(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  claude_handle *h;
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, ctx->live_handles - ctx->step_timer_init - 2 * ctx->defer_init -
                         ctx->wake_init);
  lua_setfield(L, -2, "handles");
  lua_pushinteger(L, ctx->live_refs - (ctx->error_ref != LUA_NOREF) -
                         (ctx->defer_ref != LUA_NOREF));
  lua_setfield(L, -2, "refs");
  lua_newtable(L);
  for (h = ctx->objects.next; h != &ctx->objects; h = h->next) {
    lua_getfield(L, -1, h->kind);
    lua_pushinteger(L, luaL_optinteger(L, -1, 0) + 1);
    lua_setfield(L, -3, h->kind);
    lua_pop(L, 1);
  }
  lua_setfield(L, -2, "objects");
  return 1;
}

static const luaL_Reg context_functions[] = {
  {"run", l_run}, {"stop", l_stop}, {"step", l_step}, {"pollfd", l_pollfd}, {"timeout", l_timeout},
  {"alive", l_alive}, {"running", l_running}, {"now", l_now}, {"unix_nanos", l_unix_nanos}, {"defer", l_defer},
  {"set_error_handler", l_set_error_handler}, {"stats", l_stats}, {NULL, NULL}};

void claude_class_upvalues(lua_State *L, const char *name) {
  luaL_getmetatable(L, name);
  lua_pushlightuserdata(L, (void *)name);
}

/* Makes a metatable `name` with the metamethods and an __index table of the
 * methods, each a closure over the metatable and the name (claude_check_object);
 * leaves the stack as it was. */
void claude_new_class(lua_State *L, const char *name, const luaL_Reg *meta,
                      const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  claude_class_upvalues(L, name);
  luaL_setfuncs(L, meta, 2);
  lua_newtable(L);
  claude_class_upvalues(L, name);
  luaL_setfuncs(L, methods, 2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* Creates the context and adds the loop functions to the module table on
 * top of the stack. */
void claude_open_context(lua_State *L) {
  claude_ctx_get(L);
  luaL_setfuncs(L, context_functions, 0);
}
