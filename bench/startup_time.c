/*
 * startup_time.c -- one start of a program, timed from the spawn (bench/startup):
 *
 *   startup_time mcp  -- claudelua mcp tools.lua   spawn -> the answer to initialize
 *   startup_time exit -- claudelua -e ''           spawn -> the process has ended
 *
 * Prints the time in milliseconds on one line. In `mcp` mode the initialize line is
 * written before the server could read it (as a client does), the answer is the first
 * line of stdout that carries "id":0, then stdin is closed and the server waited for.
 * Plain POSIX, blocking I/O: one start, nothing else to do meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char INITIALIZE[] =
  "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
  "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"startup_time\","
  "\"version\":\"1\"}}}\n";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  fprintf(stderr, "startup_time: %s: %s\n", what, errno ? strerror(errno) : "failed");
  exit(2);
}

/* Reads stdout until a line with "id":0 (the initialize answer). */
static void await_answer(int fd) {
  char buf[65536];
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
    char *nl;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { errno = 0; fail("the server ended without answering initialize"); }
    len += (size_t)n;
    buf[len] = '\0';
    while ((nl = memchr(buf, '\n', len)) != NULL) {
      *nl = '\0';
      if (strstr(buf, "\"id\":0")) return;
      len -= (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, len);
    }
    if (len == sizeof buf - 1) len = 0; /* a long line that is not the answer */
  }
}

int main(int argc, char **argv) {
  int mcp, in[2], out[2], status;
  pid_t pid;
  double t0, elapsed;
  if (argc < 4 || strcmp(argv[2], "--") != 0 ||
      (strcmp(argv[1], "mcp") != 0 && strcmp(argv[1], "exit") != 0)) {
    fprintf(stderr, "usage: startup_time mcp|exit -- command [args]\n");
    return 2;
  }
  mcp = strcmp(argv[1], "mcp") == 0;
  signal(SIGPIPE, SIG_IGN);
  if (pipe(in) != 0 || pipe(out) != 0) fail("pipe");
  t0 = now();
  pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    dup2(in[0], 0);
    if (mcp) dup2(out[1], 1);
    close(in[0]); close(in[1]); close(out[0]); close(out[1]);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "startup_time: cannot run %s: %s\n", argv[3], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (mcp) {
    if (write(in[1], INITIALIZE, sizeof INITIALIZE - 1) != (ssize_t)(sizeof INITIALIZE - 1))
      fail("write");
    await_answer(out[0]);
    elapsed = now() - t0;
    close(in[1]); /* EOF: the server ends */
    if (waitpid(pid, &status, 0) < 0) fail("waitpid");
  } else {
    close(in[1]);
    if (waitpid(pid, &status, 0) < 0) fail("waitpid");
    elapsed = now() - t0;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    errno = 0;
    fail("the program did not exit with status 0");
  }
  printf("%.3f\n", elapsed * 1e3);
  return 0;
}
