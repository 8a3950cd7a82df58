/*
 * harness.h -- the Lua state the libFuzzer targets share: standard
 * libraries, claude.core, the source tree's Lua files on package.path, and a
 * check function (a Lua chunk) run in a protected call per input. A check
 * that raises is a finding: the target aborts with its message.
 */
#ifndef CLAUDE_FUZZ_HARNESS_H
#define CLAUDE_FUZZ_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "claude.h"

/* A state with the chunk `check` compiled (called as check(text)); the
 * chunk gets the module table as `...` first. */
static lua_State *fuzz_state(const char *name, const char *check) {
  lua_State *L = luaL_newstate();
  if (L == NULL) abort();
  luaL_openlibs(L);
  luaL_requiref(L, "claude.core", luaopen_claude_core, 0);
  lua_pop(L, 1);
  if (luaL_dostring(L, "package.path = '" CLAUDELUA_SOURCE_DIR "/lua/?.lua;" CLAUDELUA_SOURCE_DIR
                       "/lua/?/init.lua;" CLAUDELUA_SOURCE_DIR "/fuzz/?.lua;' .. package.path") ||
      luaL_loadbuffer(L, check, strlen(check), name)) {
    fprintf(stderr, "%s: %s\n", name, lua_tostring(L, -1));
    abort();
  }
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "claude.core");
  lua_remove(L, -2);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_isfunction(L, -1)) {
    fprintf(stderr, "%s: %s\n", name, lua_tostring(L, -1));
    abort();
  }
  lua_setfield(L, LUA_REGISTRYINDEX, "claude.fuzz.check");
  return L;
}

/* Runs check(text); aborts with the message when it raises. */
static void fuzz_check(lua_State *L, const char *name, const uint8_t *data, size_t size) {
  lua_getfield(L, LUA_REGISTRYINDEX, "claude.fuzz.check");
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    /* an error object (claude.errors) has a __tostring */
    fprintf(stderr, "%s: %s\n", name, luaL_tolstring(L, -1, NULL));
    abort();
  }
}

#endif
