/*
 * http.c -- libFuzzer target: raw bytes from a TCP client into the HTTP
 * stack (h2o's parser, src/http/server.c and response.c, the MCP
 * Streamable HTTP transport and claude.http.server). The Lua half
 * (fuzz/http.lua) listens once and drives the loop; this file gives it a
 * plain nonblocking client socket, as `fuzz.socket`.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FUZZ_LUA_COVERAGE /* the logic under test is mostly Lua */
#include "harness.h"

static const char CHECK[] = "local _ = ... return require 'http'\n";

/* sock.connect(port [, rcvbuf]) -> fd, local port: connected to
 * 127.0.0.1:port, then nonblocking (the kernel completes a loopback
 * handshake without the server's accept). rcvbuf: a small receive buffer, set
 * before the handshake (it sizes the window), for a client that stops
 * reading: the server's writes back up sooner. */
static int l_connect(lua_State *L) {
  struct sockaddr_in sa;
  socklen_t salen = sizeof sa;
  int rcvbuf = (int)luaL_optinteger(L, 2, 0);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return luaL_error(L, "socket: %s", strerror(errno));
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)luaL_checkinteger(L, 1));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &salen) != 0) {
    int err = errno;
    close(fd);
    return luaL_error(L, "connect: %s", strerror(err));
  }
  lua_pushinteger(L, fd);
  lua_pushinteger(L, ntohs(sa.sin_port));
  return 2;
}

/* sock.send(fd, s) -> bytes taken (0: the buffer is full) | nil (the server
 * closed or reset the connection) */
static int l_send(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  ssize_t n = len == 0 ? 0 : send(fd, s, len, MSG_NOSIGNAL);
  if (n >= 0) lua_pushinteger(L, (lua_Integer)n);
  else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) lua_pushinteger(L, 0);
  else luaL_pushfail(L);
  return 1;
}

/* sock.recv(fd) -> what has arrived ("" when nothing) | nil at the end
 * (the server closed, or reset the connection) */
static int l_recv(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  luaL_Buffer b;
  int any = 0;
  luaL_buffinit(L, &b);
  for (;;) {
    char *p = luaL_prepbuffer(&b);
    ssize_t n = recv(fd, p, LUAL_BUFFERSIZE, 0);
    if (n > 0) {
      luaL_addsize(&b, (size_t)n);
      any = 1;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    if (!any) {
      luaL_pushfail(L);
      return 1;
    }
    break; /* the end comes again at the next call */
  }
  luaL_pushresult(&b);
  return 1;
}

/* sock.shutdown(fd): no more bytes from the client (half-close) */
static int l_shutdown(lua_State *L) {
  shutdown((int)luaL_checkinteger(L, 1), SHUT_WR);
  return 0;
}

/* sock.close(fd [, reset]): closes; with reset, abortively (an RST) */
static int l_close(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 1);
  if (lua_toboolean(L, 2)) {
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  close(fd);
  return 0;
}

static int open_socket(lua_State *L) {
  static const luaL_Reg fns[] = {{"connect", l_connect}, {"send", l_send}, {"recv", l_recv},
                                 {"shutdown", l_shutdown}, {"close", l_close}, {NULL, NULL}};
  luaL_newlib(L, fns);
  return 1;
}

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (L == NULL) L = fuzz_state_with("fuzz/http", CHECK, "fuzz.socket", open_socket);
  fuzz_check(L, "fuzz/http", data, size);
  return 0;
}
