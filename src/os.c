/*
 * os.c -- what the Lua half needs from the operating system: the
 * environment (read and set), kill, executable lookup, the current directory, the
 * running executable's path, whether an fd is a terminal, and stdout sent to
 * stderr.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "host/alloc.h"

/* core.environ() -> { NAME = value, ... } of this process */
static int l_environ(lua_State *L) {
  uv_env_item_t *items;
  int count, i, err = uv_os_environ(&items, &count);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_createtable(L, 0, count);
  for (i = 0; i < count; i++) {
    lua_pushstring(L, items[i].value);
    lua_setfield(L, -2, items[i].name);
  }
  uv_os_free_environ(items, count);
  return 1;
}

/* core.setenv(name, value) -> true | nil, err, code: sets (value nil:
 * removes) a variable of this process, which the processes it starts from
 * then on inherit (demo mode points every CLI at its scripted API so). */
static int l_setenv(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *value = luaL_optstring(L, 2, NULL);
  int err = value ? uv_os_setenv(name, value) : uv_os_unsetenv(name);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.kill(pid, signal) -> true | nil, err, code; a negative pid names a
 * process group */
static int l_kill(lua_State *L) {
  int pid = (int)luaL_checkinteger(L, 1);
  int sig = (int)luaL_optinteger(L, 2, SIGTERM);
  int err = uv_kill(pid, sig);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.is_executable(path) -> true when path is an executable regular file */
static int l_is_executable(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int ok = uv_fs_stat(NULL, &req, path, NULL) == 0 && (req.statbuf.st_mode & S_IFMT) == S_IFREG &&
           access(path, X_OK) == 0;
  uv_fs_req_cleanup(&req);
  lua_pushboolean(L, ok);
  return 1;
}

/* core.isatty(fd) -> whether fd is a terminal (a person at it, not a pipe) */
static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

/* core.cwd() -> the current directory */
static int l_cwd(lua_State *L) {
  char buf[4096];
  size_t size = sizeof buf;
  int err = uv_cwd(buf, &size);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushlstring(L, buf, size);
  return 1;
}

/* core.exepath() -> the running executable's path */
static int l_exepath(lua_State *L) {
  char buf[4096];
  size_t size = sizeof buf;
  int err = uv_exepath(buf, &size);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushlstring(L, buf, size);
  return 1;
}

/* core.stdout_to_stderr() -> true | nil, err, code: from now on fd 1 is a
 * copy of fd 2, so that print, io.write and inherited stdouts reach stderr
 * (an MCP server over stdio keeps its protocol channel on a copy of fd 1
 * made before, core.stdio). */
static int l_stdout_to_stderr(lua_State *L) {
  fflush(stdout);
  if (dup2(2, 1) < 0) return claude_push_uv_error(L, uv_translate_sys_error(errno));
  lua_pushboolean(L, 1);
  return 1;
}

/* core.memory_trim() -> bytes the Lua allocator gave back (false when the
 * state's allocator is not the claudelua host's): a full
 * collection, then the free memory of the host's Lua allocator (a hook the
 * claudelua host puts in the registry: src/host/alloc.c keeps freed small
 * blocks for reuse) and glibc's (malloc_trim: freed pages inside its heaps,
 * which it keeps otherwise) back to the system. For after a load: it walks
 * the free memory, so it is not for every call. */
static int l_memory_trim(lua_State *L) {
  lua_gc(L, LUA_GCCOLLECT);
  if (lua_getfield(L, LUA_REGISTRYINDEX, CLAUDE_ALLOC_TRIM_KEY) == LUA_TFUNCTION) {
    lua_call(L, 0, 1);
  } else {
    lua_pop(L, 1);
    lua_pushboolean(L, 0);
  }
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  return 1;
}

static const luaL_Reg os_functions[] = {
  {"environ", l_environ}, {"setenv", l_setenv}, {"kill", l_kill}, {"is_executable", l_is_executable}, {"cwd", l_cwd},
  {"isatty", l_isatty},
  {"exepath", l_exepath}, {"stdout_to_stderr", l_stdout_to_stderr},
  {"memory_trim", l_memory_trim}, {NULL, NULL}};

/* Adds the OS functions to the module table on top of the stack. */
void claude_open_os(lua_State *L) { luaL_setfuncs(L, os_functions, 0); }
