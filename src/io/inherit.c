/*
 * inherit.c -- a child gets only the descriptors it is given.
 *
 * uv_spawn passes a child every descriptor of the host that is not
 * close-on-exec. An application that embeds claude (HAProxy, a game engine)
 * has such descriptors: listening sockets, log files. A child that holds a
 * copy of a listening socket keeps it alive after the host closed it, and an
 * epoll of the host keeps reporting it (HAProxy spun at 100% CPU so).
 *
 * Where the closing happens, and why there:
 * - not in the parent (FD_CLOEXEC set on every descriptor before uv_spawn):
 *   that changes the host's own descriptors for good, under the feet of its
 *   threads, which may fork and exec children of their own that rely on
 *   inheriting them;
 * - not through posix_spawn or a fork of our own: libuv reaps only the
 *   children of uv_spawn, and its stdio, setsid, setuid and error reporting
 *   would be ours to copy;
 * - not through an exec trampoline: libclaudelua has no executable of its own
 *   to exec, and /bin/sh costs a millisecond a spawn;
 * - in the child, between libuv's fork and its exec, where libuv offers no
 *   hook: a pthread_atfork child handler runs there (libuv 1.x forks with
 *   fork(3)). It acts only in the child of a fork made by claude_spawn's
 *   thread while it spawns (a thread-local flag), never in the children the
 *   host forks itself. It marks descriptors 3 and up close-on-exec rather
 *   than closing them: libuv still dup2s the child's stdio from them and
 *   reports a failed exec through its own pipe; the exec closes them all.
 *   close_range(2) with CLOSE_RANGE_CLOEXEC does it in one call (Linux 5.11);
 *   before that, the descriptors listed in /proc/self/fd (read with open and
 *   getdents64, async-signal-safe after a fork), else every number up to
 *   RLIMIT_NOFILE. spec/integration/process_spec.lua checks it under uv_spawn.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static _Thread_local int spawning; /* this thread is inside uv_spawn */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void set_cloexec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/* Every descriptor /proc/self/fd lists: 1 when it could be read, else 0. */
static int cloexec_listed(void) {
  char buf[4096];
  long n;
  int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
    long off = 0;
    while (off < n) {
      struct dirent64 *d = (struct dirent64 *)(buf + off);
      const char *s = d->d_name;
      int fd = 0;
      off += d->d_reclen;
      if (*s < '0' || *s > '9') continue;
      while (*s >= '0' && *s <= '9') fd = fd * 10 + (*s++ - '0');
      if (fd >= 3 && fd != dir) set_cloexec(fd);
    }
  }
  close(dir);
  return n == 0;
}

/* The child of a fork: in the child of claude's uv_spawn only. */
static void child_after_fork(void) {
  struct rlimit rl;
  long fd, top;
  if (!spawning) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
#endif
  if (cloexec_listed()) return;
  top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
          ? (long)rl.rlim_cur : 65536;
  for (fd = 3; fd < top; fd++) set_cloexec((int)fd);
}

static void register_handler(void) { pthread_atfork(NULL, NULL, child_after_fork); }

int claude_spawn(uv_loop_t *loop, uv_process_t *handle, const uv_process_options_t *opts) {
  int err;
  pthread_once(&once, register_handler);
  spawning = 1;
  err = uv_spawn(loop, handle, opts);
  spawning = 0;
  return err;
}
