/*
 * compat/lua53.h -- the Lua 5.4 C API the core uses, over Lua 5.3's. The 5.3 module
 * (build/lua5.3/claude.so, CMakeLists.txt) compiles the same sources with this header
 * forced in first (-include), so that no file of the tree says which Lua it is built for:
 * each difference is answered once, here. The 5.4 build never sees this file.
 */
#ifndef CLAUDE_COMPAT_LUA53_H
#define CLAUDE_COMPAT_LUA53_H

/* Forced in first, this header's system headers come before a file's own feature macro:
 * the one a file of the tree sets (busy_poll.c, io/inherit.c), set for all, the same way. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM != 503
#error "compat/lua53.h is for Lua 5.3 builds only"
#endif

/* User values: 5.4 gives a userdata n of them; 5.3 one, so it holds a table of the n (made
 * with the userdata, as 5.4 makes them with it). */
static inline void *claude_lua53_newuserdatauv(lua_State *L, size_t size, int nuv) {
  void *p = lua_newuserdata(L, size);
  if (nuv > 0) {
    lua_createtable(L, nuv, 0);
    lua_setuservalue(L, -2);
  }
  return p;
}

static inline int claude_lua53_getiuservalue(lua_State *L, int idx, int n) {
  int type;
  idx = lua_absindex(L, idx);
  if (lua_getuservalue(L, idx) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
    return LUA_TNONE;
  }
  type = lua_rawgeti(L, -1, n);
  lua_remove(L, -2);
  return type;
}

static inline int claude_lua53_setiuservalue(lua_State *L, int idx, int n) {
  idx = lua_absindex(L, idx);
  if (lua_getuservalue(L, idx) != LUA_TTABLE) {
    lua_pop(L, 2);
    return 0;
  }
  lua_insert(L, -2);
  lua_rawseti(L, -2, n);
  lua_pop(L, 1);
  return 1;
}

#define lua_newuserdatauv(L, size, nuv) claude_lua53_newuserdatauv((L), (size), (nuv))
#define lua_getiuservalue(L, idx, n) claude_lua53_getiuservalue((L), (idx), (n))
#define lua_setiuservalue(L, idx, n) claude_lua53_setiuservalue((L), (idx), (n))

/* 5.4 counts a resume's results; in 5.3 they are the coroutine's whole stack. */
static inline int claude_lua53_resume(lua_State *co, lua_State *from, int narg, int *nres) {
  int status = lua_resume(co, from, narg);
  *nres = lua_gettop(co);
  return status;
}
#define lua_resume(co, from, narg, nres) claude_lua53_resume((co), (from), (narg), (nres))

/* 5.4's lua_gc takes its options as they come; 5.3's always one int. */
static inline int claude_lua53_gc(lua_State *L, int what, int data, ...) {
  return lua_gc(L, what, data);
}
#define lua_gc(L, ...) claude_lua53_gc((L), __VA_ARGS__, 0)

/* Closing a coroutine runs its to-be-closed variables, which 5.3 has not, and leaves it dead.
 * 5.3 makes a suspended coroutine dead by resuming it under a hook that raises before each
 * instruction: the error unwinds every frame (a pcall that catches it raises again at the
 * next instruction of its caller), and no code of the coroutine runs. */
static inline void claude_lua53_unwind(lua_State *co, lua_Debug *ar) {
  (void)ar;
  lua_pushliteral(co, "coroutine closed");
  lua_error(co);
}

static inline int claude_lua53_resetthread(lua_State *co) {
  if (lua_status(co) == LUA_YIELD) {
    lua_Hook hook = lua_gethook(co);
    int mask = lua_gethookmask(co), count = lua_gethookcount(co);
    lua_sethook(co, claude_lua53_unwind, LUA_MASKCOUNT, 1);
    (lua_resume)(co, NULL, 0);
    lua_sethook(co, hook, mask, count);
  }
  lua_settop(co, 0);
  return LUA_OK;
}
#define lua_resetthread(co) claude_lua53_resetthread(co)

/* The 5.4 auxiliary library's additions. */
#define luaL_pushfail(L) lua_pushnil(L)
#define luaL_bufflen(bf) ((bf)->n)
#define luaL_buffaddr(bf) ((bf)->b)

/* 5.4's message: "<tname> expected, got <the value's __name or type>". */
static inline int claude_lua53_typeerror(lua_State *L, int arg, const char *tname) {
  const char *got;
  if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING)
    got = lua_tostring(L, -1);
  else if (lua_type(L, arg) == LUA_TLIGHTUSERDATA)
    got = "light userdata";
  else
    got = luaL_typename(L, arg);
  return luaL_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", tname, got));
}
#define luaL_typeerror(L, arg, tname) claude_lua53_typeerror((L), (arg), (tname))
#define luaL_argexpected(L, cond, arg, tname) \
  ((void)((cond) || claude_lua53_typeerror((L), (arg), (tname))))

#endif
