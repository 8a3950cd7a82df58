/*
 * harness.h -- the Lua state the libFuzzer targets share: standard
 * libraries, claude.core, the source tree's Lua files on package.path, and a
 * check function (a Lua chunk) run in a protected call per input. A check
 * that raises is a finding: the target aborts with its message.
 */
#ifndef CLAUDE_FUZZ_HARNESS_H
#define CLAUDE_FUZZ_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "claude.h"

#ifdef FUZZ_LUA_COVERAGE
/* Lua coverage for libFuzzer, for a target whose logic is mostly Lua (the C
 * coverage sees only the C under it; define FUZZ_LUA_COVERAGE before the
 * include): a line hook marks each step from one line of Lua to the next
 * (AFL's edges: the previous location shifted, xor the current one; a
 * location is the chunk and the line) in counters libFuzzer reads besides
 * its own. Coroutines inherit the hook of the thread that creates them, so
 * it is set before anything runs. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t
  fuzz_lua_counters[1 << 16];

static void fuzz_lua_line(lua_State *L, lua_Debug *ar) {
  static uintptr_t prev;
  uintptr_t here;
  if (!lua_getinfo(L, "S", ar)) return;
  here = ((uintptr_t)ar->source * 2654435761u) ^ ((uintptr_t)ar->currentline * 40503u);
  here ^= here >> 16;
  fuzz_lua_counters[(here ^ prev) & (sizeof fuzz_lua_counters - 1)]++;
  prev = here >> 1;
}

#endif

/* A state with the chunk `check` compiled (called as check(text)); the
 * chunk gets the module table as `...` first. A target with C functions of
 * its own gives them as the module `lib` (opened by `open`), required before
 * the chunk runs; NULL: none. */
static lua_State *fuzz_state_with(const char *name, const char *check, const char *lib,
                                  lua_CFunction open) {
  lua_State *L = luaL_newstate();
  if (L == NULL) abort();
#ifdef FUZZ_LUA_COVERAGE
  lua_sethook(L, fuzz_lua_line, LUA_MASKLINE, 0);
#endif
  luaL_openlibs(L);
  luaL_requiref(L, "claude.core", luaopen_claude_core, 0);
  lua_pop(L, 1);
  if (lib != NULL) {
    luaL_requiref(L, lib, open, 0);
    lua_pop(L, 1);
  }
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

static inline lua_State *fuzz_state(const char *name, const char *check) {
  return fuzz_state_with(name, check, NULL, NULL);
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
