/*
 * fs.c -- the few synchronous file-system calls the Lua side needs beyond
 * the io library: listing a directory, stat, realpath, mkdir, rmdir (the
 * CLI's session transcripts). Each returns nil, message, code on failure.
 */
#include <string.h>

#include "core.h"

/* core.scandir(path) -> { name, ... } (sorted by libuv), or nil, err, code */
static int l_scandir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  uv_dirent_t ent;
  int n = uv_fs_scandir(NULL, &req, path, 0, NULL);
  if (n < 0) {
    uv_fs_req_cleanup(&req);
    return claude_push_uv_error(L, n);
  }
  lua_createtable(L, n, 0);
  int i = 0;
  while (uv_fs_scandir_next(&req, &ent) != UV_EOF) {
    lua_pushstring(L, ent.name);
    lua_rawseti(L, -2, ++i);
  }
  uv_fs_req_cleanup(&req);
  return 1;
}

/* core.stat(path) -> { type = "file"|"directory"|"other", size, mtime (ms) },
 * or nil, err, code */
static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int err = uv_fs_stat(NULL, &req, path, NULL);
  if (err != 0) {
    uv_fs_req_cleanup(&req);
    return claude_push_uv_error(L, err);
  }
  uv_stat_t *st = &req.statbuf;
  lua_createtable(L, 0, 3);
  unsigned long long fmt = st->st_mode & S_IFMT;
  lua_pushstring(L, fmt == S_IFREG ? "file" : fmt == S_IFDIR ? "directory" : "other");
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st->st_size);
  lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
  lua_setfield(L, -2, "mtime");
  uv_fs_req_cleanup(&req);
  return 1;
}

/* core.is_symlink(path): true when path itself is a symbolic link (also one
 * that leads nowhere, which realpath cannot tell from a missing file). */
static int l_is_symlink(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int link = uv_fs_lstat(NULL, &req, path, NULL) == 0 &&
             (req.statbuf.st_mode & S_IFMT) == S_IFLNK;
  uv_fs_req_cleanup(&req);
  lua_pushboolean(L, link);
  return 1;
}

/* core.realpath(path) -> the canonical absolute path, or nil, err, code */
static int l_realpath(lua_State *L) {
  size_t len;
  const char *path = luaL_checklstring(L, 1, &len);
  uv_fs_t req;
  int err;
  if (strlen(path) != len) return luaL_argerror(L, 1, "path contains a NUL byte");
  err = uv_fs_realpath(NULL, &req, path, NULL);
  if (err != 0) {
    uv_fs_req_cleanup(&req);
    return claude_push_uv_error(L, err);
  }
  lua_pushstring(L, (const char *)req.ptr);
  uv_fs_req_cleanup(&req);
  return 1;
}

/* core.rmdir(path) -> true, or nil, err, code (the directory must be empty) */
static int l_rmdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int err = uv_fs_rmdir(NULL, &req, path, NULL);
  uv_fs_req_cleanup(&req);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* core.mkdir(path) -> true (also when it exists), or nil, err, code */
static int l_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int err = uv_fs_mkdir(NULL, &req, path, 0700, NULL);
  uv_fs_req_cleanup(&req);
  if (err != 0 && err != UV_EEXIST) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg fs_functions[] = {
  {"scandir", l_scandir}, {"stat", l_stat}, {"realpath", l_realpath}, {"is_symlink", l_is_symlink}, {"rmdir", l_rmdir},
  {"mkdir", l_mkdir}, {NULL, NULL}};

void claude_open_fs(lua_State *L) {
  luaL_setfuncs(L, fs_functions, 0);
}
