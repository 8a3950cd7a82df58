/*
 * query.c -- an application that embeds Lua, links libclaudelua and runs one
 * claude query on its own libuv loop. No Lua files on disk: claude_preload()
 * registers the modules compiled into the library.
 *
 * The query goes to a scripted fake of the claude CLI (claude.testing), so
 * the example runs anywhere; the fake runs under the `claudelua` given as
 * the first argument (default: claudelua from PATH).
 * Build against the installed package: see Makefile (pkg-config) and
 * CMakeLists.txt (find_package) beside this file.
 */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>
#include <lua.h>
#include <uv.h>

#include <claudelua/claude.h>

/* Starts a task that asks the fake CLI one question and keeps the answer in
 * the global `answer`; the application's loop runs it. */
static const char *script =
  "local claude = require 'claude'\n"
  "local testing = require 'claude.testing'\n"
  "local interpreter = ...\n"
  "local options, fake = testing.fake_cli([[\n"
  "  cli:expect_initialize()\n"
  "  local _, text = cli:expect_user()\n"
  "  cli:system_init()\n"
  "  cli:assistant('You said: ' .. text)\n"
  "  cli:result()\n"
  "]], { interpreter = interpreter })\n"
  "claude.spawn(function()\n"
  "  for msg in claude.query('hello from C', options) do\n"
  "    if msg.type == 'result' then answer = claude.text(msg) end\n"
  "  end\n"
  "  fake:cleanup()\n"
  "  testing.cleanup()\n"
  "end)\n";

int main(int argc, char **argv) {
  const char *interpreter = argc > 1 ? argv[1] : "claudelua";
  uv_loop_t loop;
  lua_State *L;
  int code = 0;
  uv_loop_init(&loop);
  L = luaL_newstate();
  luaL_openlibs(L);
  if (claude_set_loop(L, &loop) != 0) abort();
  claude_preload(L);
  if (luaL_loadstring(L, script) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_pushstring(L, interpreter);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    return 1;
  }
  uv_run(&loop, UV_RUN_DEFAULT); /* the application's loop runs the query */
  lua_getglobal(L, "answer");
  if (lua_isstring(L, -1)) printf("answer: %s\n", lua_tostring(L, -1));
  else code = 1;
  lua_pop(L, 1);
  lua_close(L);
  uv_run(&loop, UV_RUN_DEFAULT); /* let the closed handles finish */
  printf("loop close: %s\n", uv_loop_close(&loop) == 0 ? "ok" : "busy");
  return code;
}
