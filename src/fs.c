/*
 * fs.c -- the few synchronous file-system calls the Lua side needs beyond
 * the io library: listing a directory, stat and lstat, realpath, mkdir, rmdir
 * (the CLI's session transcripts, walks that must not follow links), a file
 * read beneath a folder (skills), and a file written whole or not at all
 * (OAuth tokens, a client's configuration). Each returns nil, message, code
 * on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#include <sys/syscall.h>
#if defined(SYS_openat2)
#define CLAUDE_HAVE_OPENAT2 1
#endif
#endif
#endif

#include "context.h"

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

/* Pushes the table of core.stat and core.lstat: { type = "file"|"directory"|
 * "link"|"other", size, mtime (ms), mode (the permission bits), dev, ino }.
 * dev and ino tell one file from another (a walk's loop check). */
static void push_stat(lua_State *L, const uv_stat_t *st) {
  unsigned long long fmt = st->st_mode & S_IFMT;
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)(st->st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushstring(L, fmt == S_IFREG   ? "file"
                    : fmt == S_IFDIR ? "directory"
                    : fmt == S_IFLNK ? "link"
                                     : "other");
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st->st_size);
  lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
  lua_setfield(L, -2, "mtime");
  lua_pushinteger(L, (lua_Integer)st->st_dev);
  lua_setfield(L, -2, "dev");
  lua_pushinteger(L, (lua_Integer)st->st_ino);
  lua_setfield(L, -2, "ino");
}

/* stat or lstat of the path at 1: its table, or nil, err, code */
static int stat_with(lua_State *L, int follow) {
  const char *path = luaL_checkstring(L, 1);
  uv_fs_t req;
  int err = follow ? uv_fs_stat(NULL, &req, path, NULL) : uv_fs_lstat(NULL, &req, path, NULL);
  if (err != 0) {
    uv_fs_req_cleanup(&req);
    return claude_push_uv_error(L, err);
  }
  push_stat(L, &req.statbuf);
  uv_fs_req_cleanup(&req);
  return 1;
}

/* core.stat(path): what path leads to, links followed; nil, err, code */
static int l_stat(lua_State *L) {
  return stat_with(L, 1);
}

/* core.lstat(path): path itself; a symbolic link is type "link" */
static int l_lstat(lua_State *L) {
  return stat_with(L, 0);
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

/* core.mkdtemp(prefix) -> the path of a new directory prefix.."XXXXXX"
 * (0700), or nil, err, code */
static int l_mkdtemp(lua_State *L) {
  size_t len;
  const char *prefix = luaL_checklstring(L, 1, &len);
  uv_fs_t req;
  int err;
  if (strlen(prefix) != len) return luaL_argerror(L, 1, "path contains a NUL byte");
  lua_pushfstring(L, "%sXXXXXX", prefix);
  err = uv_fs_mkdtemp(NULL, &req, lua_tostring(L, -1), NULL);
  if (err != 0) {
    uv_fs_req_cleanup(&req);
    return claude_push_uv_error(L, err);
  }
  lua_pushstring(L, req.path);
  uv_fs_req_cleanup(&req);
  return 1;
}

/* Opens path beneath the folder dfd for reading: the kernel resolves it (openat2,
 * RESOLVE_BENEATH), so a link or ".." that leads out fails with EXDEV at the open
 * itself. -1 with errno ENOSYS where openat2 cannot be used. */
static int open_beneath(int dfd, const char *path) {
#ifdef CLAUDE_HAVE_OPENAT2
  struct open_how how;
  int fd;
  memset(&how, 0, sizeof how);
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK; /* a FIFO must not block it */
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof how);
  if (fd < 0 && errno == EPERM) errno = ENOSYS; /* a seccomp filter that refuses it */
  return fd;
#else
  (void)dfd;
  (void)path;
  errno = ENOSYS;
  return -1;
#endif
}

/* core.read_beneath(root, path, max) -> the bytes of the regular file at path under
 * the folder root, or nil, err, code. A path whose resolution leaves root (a link out,
 * "..", an absolute path) is EXDEV, decided by the kernel when it opens the file, so no
 * name checked before can be swapped for a link; a file that is no regular file is
 * EINVAL (a FIFO would hold the read), one over max bytes EFBIG. ENOSYS: openat2 is
 * not there (not Linux, a kernel before 5.6); the caller then checks the real path. */
static int l_read_beneath(lua_State *L) {
  const char *root = luaL_checkstring(L, 1);
  const char *path = luaL_checkstring(L, 2);
  lua_Integer max = luaL_checkinteger(L, 3);
  luaL_Buffer b;
  struct stat st;
  int dfd, fd, err = 0;
  dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return claude_push_uv_error(L, uv_translate_sys_error(errno));
  fd = open_beneath(dfd, path);
  if (fd < 0) err = errno;
  close(dfd);
  if (fd < 0) return claude_push_uv_error(L, uv_translate_sys_error(err));
  if (fstat(fd, &st) != 0) err = errno;
  else if (!S_ISREG(st.st_mode)) err = EINVAL;
  else if ((lua_Integer)st.st_size > max) err = EFBIG;
  if (err != 0) {
    close(fd);
    return claude_push_uv_error(L, uv_translate_sys_error(err));
  }
  luaL_buffinit(L, &b);
  for (;;) {
    char *p = luaL_prepbuffer(&b);
    ssize_t n = read(fd, p, LUAL_BUFFERSIZE);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    luaL_addsize(&b, (size_t)n);
    if ((lua_Integer)luaL_bufflen(&b) > max) {
      err = EFBIG; /* it grew while read */
      break;
    }
  }
  close(fd);
  if (err != 0) return claude_push_uv_error(L, uv_translate_sys_error(err));
  luaL_pushresult(&b);
  return 1;
}

/* Writes all of buf to fd; 0, or -1 with errno set. */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes data to path atomically with permission bits mode: the data goes to a
 * new file beside it (mkstemp makes it 0600 from the start, so no other user
 * ever sees it readable; fchmod then sets mode), is synced, then renamed over
 * path. A reader sees the old file or the new one, never half of one. A link
 * at path is replaced, not followed: a caller that means its target passes
 * the target's path. Returns 1 result, or nil, err, code. */
static int write_atomic(lua_State *L, mode_t mode) {
  size_t plen, len;
  const char *path = luaL_checklstring(L, 1, &plen);
  const char *data = luaL_checklstring(L, 2, &len);
  char tmp[PATH_MAX + 8];
  int fd, err = 0;
  if (strlen(path) != plen) return luaL_argerror(L, 1, "path contains a NUL byte");
  if (plen >= PATH_MAX) return claude_push_uv_error(L, UV_ENAMETOOLONG);
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".XXXXXX", 8);
  fd = mkstemp(tmp);
  if (fd < 0) return claude_push_uv_error(L, uv_translate_sys_error(errno));
  if (fchmod(fd, mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && rename(tmp, path) != 0) err = errno;
  if (err != 0) {
    unlink(tmp);
    return claude_push_uv_error(L, uv_translate_sys_error(err));
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* core.write_private(path, data) -> true, or nil, err, code: path holds data,
 * readable and writable by its owner only (0600), replaced atomically. */
static int l_write_private(lua_State *L) {
  return write_atomic(L, 0600);
}

/* core.write_atomic(path, data, mode) -> true, or nil, err, code: the same
 * with the permission bits mode (a file's own, kept when it is rewritten). */
static int l_write_atomic(lua_State *L) {
  lua_Integer mode = luaL_checkinteger(L, 3);
  luaL_argcheck(L, mode >= 0 && mode <= 07777, 3, "permission bits expected");
  return write_atomic(L, (mode_t)mode);
}

static const luaL_Reg fs_functions[] = {
  {"scandir", l_scandir},     {"stat", l_stat},
  {"lstat", l_lstat},         {"realpath", l_realpath},
  {"is_symlink", l_is_symlink}, {"rmdir", l_rmdir},
  {"mkdir", l_mkdir},         {"mkdtemp", l_mkdtemp},
  {"write_private", l_write_private}, {"write_atomic", l_write_atomic},
  {"read_beneath", l_read_beneath}, {NULL, NULL}};

void claude_open_fs(lua_State *L) {
  luaL_setfuncs(L, fs_functions, 0);
}
