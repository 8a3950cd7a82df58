/*
 * timer.c -- claude.core.Timer: a libuv timer calling a Lua function.
 */
#include <stdlib.h>

#include "context.h"

#define MT_TIMER "claude.core.Timer"

typedef struct timer_obj {
  claude_handle hdr;
  uv_timer_t handle;
  int cb_ref;
  int closed;
} timer_obj;

static void timer_closed(uv_handle_t *h) {
  timer_obj *t = (timer_obj *)h->data;
  claude_handle_closed(t->hdr.ctx);
  free(t);
}

static void timer_teardown(claude_handle *h) {
  timer_obj *t = (timer_obj *)h;
  claude_unref(h->ctx, &t->cb_ref);
  t->closed = 1;
  uv_close((uv_handle_t *)&t->handle, timer_closed);
}

static timer_obj **check_timer(lua_State *L) {
  return (timer_obj **)claude_check_object(L, 1, MT_TIMER);
}

static timer_obj *open_timer(lua_State *L) {
  timer_obj *t = *check_timer(L);
  if (t == NULL) luaL_error(L, "attempt to use a closed timer");
  return t;
}

static void timer_fired(uv_timer_t *h) {
  timer_obj *t = (timer_obj *)h->data;
  claude_ctx *ctx = t->hdr.ctx;
  lua_State *L;
  if (ctx->closing || t->cb_ref == LUA_NOREF) return;
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->cb_ref);
  claude_pcall(ctx, L, 0);
}

/* core.timer() -> a stopped claude.core.Timer */
static int l_timer(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  timer_obj **box = (timer_obj **)lua_newuserdatauv(L, sizeof(*box), 0);
  timer_obj *t;
  *box = NULL;
  luaL_setmetatable(L, MT_TIMER);
  t = (timer_obj *)calloc(1, sizeof(*t));
  if (t == NULL) return luaL_error(L, "out of memory");
  uv_timer_init(ctx->loop, &t->handle);
  t->handle.data = t;
  t->cb_ref = LUA_NOREF;
  claude_handle_opened(ctx);
  claude_object_link(ctx, &t->hdr, "timer", timer_teardown);
  *box = t;
  return 1;
}

/* timer:start(seconds, fn [, repeat_seconds]) */
static int timer_start(lua_State *L) {
  timer_obj *t = open_timer(L);
  double secs = luaL_checknumber(L, 2);
  double rep = luaL_optnumber(L, 4, 0);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  claude_unref(t->hdr.ctx, &t->cb_ref);
  t->cb_ref = claude_ref(t->hdr.ctx, L, 3);
  if (secs < 0) secs = 0;
  /* the loop's clock stands still while Lua runs (in a callback, or between
   * turns): a timer counted from it after a long stretch of Lua would be due
   * at once. A coarse clock read (vDSO) is cheap. */
  uv_update_time(t->hdr.ctx->loop);
  uv_timer_start(&t->handle, timer_fired, (uint64_t)(secs * 1000.0 + 0.5),
                 (uint64_t)(rep * 1000.0 + 0.5));
  claude_wake(t->hdr.ctx);
  lua_settop(L, 1);
  return 1;
}

/* timer:stop(): stops it and drops the callback */
static int timer_stop(lua_State *L) {
  timer_obj *t = open_timer(L);
  uv_timer_stop(&t->handle);
  claude_unref(t->hdr.ctx, &t->cb_ref);
  return 0;
}

/* timer:ref(on): whether the timer, while it runs, keeps the loop alive (a
 * new timer does; libuv's uv_ref/uv_unref). A timer armed lazily from one
 * wait to the next (claude.async's request deadlines) holds the loop only
 * while a wait is on. */
static int timer_ref(lua_State *L) {
  timer_obj *t = open_timer(L);
  if (lua_toboolean(L, 2)) uv_ref((uv_handle_t *)&t->handle);
  else uv_unref((uv_handle_t *)&t->handle);
  return 0;
}

static int timer_close(lua_State *L) {
  timer_obj **box = check_timer(L);
  timer_obj *t = *box;
  if (t == NULL) return 0;
  *box = NULL;
  if (!t->closed) {
    claude_object_unlink(&t->hdr);
    timer_teardown(&t->hdr);
  }
  return 0;
}

static int timer_tostring(lua_State *L) {
  timer_obj *t = *check_timer(L);
  if (t == NULL) lua_pushliteral(L, "claude.core.Timer (closed)");
  else lua_pushfstring(L, "claude.core.Timer (%s)",
                       uv_is_active((uv_handle_t *)&t->handle) ? "active" : "stopped");
  return 1;
}

static const luaL_Reg timer_methods[] = {
  {"start", timer_start}, {"stop", timer_stop}, {"ref", timer_ref}, {"close", timer_close},
  {NULL, NULL}};
static const luaL_Reg timer_metamethods[] = {
  {"__gc", timer_close}, {"__close", timer_close}, {"__tostring", timer_tostring},
  {"__index", NULL}, {NULL, NULL}};

/* Adds core.timer to the module table on top of the stack. */
void claude_open_timer(lua_State *L) {
  claude_new_class(L, MT_TIMER, timer_metamethods, timer_methods);
  lua_pushcfunction(L, l_timer);
  lua_setfield(L, -2, "timer");
}
