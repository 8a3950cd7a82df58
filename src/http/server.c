/*
 * server.c -- core.http_listen: an HTTP/1.1 server on the module's libuv
 * loop, built on h2o's libuv build (libh2o). h2o parses requests, reads
 * bodies (413 past max_body), keeps connections alive and frames streamed
 * bodies (chunked); this file accepts connections, hands each request to
 * Lua as a table and a response object (response.c), and closes
 * gracefully: no new connections, open responses ended, idle connections
 * shut down, everything cut after a grace period. (Over 600 lines: the
 * listener, the connections, their bounds (max_connections at accept, the
 * sweep of write_timeout) and the server object share one life cycle,
 * closed in one order; the framing, the lingering close and the response
 * are apart.)
 *
 * Every read on a connection goes through framing.c's read gate before
 * h2o's own callback: it follows the requests' framing and cuts the stream
 * at the first request h2o could read otherwise than a proxy in front of it
 * (request smuggling) or whose head is too large; h2o then gets the end of
 * the stream, and the answer (400, 431) is written once h2o has let go of
 * the connection. A connection closed while its client may still be sending
 * (in the middle of a request, or with bytes unread) lingers: its sending
 * side is shut down and what the client still sends is read and dropped for
 * a moment, so that an answer written just before the close (413, 400, 431)
 * reaches the client instead of being lost to the reset that closing a
 * socket with unread data sends.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server.h"

#define DEFAULT_MAX_BODY ((lua_Integer)4 * 1024 * 1024)
#define DEFAULT_HIGH_WATER ((lua_Integer)1024 * 1024)
#define DEFAULT_MAX_HEADER ((lua_Integer)64 * 1024)
#define DEFAULT_MAX_QUEUED ((lua_Integer)16 * 1024 * 1024)
#define DEFAULT_WRITE_TIMEOUT 60.0
#define DEFAULT_MAX_CONNECTIONS 1024

static void srv_close(http_server *srv, int abort);

/* ------------------------------------------------------------------------- */

/* h2o_context_dispose without its uv_run(NOWAIT), which must not run inside
 * a callback of the loop (we close servers from tasks and timers). It closes
 * h2o's timers with no close callback; see srv_dispose for when the memory
 * they live in may go. */
static void h2o_context_close(h2o_context_t *c) {
  h2o_globalconf_t *config = c->globalconf;
  size_t i, j;
  for (i = 0; config->hosts[i] != NULL; ++i) {
    h2o_hostconf_t *hostconf = config->hosts[i];
    for (j = 0; j != hostconf->paths.size; ++j)
      h2o_context_dispose_pathconf_context(c, hostconf->paths.entries + j);
    h2o_context_dispose_pathconf_context(c, &hostconf->fallback_path);
  }
  free(c->_pathconfs_inited.entries);
  free(c->_module_configs);
  h2o_timeout_dispose(c->loop, &c->zero_timeout);
  h2o_timeout_dispose(c->loop, &c->one_sec_timeout);
  h2o_timeout_dispose(c->loop, &c->hundred_ms_timeout);
  h2o_timeout_dispose(c->loop, &c->handshake_timeout);
  h2o_timeout_dispose(c->loop, &c->http1.req_timeout);
  h2o_timeout_dispose(c->loop, &c->http2.idle_timeout);
  h2o_timeout_dispose(c->loop, &c->http2.graceful_shutdown_timeout);
  h2o_timeout_dispose(c->loop, &c->proxy.io_timeout);
  h2o_filecache_destroy(c->filecache);
  c->filecache = NULL;
  for (i = 0; i != c->storage.size; ++i)
    if (c->storage.entries[i].dispose != NULL) c->storage.entries[i].dispose(c->storage.entries[i].data);
  free(c->storage.entries);
  h2o_multithread_unregister_receiver(c->queue, &c->receivers.hostinfo_getaddr);
  h2o_multithread_destroy_queue(c->queue);
  if (c->_timestamp_cache.value != NULL) h2o_mem_release_shared(c->_timestamp_cache.value);
}

static void sentinel_closed(uv_handle_t *h) {
  http_server *srv = (http_server *)h->data;
  claude_ctx *ctx = srv->hdr.ctx;
  h2o_config_dispose(&srv->config);
  claude_object_unlink(&srv->hdr);
  if (srv->box != NULL) *srv->box = NULL;
  free(srv);
  claude_handle_closed(ctx);
}

/* Once the listener and every connection are closed: h2o's context goes.
 * Its timers are closed without callbacks, inside the memory we free, so the
 * sentinel (an idle handle never started) is closed first: libuv finishes
 * the closes of one turn last-closed first, so its callback runs after
 * libuv is done with every h2o handle. */
static void rewrap_closed(uv_handle_t *h);

static void srv_dispose_if_done(http_server *srv) {
  if (srv->state == SRV_LISTENING || srv->listener_open || srv->nconns > 0 || srv->grace_open ||
      srv->sweep_open || !srv->h2o_open)
    return;
  if (srv->rewrap_open) { /* first, with its close callback (it comes back here) */
    if (!uv_is_closing((uv_handle_t *)&srv->rewrap))
      uv_close((uv_handle_t *)&srv->rewrap, rewrap_closed);
    return;
  }
  srv->h2o_open = 0;
  uv_close((uv_handle_t *)&srv->sentinel, sentinel_closed);
  h2o_context_close(&srv->h2o);
}

static void rewrap_closed(uv_handle_t *h) {
  http_server *srv = (http_server *)h->data;
  srv->rewrap_open = 0;
  claude_handle_closed(srv->hdr.ctx);
  srv_dispose_if_done(srv);
}

static void listener_closed(uv_handle_t *h) {
  http_server *srv = (http_server *)h->data;
  srv->listener_open = 0;
  claude_handle_closed(srv->hdr.ctx);
  srv_dispose_if_done(srv);
}

static void grace_closed(uv_handle_t *h) {
  http_server *srv = (http_server *)h->data;
  srv->grace_open = 0;
  claude_handle_closed(srv->hdr.ctx);
  srv_dispose_if_done(srv);
}

static void sweep_closed(uv_handle_t *h) {
  http_server *srv = (http_server *)h->data;
  srv->sweep_open = 0;
  claude_handle_closed(srv->hdr.ctx);
  srv_dispose_if_done(srv);
}

/* Every so often: drops the clients that took nothing for write_timeout
 * (it calls nothing in Lua: the responses end when the loop sees the
 * sockets shut down). */
static void sweep_fired(uv_timer_t *h) {
  http_server *srv = (http_server *)h->data;
  uint64_t now = uv_now(h->loop), every = uv_timer_get_repeat(h);
  http_res *res;
  /* The loop was held (a long handler, a collection): timers run before the
   * I/O callbacks of a turn, so the progress the sockets made meanwhile is not
   * seen yet. The clients are not to blame: each gets a full timeout again. */
  int held = now - srv->swept_at > 2 * every;
  srv->swept_at = now;
  for (res = srv->responses; res != NULL; res = res->next) claude_http_res_sweep(res, now, held);
}

static void grace_fired(uv_timer_t *h) {
  srv_close((http_server *)h->data, 1);
}

/* h2o's socket is closed: the connection is gone. */
static void conn_closed(uv_handle_t *h) {
  http_conn *conn = (http_conn *)h;
  http_server *srv = conn->srv;
  claude_ctx *ctx = srv->hdr.ctx;
  conn->prev->next = conn->next;
  conn->next->prev = conn->prev;
  srv->nconns--;
  if (conn->linger_fd >= 0) {
    /* a client between requests, with nothing unread, sends nothing more: no reset to fear */
    int unread = 0;
    if (ioctl(conn->linger_fd, FIONREAD, &unread) != 0) unread = 0;
    if (ctx->closing || srv->state == SRV_ABORTING ||
        (conn->framing.status == 0 && claude_http_framing_between(&conn->framing) && unread == 0))
      close(conn->linger_fd);
    else
      claude_http_linger(ctx, conn->linger_fd, &conn->framing);
  }
  claude_http_framing_free(&conn->framing);
  free(conn);
  if (srv->nconns == 0 && srv->state != SRV_LISTENING) {
    if (srv->grace_open && !uv_is_closing((uv_handle_t *)&srv->grace))
      uv_close((uv_handle_t *)&srv->grace, grace_closed);
    if (srv->sweep_open && !uv_is_closing((uv_handle_t *)&srv->sweep))
      uv_close((uv_handle_t *)&srv->sweep, sweep_closed);
  }
  srv_dispose_if_done(srv);
  claude_handle_closed(ctx);
}

static void conn_shutdown(http_conn *conn) {
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&conn->tcp, &fd) == 0) shutdown(fd, SHUT_RDWR);
}

/* True when an open request of srv lives on conn. */
static int conn_busy(http_server *srv, http_conn *conn) {
  uv_os_fd_t fd;
  http_res *res;
  if (uv_fileno((uv_handle_t *)&conn->tcp, &fd) != 0) return 0;
  for (res = srv->responses; res != NULL; res = res->next)
    if (res->fd == fd) return 1;
  return 0;
}

/* Stops accepting and ends what is open: gracefully (responses end, idle
 * connections are shut down, a timer cuts the rest after the grace period),
 * or at once (abort: every connection is shut down). Idempotent. */
static void srv_close(http_server *srv, int abort) {
  claude_ctx *ctx = srv->hdr.ctx;
  http_conn *conn;
  http_res *res;
  if (srv->state == SRV_ABORTING || (srv->state == SRV_DRAINING && !abort)) return;
  if (srv->state == SRV_LISTENING) {
    claude_unref(ctx, &srv->on_request_ref);
    claude_unref(ctx, &srv->self_ref);
    if (srv->listener_open) uv_close((uv_handle_t *)&srv->listener, listener_closed);
  }
  srv->state = abort ? SRV_ABORTING : SRV_DRAINING;
  if (abort && srv->sweep_open && !uv_is_closing((uv_handle_t *)&srv->sweep))
    uv_close((uv_handle_t *)&srv->sweep, sweep_closed);
  /* each response once; a callback may end others, so search from the head */
  for (;;) {
    for (res = srv->responses; res != NULL; res = res->next)
      if (res->state == RES_NEW || res->state == RES_STREAMING) break;
    if (res == NULL) break;
    claude_http_res_server_closing(res, abort);
  }
  for (res = srv->responses; res != NULL; res = res->next) claude_http_res_server_closing(res, abort);
  for (conn = srv->conns.next; conn != &srv->conns; conn = conn->next)
    if (abort || !conn_busy(srv, conn)) conn_shutdown(conn);
  if (srv->nconns == 0 && srv->sweep_open && !uv_is_closing((uv_handle_t *)&srv->sweep))
    uv_close((uv_handle_t *)&srv->sweep, sweep_closed);
  if (!abort && srv->nconns > 0 && !srv->grace_open) {
    uv_timer_init(ctx->loop, &srv->grace);
    srv->grace.data = srv;
    srv->grace_open = 1;
    claude_handle_opened(ctx);
    uv_timer_start(&srv->grace, grace_fired, (uint64_t)(srv->grace_secs * 1000.0 + 0.5), 0);
  }
  srv_dispose_if_done(srv);
}

/* ------------------------------------------------------------------------- */

static void refused_closed(uv_handle_t *h) {
  claude_ctx *ctx = (claude_ctx *)h->data;
  free(h);
  claude_handle_closed(ctx);
}

/* A connection past max_connections: answered 503 at once (by linger.c,
 * which reads what the client sends meanwhile), never handed to h2o. */
static void refuse(http_server *srv, uv_stream_t *listener) {
  claude_ctx *ctx = srv->hdr.ctx;
  uv_tcp_t *t = (uv_tcp_t *)malloc(sizeof *t);
  uv_os_fd_t fd;
  srv->refused++;
  if (t == NULL) return;
  uv_tcp_init(ctx->loop, t);
  t->data = ctx;
  claude_handle_opened(ctx);
  if (uv_accept(listener, (uv_stream_t *)t) == 0 && uv_fileno((uv_handle_t *)t, &fd) == 0) {
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup >= 0) claude_http_linger_refused(ctx, dup);
  }
  uv_close((uv_handle_t *)t, refused_closed);
}

static void on_accept(uv_stream_t *listener, int status) {
  http_server *srv = (http_server *)listener->data;
  claude_ctx *ctx = srv->hdr.ctx;
  http_conn *conn;
  h2o_socket_t *sock;
  uv_os_fd_t fd;
  if (status != 0 || srv->state != SRV_LISTENING) return;
  if (srv->max_conns > 0 && srv->nconns >= srv->max_conns) return refuse(srv, listener);
  conn = (http_conn *)calloc(1, sizeof(*conn));
  if (conn == NULL) return;
  uv_tcp_init(ctx->loop, &conn->tcp);
  conn->srv = srv;
  conn->linger_fd = -1;
  claude_http_framing_init(&conn->framing, srv->max_header);
  conn->next = srv->conns.next;
  conn->prev = &srv->conns;
  srv->conns.next->prev = conn;
  srv->conns.next = conn;
  srv->nconns++;
  claude_handle_opened(ctx);
  sock = h2o_uv_socket_create((uv_stream_t *)&conn->tcp, conn_closed);
  if (uv_accept(listener, (uv_stream_t *)&conn->tcp) != 0) {
    h2o_socket_close(sock);
    return;
  }
  uv_tcp_nodelay(&conn->tcp, 1);
  if (uv_fileno((uv_handle_t *)&conn->tcp, &fd) == 0)
    conn->linger_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  h2o_accept(&srv->accept, sock);
  claude_http_framing_wrap(conn);
}

static void push_iovec(lua_State *L, h2o_iovec_t v) {
  lua_pushlstring(L, v.base != NULL ? v.base : "", v.len);
}

/* An IPv4 address in dotted decimal, as uv_ip4_name writes it, without
 * snprintf (every request names its peer): out holds at least 16 bytes. */
static void ip4_text(const unsigned char a[4], char *out) {
  int i;
  for (i = 0; i < 4; i++) {
    unsigned v = a[i];
    if (v >= 100) *out++ = (char)('0' + v / 100);
    if (v >= 10) *out++ = (char)('0' + v / 10 % 10);
    *out++ = (char)('0' + v % 10);
    *out++ = i < 3 ? '.' : '\0';
  }
}

/* Name and value (pushed) into headers (at index t): a repeated name's values
 * joined (", ", or "; " for cookie), as RFC 9110 allows. Pops both. */
static void push_header(lua_State *L, const h2o_header_t *h, int t) {
  lua_pushvalue(L, -2);
  if (lua_rawget(L, t) == LUA_TSTRING) { /* name value old */
    lua_insert(L, -2);
    lua_pushstring(L, h2o_memis(h->name->base, h->name->len, H2O_STRLIT("cookie")) ? "; " : ", ");
    lua_insert(L, -2);
    lua_concat(L, 3);
  } else {
    lua_pop(L, 1);
  }
  lua_rawset(L, t);
}

/* The headers without raw_headers. */
static void push_headers_lean(lua_State *L, h2o_req_t *req, int t) {
  size_t i;
  if (req->authority.base != NULL) { /* h2o moves Host out of the headers */
    lua_pushliteral(L, "host");
    push_iovec(L, req->authority);
    lua_rawset(L, t);
  }
  for (i = 0; i < req->headers.size; i++) {
    h2o_header_t *h = req->headers.entries + i;
    lua_pushlstring(L, h->name->base, h->name->len);
    push_iovec(L, h->value);
    push_header(L, h, t);
  }
}

/* The request as a Lua table (see docs/http-server.md); lean: without the
 * fields a server that reads none of them (the MCP transport) would pay
 * for on every request. */
static void push_request(lua_State *L, h2o_req_t *req, int lean) {
  struct sockaddr_storage sa;
  socklen_t salen;
  size_t i;
  lua_Integer k;
  int headers, list;
  lua_createtable(L, 0, lean ? 7 : 10);
  push_iovec(L, req->method);
  lua_setfield(L, -2, "method");
  lua_pushlstring(L, req->path_normalized.base, req->path_normalized.len);
  lua_setfield(L, -2, "path");
  if (req->query_at != SIZE_MAX) {
    lua_pushlstring(L, req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
    lua_setfield(L, -2, "query");
  }
  if (!lean) {
    push_iovec(L, req->path);
    lua_setfield(L, -2, "target");
    lua_pushstring(L, req->version == 0x101 ? "HTTP/1.1" : req->version == 0x100 ? "HTTP/1.0" : "HTTP/2");
    lua_setfield(L, -2, "version");
  }
  push_iovec(L, req->entity);
  lua_setfield(L, -2, "body");
  /* headers: lower-cased names; repeated ones joined (", ", or "; " for
   * cookie), as RFC 9110 allows; raw_headers keeps each: {name, value, ...} */
  lua_createtable(L, 0, (int)req->headers.size + 1);
  headers = lua_gettop(L);
  if (lean) {
    push_headers_lean(L, req, headers);
  } else {
    lua_createtable(L, (int)req->headers.size * 2 + 2, 0);
    list = lua_gettop(L);
    if (req->authority.base != NULL) { /* h2o moves Host out of the headers */
      lua_pushliteral(L, "host");
      push_iovec(L, req->authority);
      lua_pushvalue(L, -2);
      lua_rawseti(L, list, 1);
      lua_pushvalue(L, -1);
      lua_rawseti(L, list, 2);
      lua_rawset(L, headers);
    }
    k = req->authority.base != NULL ? 2 : 0;
    for (i = 0; i < req->headers.size; i++) {
      h2o_header_t *h = req->headers.entries + i;
      lua_pushlstring(L, h->name->base, h->name->len);
      lua_pushvalue(L, -1);
      lua_rawseti(L, list, ++k);
      push_iovec(L, h->value);
      lua_pushvalue(L, -1);
      lua_rawseti(L, list, ++k);
      push_header(L, h, headers);
    }
    lua_setfield(L, -3, "raw_headers");
  }
  lua_setfield(L, -2, "headers");
  salen = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&sa);
  if (salen > 0) {
    char name[64];
    int port = 0;
    if (sa.ss_family == AF_INET) {
      ip4_text((const unsigned char *)&((struct sockaddr_in *)&sa)->sin_addr, name);
      port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    } else if (sa.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&sa, name, sizeof name);
      port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    } else {
      name[0] = '\0';
    }
    lua_pushstring(L, name);
    lua_setfield(L, -2, "remote_address");
    lua_pushinteger(L, port);
    lua_setfield(L, -2, "remote_port");
  }
}

/* h2o's handler: every request goes to on_request(req, res), protected. */
static int on_req(h2o_handler_t *self, h2o_req_t *req) {
  http_server *srv = ((http_handler *)self)->srv;
  claude_ctx *ctx = srv->hdr.ctx;
  lua_State *L;
  http_res *res;
  int status, top;
  if (ctx->closing || srv->state != SRV_LISTENING || srv->on_request_ref == LUA_NOREF) {
    req->http1_is_persistent = 0;
    h2o_send_error_generic(req, 503, "Service Unavailable", "service unavailable\n",
                           H2O_SEND_ERROR_HTTP1_CLOSE_CONNECTION);
    return 0;
  }
  srv->requests++;
  L = claude_cb_state(ctx);
  top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, srv->on_request_ref);
  push_request(L, req, srv->lean);
  res = claude_http_res_new(L, srv, req);
  res->pins++;
  status = claude_pcall(ctx, L, 2);
  lua_settop(L, top);
  claude_http_res_after_handler(res, status != LUA_OK); /* releases the pin */
  return 0;
}

/* ------------------------------------------------------------------------- */

static http_server *check_server(lua_State *L) {
  http_server *srv = *(http_server **)luaL_checkudata(L, 1, MT_HTTP_SERVER);
  if (srv == NULL || srv->state != SRV_LISTENING) luaL_error(L, "attempt to use a closed server");
  return srv;
}

static lua_Integer opt_integer(lua_State *L, const char *name, lua_Integer dflt, lua_Integer min) {
  lua_Integer v = dflt;
  int t = lua_getfield(L, 1, name);
  if (t != LUA_TNIL) {
    if (!lua_isinteger(L, -1))
      luaL_error(L, "bad field '%s' (integer expected, got %s)", name, luaL_typename(L, -1));
    v = lua_tointeger(L, -1);
    if (v < min) luaL_error(L, "bad field '%s' (at least %d expected)", name, (int)min);
  }
  lua_pop(L, 1);
  return v;
}

static double opt_number(lua_State *L, const char *name, double dflt) {
  double v = dflt;
  if (lua_getfield(L, 1, name) != LUA_TNIL) {
    if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
      luaL_error(L, "bad field '%s' (non-negative number expected)", name);
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static void srv_teardown(claude_handle *h) {
  http_server *srv = (http_server *)h;
  srv->callbacks_off = 1;
  if (srv->box != NULL) {
    *srv->box = NULL;
    srv->box = NULL;
  }
  srv_close(srv, 1);
}

/* The default of max_connections: 1024, or fewer when the descriptors the
 * process may open would run out first (a connection uses up to three: its
 * socket, the dup kept for the lingering close, the watch of a response). */
static lua_Integer default_max_connections(void) {
  struct rlimit rl;
  lua_Integer n = DEFAULT_MAX_CONNECTIONS;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    lua_Integer fit = ((lua_Integer)rl.rlim_cur - 64) / 3;
    if (fit < n) n = fit < 16 ? 16 : fit;
  }
  return n;
}

/* uv_walk's: unreferences the async handle of h2o's message queue (`arg`), the
 * first member of h2o's libuv queue; any other handle is left as it is. */
static void unref_queue(uv_handle_t *h, void *arg) {
  if (h == (uv_handle_t *)arg && h->type == UV_ASYNC) uv_unref(h);
}

/* core.http_listen{ on_request = fn, host = "127.0.0.1", port = 0,
 * max_body = 4 MiB, max_header = 64 KiB, high_water = 1 MiB,
 * max_queued = 16 MiB, write_timeout = 60, max_connections = 1024,
 * idle_timeout = 10, close_grace = 5, backlog = 128, lean = false, ref = true }
 * -> server | nil, err, code */
static int l_http_listen(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  const char *host;
  lua_Integer port, max_body, max_header, high_water, backlog, max_queued, max_conns;
  double idle_timeout, grace, write_timeout;
  int lean, ref;
  struct sockaddr_storage addr;
  int addrlen = sizeof addr, err;
  http_server **box, *srv;
  h2o_hostconf_t *hostconf;
  h2o_pathconf_t *pathconf;
  http_handler *handler;
  char why[300];
  luaL_checktype(L, 1, LUA_TTABLE);
  if (lua_getfield(L, 1, "on_request") != LUA_TFUNCTION)
    luaL_error(L, "bad field 'on_request' (function expected, got %s)", luaL_typename(L, -1));
  lua_pop(L, 1);
  lua_getfield(L, 1, "host");
  host = lua_isnil(L, -1) ? "127.0.0.1" : lua_tostring(L, -1);
  if (host == NULL || lua_type(L, -1) == LUA_TNUMBER)
    luaL_error(L, "bad field 'host' (string expected, got %s)", luaL_typename(L, -1));
  lua_pop(L, 1); /* the table keeps the string */
  port = opt_integer(L, "port", 0, 0);
  if (port > 65535) luaL_error(L, "bad field 'port' (0-65535 expected)");
  max_body = opt_integer(L, "max_body", DEFAULT_MAX_BODY, 0);
  /* past h2o's own limit (H2O_MAX_REQLEN) it would close without an answer */
  max_header = opt_integer(L, "max_header", DEFAULT_MAX_HEADER, 64);
  if (max_header > H2O_MAX_REQLEN - 1024)
    luaL_error(L, "bad field 'max_header' (at most %d expected)", (int)(H2O_MAX_REQLEN - 1024));
  high_water = opt_integer(L, "high_water", DEFAULT_HIGH_WATER, 0);
  max_queued = opt_integer(L, "max_queued", DEFAULT_MAX_QUEUED, 0);
  max_conns = opt_integer(L, "max_connections", default_max_connections(), 0);
  if (max_conns > INT_MAX) max_conns = INT_MAX;
  write_timeout = opt_number(L, "write_timeout", DEFAULT_WRITE_TIMEOUT);
  backlog = opt_integer(L, "backlog", 128, 1);
  idle_timeout = opt_number(L, "idle_timeout", 10);
  grace = opt_number(L, "close_grace", 5);
  lua_getfield(L, 1, "lean");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
    luaL_error(L, "bad field 'lean' (boolean expected, got %s)", luaL_typename(L, -1));
  lean = lua_toboolean(L, -1);
  lua_getfield(L, 1, "ref");
  if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
    luaL_error(L, "bad field 'ref' (boolean expected, got %s)", luaL_typename(L, -1));
  ref = lua_isnil(L, -1) || lua_toboolean(L, -1);
  lua_pop(L, 2);
  if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)&addr) != 0 &&
      uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)&addr) != 0)
    luaL_error(L, "bad field 'host' (an IPv4 or IPv6 address expected, got '%s')", host);
  if (claude_h2o_load(why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "the HTTP server needs libh2o (h2o's libuv build): %s", why);
    lua_pushliteral(L, "ENOSYS");
    return 3;
  }

  box = (http_server **)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  luaL_setmetatable(L, MT_HTTP_SERVER);
  srv = (http_server *)calloc(1, sizeof(*srv));
  if (srv == NULL) return luaL_error(L, "out of memory");
  srv->self_ref = srv->on_request_ref = LUA_NOREF;
  srv->conns.next = srv->conns.prev = &srv->conns;
  srv->high_water = (size_t)high_water;
  srv->max_queued = (size_t)max_queued;
  srv->max_conns = (int)max_conns;
  srv->write_timeout = (uint64_t)(write_timeout * 1000.0 + 0.5);
  srv->max_header = (size_t)max_header;
  srv->grace_secs = grace;
  srv->lean = lean;

  h2o_config_init(&srv->config);
  srv->config.server_name = h2o_iovec_init(H2O_STRLIT(""));
  srv->config.max_request_entity_size = (size_t)max_body;
  srv->config.http1.req_timeout = (uint64_t)(idle_timeout * 1000.0 + 0.5);
  srv->config.http1.upgrade_to_http2 = 0;
  hostconf = h2o_config_register_host(&srv->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
  pathconf = h2o_config_register_path(hostconf, "/", 0);
  handler = (http_handler *)h2o_create_handler(pathconf, sizeof(*handler));
  handler->super.on_req = on_req;
  handler->srv = srv;
  h2o_context_init(&srv->h2o, ctx->loop, &srv->config);
  /* h2o's queue of messages from other threads (none are sent) keeps no loop running */
  uv_walk(ctx->loop, unref_queue, srv->h2o.queue);
  srv->accept.ctx = &srv->h2o;
  srv->accept.hosts = srv->config.hosts;
  srv->h2o_open = 1;
  uv_idle_init(ctx->loop, &srv->sentinel);
  srv->sentinel.data = srv;
  claude_handle_opened(ctx); /* h2o's context and its handles, until the sentinel closes */
  uv_prepare_init(ctx->loop, &srv->rewrap);
  srv->rewrap.data = srv;
  srv->rewrap_open = 1;
  claude_handle_opened(ctx);
  uv_prepare_start(&srv->rewrap, claude_http_framing_rewrap_all);
  uv_unref((uv_handle_t *)&srv->rewrap); /* it keeps no loop running */
  if (srv->write_timeout > 0) { /* a few looks per timeout, at least one a second */
    uint64_t every = srv->write_timeout / 4;
    if (every < 10) every = 10;
    if (every > 1000) every = 1000;
    uv_timer_init(ctx->loop, &srv->sweep);
    srv->sweep.data = srv;
    srv->sweep_open = 1;
    claude_handle_opened(ctx);
    srv->swept_at = uv_now(ctx->loop);
    uv_timer_start(&srv->sweep, sweep_fired, every, every);
    uv_unref((uv_handle_t *)&srv->sweep); /* it keeps no loop running */
  }
  uv_tcp_init(ctx->loop, &srv->listener);
  srv->listener.data = srv;
  srv->listener_open = 1;
  claude_handle_opened(ctx);
  claude_object_link(ctx, &srv->hdr, "http_server", srv_teardown);
  srv->box = box;
  *box = srv;

  err = uv_tcp_bind(&srv->listener, (struct sockaddr *)&addr, 0);
  if (err == 0) err = uv_listen((uv_stream_t *)&srv->listener, (int)backlog, on_accept);
  if (err == 0) err = uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&addr, &addrlen);
  if (err != 0) {
    srv_teardown(&srv->hdr);
    return claude_push_uv_error(L, err);
  }
  /* ref = false: the listener keeps no loop running, as Node's server.unref() (an
   * application's own uv_run returns with the demo's API still listening) */
  if (!ref) uv_unref((uv_handle_t *)&srv->listener);
  if (addr.ss_family == AF_INET6) {
    uv_ip6_name((struct sockaddr_in6 *)&addr, srv->address, sizeof srv->address);
    srv->port = ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
  } else {
    uv_ip4_name((struct sockaddr_in *)&addr, srv->address, sizeof srv->address);
    srv->port = ntohs(((struct sockaddr_in *)&addr)->sin_port);
  }
  lua_getfield(L, 1, "on_request");
  srv->on_request_ref = claude_ref(ctx, L, -1);
  lua_pop(L, 1);
  srv->self_ref = claude_ref(ctx, L, -1); /* a listening server is not collected */
  return 1;
}

/* server:port() -> the port it listens on */
static int srv_port(lua_State *L) {
  lua_pushinteger(L, check_server(L)->port);
  return 1;
}

/* server:address() -> the address it listens on, and the port */
static int srv_address(lua_State *L) {
  http_server *srv = check_server(L);
  lua_pushstring(L, srv->address);
  lua_pushinteger(L, srv->port);
  return 2;
}

/* server:stats() -> { connections, responses, queued, queued_max, queued_peak,
 * dropped_slow, dropped_timeout, refused, requests }: what the bounds see (a walk of
 * the open responses, for tests and monitoring; nothing on a hot path). */
static int srv_stats(lua_State *L) {
  http_server *srv = check_server(L);
  size_t total = 0, most = 0;
  lua_Integer open = 0;
  http_res *res;
  for (res = srv->responses; res != NULL; res = res->next) {
    size_t q = claude_http_res_queued(res);
    total += q;
    if (q > most) most = q;
    open++;
  }
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, srv->nconns);
  lua_setfield(L, -2, "connections");
  lua_pushinteger(L, open);
  lua_setfield(L, -2, "responses");
  lua_pushinteger(L, (lua_Integer)total);
  lua_setfield(L, -2, "queued");
  lua_pushinteger(L, (lua_Integer)most);
  lua_setfield(L, -2, "queued_max");
  lua_pushinteger(L, (lua_Integer)srv->queued_peak);
  lua_setfield(L, -2, "queued_peak");
  lua_pushinteger(L, (lua_Integer)srv->dropped_slow);
  lua_setfield(L, -2, "dropped_slow");
  lua_pushinteger(L, (lua_Integer)srv->dropped_timeout);
  lua_setfield(L, -2, "dropped_timeout");
  lua_pushinteger(L, (lua_Integer)srv->refused);
  lua_setfield(L, -2, "refused");
  lua_pushinteger(L, (lua_Integer)srv->requests);
  lua_setfield(L, -2, "requests");
  return 1;
}

/* server:close(): stops accepting; open responses get on_close("server
 * closed") and end (a 503, or the end of the stream); connections close once
 * their last response is written, or after close_grace seconds. Idempotent. */
static int srv_lua_close(lua_State *L) {
  http_server **box = (http_server **)luaL_checkudata(L, 1, MT_HTTP_SERVER);
  http_server *srv = *box;
  if (srv == NULL) return 0;
  *box = NULL;
  srv->box = NULL;
  srv_close(srv, 0);
  return 0;
}

/* __gc: only at lua_close can a listening server be collected */
static int srv_gc(lua_State *L) {
  http_server **box = (http_server **)luaL_checkudata(L, 1, MT_HTTP_SERVER);
  http_server *srv = *box;
  if (srv == NULL) return 0;
  *box = NULL;
  srv->box = NULL;
  srv->callbacks_off = 1;
  srv_close(srv, 1);
  return 0;
}

static int srv_tostring(lua_State *L) {
  http_server *srv = *(http_server **)luaL_checkudata(L, 1, MT_HTTP_SERVER);
  if (srv == NULL || srv->state != SRV_LISTENING) lua_pushliteral(L, "claude.HttpServer (closed)");
  else lua_pushfstring(L, "claude.HttpServer (http://%s%s%s:%d, %d connection%s)",
                       strchr(srv->address, ':') ? "[" : "", srv->address,
                       strchr(srv->address, ':') ? "]" : "", srv->port, srv->nconns,
                       srv->nconns == 1 ? "" : "s");
  return 1;
}

static const luaL_Reg srv_methods[] = {
  {"port", srv_port}, {"address", srv_address}, {"stats", srv_stats}, {"close", srv_lua_close},
  {NULL, NULL}};
static const luaL_Reg srv_metamethods[] = {
  {"__gc", srv_gc}, {"__close", srv_lua_close}, {"__tostring", srv_tostring},
  {"__index", NULL}, {NULL, NULL}};

void claude_open_http(lua_State *L) {
  luaL_newmetatable(L, MT_HTTP_SERVER);
  luaL_setfuncs(L, srv_metamethods, 0);
  luaL_newlib(L, srv_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  claude_http_open_response(L);
  claude_http_open_headers(L);
  lua_pushcfunction(L, l_http_listen);
  lua_setfield(L, -2, "http_listen");
}
