/*
 * pending.c -- core.pending(): the outbound requests of a JSON-RPC peer that
 * wait for their answer, their callbacks and methods by id (claude.rpc), kept
 * where the answer is read: a stream's envelope reader bound to the set
 * (stream:envelope("response", set)) finds the answer's request here and
 * calls its callback with the result, with no Lua in between.
 *
 * The same set as lua/claude/pending.lua (which serves ids that are not
 * integers), the same ring: a request numbered n lives at slot n % size, a
 * request still waiting when the ring comes round to its slot moves to a hash
 * of its own, and the ring doubles when that hash holds half as many. The
 * ids are C integers; the callbacks and methods live in the uservalue's
 * tables (1: the ring's callbacks, 2: its methods, 3 and 4: the hash's).
 *
 *   set:add(id, n, callback, method[, co])   set:take(id) -> callback, method
 *   set:get(id) -> callback, method    set:ids() -> {id...}    set:waiting() -> n
 *
 * A request added with `co` is a task's, waiting in async.wait_call in coroutine co (a task
 * with no budget): its answer, read by the reader bound to the set, resumes co here with
 * `true, result` (claude_pending_wake), with no Lua between the line and the task. The
 * task's side of the wake-up (its abort and status) is done by wait_call when it goes on;
 * a resume that does not end in the next wait goes to async's settle_step
 * (core.task_waker(SUSPEND, settle_step) registers both). A request that moved to the hash
 * is answered the usual way, its callback called.
 */
#include <stdlib.h>
#include <string.h>

#include "budget/budget.h"
#include "mcp/pending.h"

#define MT_PENDING "claude.core.Pending"
#define INITIAL_SIZE 64

enum { UV_CALLBACKS = 1, UV_METHODS, UV_OLD_CALLBACKS, UV_OLD_METHODS };

struct claude_pending {
  lua_Integer *ids;     /* the ring: the id at each slot */
  unsigned char *used;  /* whether the slot holds one */
  lua_State **cos;      /* the coroutine a slot's request wakes, or NULL (anchored by its task) */
  lua_Integer size;
  lua_Integer count;    /* requests waiting, in the ring and the hash */
  lua_Integer old_count;
};

static claude_pending *check_set(lua_State *L, int idx) {
  return (claude_pending *)claude_check_object(L, idx, MT_PENDING);
}

/* The slot of number n (Lua's n % size: never negative). */
static lua_Integer slot_of(const claude_pending *p, lua_Integer n) {
  lua_Integer r = n % p->size;
  return r < 0 ? r + p->size : r;
}

/* Pushes uservalue `which` of the set at idx. */
static void push_uv(lua_State *L, int idx, int which) { lua_getiuservalue(L, idx, which); }

static int alloc_ring(lua_State *L, claude_pending *p, lua_Integer size) {
  lua_Integer *ids = (lua_Integer *)calloc((size_t)size, sizeof *ids);
  unsigned char *used = (unsigned char *)calloc((size_t)size, 1);
  lua_State **cos = (lua_State **)calloc((size_t)size, sizeof *cos);
  if (ids == NULL || used == NULL || cos == NULL) {
    free(ids);
    free(used);
    free(cos);
    return luaL_error(L, "out of memory");
  }
  free(p->ids);
  free(p->used);
  free(p->cos);
  p->ids = ids;
  p->used = used;
  p->cos = cos;
  p->size = size;
  return 0;
}

/* New ring tables for the set at idx, of p->size slots. */
static void new_ring_tables(lua_State *L, int idx, const claude_pending *p) {
  lua_createtable(L, (int)p->size, 0);
  lua_setiuservalue(L, idx, UV_CALLBACKS);
  lua_createtable(L, (int)p->size, 0);
  lua_setiuservalue(L, idx, UV_METHODS);
}

static void add(lua_State *L, int idx, claude_pending *p, lua_Integer id, lua_Integer n,
                int cb, int method, lua_State *co);

/* Doubles the ring and places every request again (their numbers are their ids: this set
 * serves integer ids only). */
static void grow(lua_State *L, int idx, claude_pending *p) {
  lua_Integer i, old_size = p->size, *old_ids = p->ids;
  unsigned char *old_used = p->used;
  lua_State **old_cos = p->cos;
  int top = lua_gettop(L), cbs, methods, ocbs, omethods;
  push_uv(L, idx, UV_CALLBACKS);
  cbs = lua_gettop(L);
  push_uv(L, idx, UV_METHODS);
  methods = lua_gettop(L);
  push_uv(L, idx, UV_OLD_CALLBACKS);
  ocbs = lua_gettop(L);
  push_uv(L, idx, UV_OLD_METHODS);
  omethods = lua_gettop(L);
  p->ids = NULL;
  p->used = NULL;
  p->cos = NULL;
  alloc_ring(L, p, old_size * 2);
  new_ring_tables(L, idx, p);
  lua_newtable(L);
  lua_setiuservalue(L, idx, UV_OLD_CALLBACKS);
  lua_newtable(L);
  lua_setiuservalue(L, idx, UV_OLD_METHODS);
  p->count = p->old_count = 0;
  for (i = 0; i < old_size; i++) {
    if (!old_used[i]) continue;
    lua_rawgeti(L, cbs, i + 1);
    lua_rawgeti(L, methods, i + 1);
    add(L, idx, p, old_ids[i], old_ids[i], lua_gettop(L) - 1, lua_gettop(L), old_cos[i]);
    lua_pop(L, 2);
  }
  free(old_ids);
  free(old_used);
  free(old_cos);
  lua_pushnil(L);
  while (lua_next(L, ocbs)) { /* id, callback */
    lua_Integer id = lua_tointeger(L, -2);
    lua_pushvalue(L, -2);
    lua_rawget(L, omethods);
    add(L, idx, p, id, id, lua_gettop(L) - 1, lua_gettop(L), NULL);
    lua_pop(L, 2);
  }
  lua_settop(L, top);
}

/* Adds request `id` (number n) with the callback and method at stack slots cb, method; co:
 * the coroutine its answer resumes, or NULL. */
static void add(lua_State *L, int idx, claude_pending *p, lua_Integer id, lua_Integer n,
                int cb, int method, lua_State *co) {
  lua_Integer s = slot_of(p, n);
  int top = lua_gettop(L);
  push_uv(L, idx, UV_CALLBACKS);
  push_uv(L, idx, UV_METHODS);
  if (p->used[s]) { /* a request one lap older still waits: to the hash with it */
    lua_Integer held = p->ids[s];
    push_uv(L, idx, UV_OLD_CALLBACKS);
    lua_rawgeti(L, top + 1, s + 1);
    lua_rawseti(L, -2, held);
    push_uv(L, idx, UV_OLD_METHODS);
    lua_rawgeti(L, top + 2, s + 1);
    lua_rawseti(L, -2, held);
    p->old_count++;
  }
  p->ids[s] = id;
  p->used[s] = 1;
  p->cos[s] = co;
  lua_pushvalue(L, cb);
  lua_rawseti(L, top + 1, s + 1);
  lua_pushvalue(L, method);
  lua_rawseti(L, top + 2, s + 1);
  p->count++;
  lua_settop(L, top);
  if (p->old_count > p->size / 2) grow(L, idx, p);
}

/* set:add(id, n, callback, method[, co]) */
static int pending_add(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  lua_Integer id = luaL_checkinteger(L, 2), n = luaL_checkinteger(L, 3);
  lua_State *co = lua_tothread(L, 6);
  lua_settop(L, 5);
  add(L, 1, p, id, n, 4, 5, co);
  return 0;
}

/* Finds request `id` (the value at idx_id) of the set at idx: pushes its callback and method
 * and returns 1, removing it when `take` (*co: the coroutine it wakes, or NULL); or pushes
 * nothing and returns 0. */
static int find(lua_State *L, int idx, claude_pending *p, int idx_id, int take, lua_State **co) {
  int isint;
  lua_Integer id = lua_tointegerx(L, idx_id, &isint);
  if (isint && lua_isinteger(L, idx_id)) {
    lua_Integer s = slot_of(p, id);
    if (p->used[s] && p->ids[s] == id) {
      int base = lua_gettop(L);
      push_uv(L, idx, UV_CALLBACKS);
      push_uv(L, idx, UV_METHODS);
      lua_rawgeti(L, base + 1, s + 1);
      lua_rawgeti(L, base + 2, s + 1); /* callbacks, methods, callback, method */
      if (take) { /* (the slot keeps no reference) */
        if (co != NULL) *co = p->cos[s];
        p->cos[s] = NULL;
        p->used[s] = 0;
        p->count--;
        lua_pushboolean(L, 0);
        lua_rawseti(L, base + 1, s + 1);
        lua_pushboolean(L, 0);
        lua_rawseti(L, base + 2, s + 1);
      }
      lua_rotate(L, base + 1, 2);
      lua_settop(L, base + 2);
      return 1;
    }
  }
  if (p->old_count == 0 || lua_isnil(L, idx_id)) return 0;
  push_uv(L, idx, UV_OLD_CALLBACKS);
  lua_pushvalue(L, idx_id);
  if (lua_rawget(L, -2) == LUA_TNIL) {
    lua_pop(L, 2);
    return 0;
  }
  push_uv(L, idx, UV_OLD_METHODS);
  lua_pushvalue(L, idx_id);
  lua_rawget(L, -2); /* old_cbs, callback, old_methods, method */
  if (take) {
    lua_pushvalue(L, idx_id);
    lua_pushnil(L);
    lua_rawset(L, -6);
    lua_pushvalue(L, idx_id);
    lua_pushnil(L);
    lua_rawset(L, -4);
    p->old_count--;
    p->count--;
  }
  lua_remove(L, -2);
  lua_remove(L, -3);
  return 1;
}

int claude_pending_take(lua_State *L, int idx, int idx_id, lua_State **co) {
  *co = NULL;
  return find(L, idx, (claude_pending *)lua_touserdata(L, idx), idx_id, 1, co);
}

/* The registry keys of async's SUSPEND (what a task's wait yields) and settle_step. */
static const char SUSPEND_KEY = 's', SETTLE_KEY = 'S';

int claude_pending_wake(lua_State *L, lua_State *co, int task, int result) {
  int status, nres;
  if (co == L || lua_status(co) != LUA_YIELD || !lua_checkstack(co, 3)) return 0;
  lua_pushboolean(co, 1);
  lua_pushvalue(L, result);
  lua_xmove(L, co, 1);
  status = claude_resume(L, co, 2, &nres);
  if (status == LUA_YIELD && nres == 1) { /* waits again: yielded SUSPEND */
    int again;
    lua_rawgetp(co, LUA_REGISTRYINDEX, &SUSPEND_KEY);
    again = lua_rawequal(co, -1, -2);
    if (again) {
      lua_pop(co, 2);
      return 1;
    }
    lua_pop(co, 1);
  }
  /* anything else is settle_step's (task, co, ok, ...): as core.resume returns it */
  if (status != LUA_OK && status != LUA_YIELD) nres = 1; /* the error object */
  luaL_checkstack(L, nres + 4, "wake");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SETTLE_KEY);
  lua_pushvalue(L, task);
  lua_pushthread(co);
  lua_xmove(co, L, 1);
  lua_pushboolean(L, status == LUA_OK || status == LUA_YIELD);
  lua_xmove(co, L, nres);
  lua_call(L, nres + 3, 0);
  return 1;
}

/* core.task_waker(suspend, settle_step): async's, for claude_pending_wake */
static int l_task_waker(lua_State *L) {
  luaL_checkany(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SETTLE_KEY);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SUSPEND_KEY);
  return 0;
}

/* set:take(id) -> callback, method | nil */
static int pending_take(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 1, NULL) ? 2 : 0;
}

/* set:get(id) -> callback, method | nil */
static int pending_get(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 0, NULL) ? 2 : 0;
}

/* set:ids() -> the ids of the requests that wait */
static int pending_ids(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  lua_Integer i, n = 0;
  lua_createtable(L, (int)p->count, 0);
  for (i = 0; i < p->size; i++)
    if (p->used[i]) {
      lua_pushinteger(L, p->ids[i]);
      lua_rawseti(L, -2, ++n);
    }
  push_uv(L, 1, UV_OLD_CALLBACKS);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -4, ++n);
  }
  lua_pop(L, 1);
  return 1;
}

/* set:waiting() -> the number of requests that wait */
static int pending_waiting(lua_State *L) {
  lua_pushinteger(L, check_set(L, 1)->count);
  return 1;
}

static int pending_gc(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  free(p->ids);
  free(p->used);
  free(p->cos);
  p->ids = NULL;
  p->used = NULL;
  p->cos = NULL;
  p->size = 0;
  return 0;
}

static int pending_tostring(lua_State *L) {
  lua_pushfstring(L, MT_PENDING " (%I waiting)", (lua_Integer)check_set(L, 1)->count);
  return 1;
}

/* core.pending() -> an empty set */
static int l_pending(lua_State *L) {
  claude_pending *p = (claude_pending *)lua_newuserdatauv(L, sizeof *p, 4);
  memset(p, 0, sizeof *p);
  luaL_setmetatable(L, MT_PENDING);
  alloc_ring(L, p, INITIAL_SIZE);
  new_ring_tables(L, lua_gettop(L), p);
  lua_newtable(L);
  lua_setiuservalue(L, -2, UV_OLD_CALLBACKS);
  lua_newtable(L);
  lua_setiuservalue(L, -2, UV_OLD_METHODS);
  return 1;
}

int claude_is_pending(lua_State *L, int idx) {
  return luaL_testudata(L, idx, MT_PENDING) != NULL;
}

static const luaL_Reg methods[] = {{"add", pending_add}, {"take", pending_take},
                                   {"get", pending_get}, {"ids", pending_ids},
                                   {"waiting", pending_waiting}, {NULL, NULL}};

void claude_open_pending(lua_State *L) {
  luaL_newmetatable(L, MT_PENDING);
  luaL_newlibtable(L, methods);
  claude_class_upvalues(L, MT_PENDING); /* claude_check_object's */
  luaL_setfuncs(L, methods, 2);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, pending_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, pending_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_pending);
  lua_setfield(L, -2, "pending");
  lua_pushcfunction(L, l_task_waker);
  lua_setfield(L, -2, "task_waker");
}
