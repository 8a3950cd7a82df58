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
 *   set:add(id, n, callback, method)   set:take(id) -> callback, method
 *   set:get(id) -> callback, method    set:ids() -> {id...}    set:waiting() -> n
 */
#include <stdlib.h>
#include <string.h>

#include "mcp/pending.h"

#define MT_PENDING "claude.core.Pending"
#define INITIAL_SIZE 64

enum { UV_CALLBACKS = 1, UV_METHODS, UV_OLD_CALLBACKS, UV_OLD_METHODS };

struct claude_pending {
  lua_Integer *ids;     /* the ring: the id at each slot */
  unsigned char *used;  /* whether the slot holds one */
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
  if (ids == NULL || used == NULL) {
    free(ids);
    free(used);
    return luaL_error(L, "out of memory");
  }
  free(p->ids);
  free(p->used);
  p->ids = ids;
  p->used = used;
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
                int cb, int method);

/* Doubles the ring and places every request again (their numbers are their ids: this set
 * serves integer ids only). */
static void grow(lua_State *L, int idx, claude_pending *p) {
  lua_Integer i, old_size = p->size, *old_ids = p->ids;
  unsigned char *old_used = p->used;
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
    add(L, idx, p, old_ids[i], old_ids[i], lua_gettop(L) - 1, lua_gettop(L));
    lua_pop(L, 2);
  }
  free(old_ids);
  free(old_used);
  lua_pushnil(L);
  while (lua_next(L, ocbs)) { /* id, callback */
    lua_Integer id = lua_tointeger(L, -2);
    lua_pushvalue(L, -2);
    lua_rawget(L, omethods);
    add(L, idx, p, id, id, lua_gettop(L) - 1, lua_gettop(L));
    lua_pop(L, 2);
  }
  lua_settop(L, top);
}

/* Adds request `id` (number n) with the callback and method at stack slots cb, method. */
static void add(lua_State *L, int idx, claude_pending *p, lua_Integer id, lua_Integer n,
                int cb, int method) {
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
  lua_pushvalue(L, cb);
  lua_rawseti(L, top + 1, s + 1);
  lua_pushvalue(L, method);
  lua_rawseti(L, top + 2, s + 1);
  p->count++;
  lua_settop(L, top);
  if (p->old_count > p->size / 2) grow(L, idx, p);
}

/* set:add(id, n, callback, method) */
static int pending_add(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  lua_Integer id = luaL_checkinteger(L, 2), n = luaL_checkinteger(L, 3);
  lua_settop(L, 5);
  add(L, 1, p, id, n, 4, 5);
  return 0;
}

/* Finds request `id` (the value at idx_id) of the set at idx: pushes its callback and method
 * and returns 1, removing it when `take`; or pushes nothing and returns 0. */
static int find(lua_State *L, int idx, claude_pending *p, int idx_id, int take) {
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

int claude_pending_take(lua_State *L, int idx, int idx_id) {
  return find(L, idx, (claude_pending *)lua_touserdata(L, idx), idx_id, 1);
}

/* set:take(id) -> callback, method | nil */
static int pending_take(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 1) ? 2 : 0;
}

/* set:get(id) -> callback, method | nil */
static int pending_get(lua_State *L) {
  claude_pending *p = check_set(L, 1);
  luaL_checkany(L, 2);
  return find(L, 1, p, 2, 0) ? 2 : 0;
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
  p->ids = NULL;
  p->used = NULL;
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
}
