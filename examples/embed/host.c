/*
 * host.c -- an application that embeds Lua and already runs a libuv loop.
 *
 * It hands its loop to claudelua before opening the module, runs two
 * independent lua_States on that one loop, and drives everything with its
 * own uv_run. The Lua files come compiled into libclaudelua (claude_preload).
 * Build: cmake --build build --target embed_host   Run: build/embed_host [script.lua]
 */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>
#include <lua.h>
#include <uv.h>

#include <claudelua/claude.h>

/* Each state starts a task that sleeps, then prints and records its name. */
static const char *script =
  "local claude = require 'claude'\n"
  "local name, delay = ...\n"
  "claude.spawn(function()\n"
  "  claude.sleep(delay)\n"
  "  print(name .. ' woke after ' .. delay .. ' s')\n"
  "  done = name\n"
  "end)\n";

static lua_State *open_state(uv_loop_t *loop, const char *name, double delay) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  /* the application's loop, then the module in package.preload */
  if (claude_set_loop(L, loop) != 0) abort();
  claude_preload(L);
  if (luaL_loadstring(L, script) != LUA_OK) abort();
  lua_pushstring(L, name);
  lua_pushnumber(L, delay);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    exit(1);
  }
  return L;
}

static void report(lua_State *L) {
  lua_getglobal(L, "done");
  printf("state finished: %s\n", lua_tostring(L, -1));
  lua_pop(L, 1);
}

/* embed_host script.lua: that file alone, in one state on the application's
 * loop; uv_run must return once its work is done (the specs run it so). */
static int run_file(uv_loop_t *loop, const char *path) {
  lua_State *L = luaL_newstate();
  int rc = 0;
  luaL_openlibs(L);
  if (claude_set_loop(L, loop) != 0) abort();
  claude_preload(L);
  if (luaL_dofile(L, path) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    rc = 1;
  }
  uv_run(loop, UV_RUN_DEFAULT);
  printf("uv_run returned\n");
  lua_close(L);
  uv_run(loop, UV_RUN_DEFAULT);
  printf("loop close: %s\n", uv_loop_close(loop) == 0 ? "ok" : "busy");
  return rc;
}

int main(int argc, char **argv) {
  uv_loop_t loop;
  lua_State *a, *b;
  uv_loop_init(&loop);
  if (argc > 1) return run_file(&loop, argv[1]);
  a = open_state(&loop, "first", 0.25);
  b = open_state(&loop, "second", 0.01); /* far apart: each counts from its own start */
  uv_run(&loop, UV_RUN_DEFAULT); /* the application's own loop runs both */
  report(a);
  report(b);
  lua_close(a);
  lua_close(b);
  uv_run(&loop, UV_RUN_DEFAULT); /* let the closed handles finish */
  printf("loop close: %s\n", uv_loop_close(&loop) == 0 ? "ok" : "busy");
  return 0;
}
