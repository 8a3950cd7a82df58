/*
 * flat.c -- core.flat_validator(kinds, object_mt, slow, name...) -> validator.
 *
 * The input of most tools is an object of string, number and boolean
 * properties, some required (the shorthand's { a = "number", b = "string?" }).
 * Compiled to Lua closures (claude.schema.validator), checking one costs a
 * call per property and the calls of the wrapper around them: for two numbers
 * a fifth of a tool call's instructions. This validator accepts in one C call
 * what those closures accept, and hands everything else to `slow` (the
 * compiled validator itself), which says why: a value it passes is one the
 * closures pass, so the two never disagree.
 *
 * `kinds` has one byte per name: 's' string, 'n' number (finite), 'b'
 * boolean, 'x' any value (a required name without a property schema);
 * upper case when the name is required. The value passes when it is a table
 * with no metatable and no array part, or json.object's metatable, and each
 * name is absent (and not required) or of its kind. Names and kinds are
 * upvalues, so a check reads no table but the value.
 */
#include <math.h>

#include "schema/flat.h"

#define UV_KINDS lua_upvalueindex(1)
#define UV_OBJECT lua_upvalueindex(2)
#define UV_SLOW lua_upvalueindex(3)
#define FIRST_NAME 4
/* Upvalues of a C closure are at most 255. */
#define MAX_NAMES 64

static int slow(lua_State *L) {
  int n = lua_gettop(L);
  lua_pushvalue(L, UV_SLOW);
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  return lua_gettop(L);
}

static int check(lua_State *L) {
  size_t n, i;
  const char *kinds;
  if (lua_type(L, 1) != LUA_TTABLE) return slow(L);
  if (lua_getmetatable(L, 1)) {
    int same = lua_rawequal(L, -1, UV_OBJECT);
    lua_pop(L, 1);
    if (!same) return slow(L);
  } else if (lua_rawlen(L, 1) != 0) {
    return slow(L);
  }
  kinds = lua_tolstring(L, UV_KINDS, &n);
  for (i = 0; i < n; i++) {
    int t, ok;
    char k = kinds[i];
    lua_pushvalue(L, lua_upvalueindex(FIRST_NAME + (int)i));
    t = lua_rawget(L, 1);
    if (t == LUA_TNIL) {
      lua_pop(L, 1);
      if (k >= 'A' && k <= 'Z') return slow(L);
      continue;
    }
    switch (k | 0x20) {
      case 's': ok = t == LUA_TSTRING; break;
      case 'b': ok = t == LUA_TBOOLEAN; break;
      case 'n': ok = t == LUA_TNUMBER && (lua_isinteger(L, -1) || isfinite(lua_tonumber(L, -1)));
        break;
      default: ok = 1;
    }
    lua_pop(L, 1);
    if (!ok) return slow(L);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.flat_validator(kinds, object_mt, slow, name...) -> validator, or nil
 * when there are too many names for one closure's upvalues. */
static int l_flat_validator(lua_State *L) {
  size_t n;
  int i, top;
  luaL_checklstring(L, 1, &n);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  top = lua_gettop(L);
  if ((size_t)(top - 3) != n) return luaL_error(L, "flat_validator: one kind per name");
  for (i = FIRST_NAME; i <= top; i++) luaL_checktype(L, i, LUA_TSTRING);
  if (n > MAX_NAMES) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushcclosure(L, check, top);
  return 1;
}

void claude_open_flat(lua_State *L) {
  lua_pushcfunction(L, l_flat_validator);
  lua_setfield(L, -2, "flat_validator");
}
