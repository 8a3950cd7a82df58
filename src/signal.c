/*
 * signal.c -- claude.core.Signal: a signal watched by the loop; the Lua
 * function runs from the loop, never from a signal handler. A watcher made
 * to interrupt also stops the Lua that holds the loop when the signal comes
 * (watchdog.c), so that the function gets to run: the claudelua host's
 * SIGINT, `claudelua mcp`'s SIGTERM.
 */
#include <signal.h>
#include <stdlib.h>

#include "context.h"

#define MT_SIGNAL "claude.core.Signal"

static const char *const signal_names[] = {"int", "term", "hup", "quit", "usr1", "usr2", NULL};
static const int signal_numbers[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

typedef struct signal_obj {
  claude_handle hdr;
  uv_signal_t handle;
  int cb_ref;
  int closed;
  int name;      /* index into signal_names */
  int interrupt; /* registered with the context's watch (watchdog.c) */
} signal_obj;

static void signal_closed(uv_handle_t *h) {
  signal_obj *s = (signal_obj *)h->data;
  claude_handle_closed(s->hdr.ctx);
  free(s);
}

static void signal_teardown(claude_handle *h) {
  signal_obj *s = (signal_obj *)h;
  if (s->interrupt) {
    s->interrupt = 0;
    claude_watch_interest(&h->ctx->watch, signal_numbers[s->name], 0);
  }
  claude_unref(h->ctx, &s->cb_ref);
  s->closed = 1;
  uv_close((uv_handle_t *)&s->handle, signal_closed);
}

static void signal_fired(uv_signal_t *h, int signum) {
  signal_obj *s = (signal_obj *)h->data;
  claude_ctx *ctx = s->hdr.ctx;
  lua_State *L;
  if (ctx->closing || s->cb_ref == LUA_NOREF) return;
  L = claude_cb_state(ctx);
  if (s->interrupt) claude_watch_seen(&ctx->watch, signum);
  lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_ref);
  lua_pushinteger(L, signum);
  claude_pcall(ctx, L, 1);
}


/* core.signal(name, fn [, unref [, interrupt]]) -> claude.core.Signal; the
 * loop watches the signal, and fn runs from the loop (never from a signal
 * handler). An unref'd watcher does not keep the loop alive. With interrupt,
 * when the loop has not run fn 0.1 s after the signal came (Lua holds it),
 * the signal also raises "interrupted" in the coroutine the state is running
 * then (lua.c's SIGINT); when fn has not run a second after the signal came,
 * or the same signal comes again before, the process ends with status
 * 128 + signal (watchdog.c). */
static int l_signal(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  int name = luaL_checkoption(L, 1, NULL, signal_names), signum = signal_numbers[name];
  signal_obj **box;
  signal_obj *s;
  int err;
  luaL_checktype(L, 2, LUA_TFUNCTION);
  box = (signal_obj **)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  luaL_setmetatable(L, MT_SIGNAL);
  s = (signal_obj *)calloc(1, sizeof(*s));
  if (s == NULL) return luaL_error(L, "out of memory");
  uv_signal_init(ctx->loop, &s->handle);
  s->handle.data = s;
  s->name = name;
  claude_handle_opened(ctx);
  claude_object_link(ctx, &s->hdr, "signal", signal_teardown);
  s->cb_ref = claude_ref(ctx, L, 2);
  *box = s;
  err = uv_signal_start(&s->handle, signal_fired, signum);
  if (err != 0) return luaL_error(L, "uv_signal_start: %s", uv_strerror(err));
  claude_wake(ctx);
  if (lua_toboolean(L, 3)) uv_unref((uv_handle_t *)&s->handle);
  if (lua_toboolean(L, 4)) {
    /* after uv_signal_start: our handler goes in front of libuv's */
    if (claude_watch_interest(&ctx->watch, signum, 1) != 0)
      return luaL_error(L, "core.signal: cannot interrupt on SIG%s", signal_names[name]);
    s->interrupt = 1;
  }
  return 1;
}

/* core.interrupted(name) -> whether signal `name`, watched with `interrupt`,
 * arrived (its watcher may not have run yet: the interrupt ended the Lua that
 * held the loop first). */
static int l_interrupted(lua_State *L) {
  int name = luaL_checkoption(L, 1, NULL, signal_names);
  claude_ctx *ctx = claude_ctx_get(L);
  lua_pushboolean(L, claude_watch_received(&ctx->watch, signal_numbers[name]));
  return 1;
}

static int signal_close(lua_State *L) {
  signal_obj **box = (signal_obj **)luaL_checkudata(L, 1, MT_SIGNAL);
  signal_obj *s = *box;
  if (s == NULL) return 0;
  *box = NULL;
  if (!s->closed) {
    claude_object_unlink(&s->hdr);
    signal_teardown(&s->hdr);
  }
  return 0;
}

static int signal_tostring(lua_State *L) {
  signal_obj *s = *(signal_obj **)luaL_checkudata(L, 1, MT_SIGNAL);
  if (s == NULL) lua_pushliteral(L, "claude.core.Signal (closed)");
  else lua_pushfstring(L, "claude.core.Signal (%s)", signal_names[s->name]);
  return 1;
}

static const luaL_Reg signal_methods[] = {{"close", signal_close}, {NULL, NULL}};
static const luaL_Reg signal_metamethods[] = {
  {"__gc", signal_close}, {"__close", signal_close}, {"__tostring", signal_tostring},
  {"__index", NULL}, {NULL, NULL}};

/* Adds core.signal to the module table on top of the stack. */
void claude_open_signal(lua_State *L) {
  claude_new_class(L, MT_SIGNAL, signal_metamethods, signal_methods);
  lua_pushcfunction(L, l_signal);
  lua_setfield(L, -2, "signal");
  lua_pushcfunction(L, l_interrupted);
  lua_setfield(L, -2, "interrupted");
}
