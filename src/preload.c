/*
 * preload.c -- claude_preload and luaopen_claude: the Lua half of the module
 * from the text compiled into the binary (embedded.h), so the host and
 * applications that link libclaudelua need no Lua files on disk.
 */
#include <lauxlib.h>

#include "claude.h"
#include "embedded.h"

/* The package.preload loader of one module, its entry as the upvalue:
 * loads the text (or the host's bytecode) and runs it with the arguments require passes (the
 * name and ":preload:"), as a file loader does. */
static int load_embedded(lua_State *L) {
  const claude_embedded *m = (const claude_embedded *)lua_touserdata(L, lua_upvalueindex(1));
  if (luaL_loadbufferx(L, (const char *)m->source, m->size, m->chunkname,
                        claude_embedded_mode) != LUA_OK)
    return lua_error(L);
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

void claude_preload(lua_State *L) {
  const claude_embedded *m;
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_claude_core);
  lua_setfield(L, -2, "claude.core");
  for (m = claude_embedded_modules; m->name != NULL; m++) {
    lua_pushlightuserdata(L, (void *)m);
    lua_pushcclosure(L, load_embedded, 1);
    lua_setfield(L, -2, m->name);
  }
  lua_pop(L, 1);
}

int luaopen_claude(lua_State *L) {
  claude_preload(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "claude");
  lua_call(L, 1, 1);
  return 1;
}
