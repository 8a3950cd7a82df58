/*
 * response.c -- the response object on_request gets with each request:
 * (Over 600 lines: the complete and the streamed answer share one life
 * cycle with h2o's generator, and the bounds of a slow client (max_queued,
 * write_timeout) act on it; splitting them would split that.)
 * a complete answer (respond), or a streamed one (start, write, finish) that
 * may stay open as long as the client stays, answered now or later from
 * another task. The object outlives the request safely: once the client is
 * gone or the response finished, its methods return errors.
 *
 * h2o owns the request (h2o_req_t) and disposes of it when the connection
 * closes or the next request starts; a shared allocation in the request's
 * pool tells us (res_disposed), so `res->req` is never used after that.
 * While a response is open we watch the peer for a hang-up (h2o reads
 * nothing while a request is being answered), on a dup of the socket so
 * that h2o's own libuv handle is left alone.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grow.h"
#include "http/server.h"

/* The most bytes one h2o_send hands the socket: h2o calls proceed when all
 * of a send went out, so this is the unit of progress write_timeout waits
 * for (a respond() body larger than this goes out in such pieces too). */
#define SEND_MAX ((size_t)64 * 1024)

/* ------------------------------------------------------------------------- */

static void res_maybe_free(http_res *res) {
  if (res->box != NULL || res->req != NULL || res->watch_open || res->pins > 0) return;
  free(res->inflight);
  free(res->pending);
  free(res);
}

static void res_release(http_res *res) {
  res->pins--;
  res_maybe_free(res);
}

static int callbacks_on(http_res *res) {
  return res->self_ref != LUA_NOREF && !res->quiet && !res->ctx->closing && res->srv != NULL &&
         !res->srv->callbacks_off;
}

/* Calls res[name](res, arg) if the field is a function, protected. */
static void res_callback(http_res *res, const char *name, const char *arg) {
  claude_ctx *ctx = res->ctx;
  lua_State *L;
  int base;
  if (!callbacks_on(res)) return;
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, res->self_ref);
  base = lua_gettop(L);
  if (lua_getiuservalue(L, base, 1) == LUA_TTABLE && lua_getfield(L, -1, name) == LUA_TFUNCTION) {
    lua_insert(L, base); /* fn box uservalue */
    lua_pop(L, 1);
    if (arg != NULL) lua_pushstring(L, arg);
    claude_pcall(ctx, L, arg != NULL ? 2 : 1);
  } else {
    lua_settop(L, base - 1);
  }
}

static void watch_closed(uv_handle_t *h) {
  http_res *res = (http_res *)h->data;
  claude_ctx *ctx = res->ctx;
  close(res->watch_fd);
  res->watch_fd = -1;
  res->watch_open = 0;
  res_maybe_free(res);
  claude_handle_closed(ctx);
}

static void watch_stop(http_res *res) {
  if (res->watch_open && !uv_is_closing((uv_handle_t *)&res->watch))
    uv_close((uv_handle_t *)&res->watch, watch_closed);
}

/* Ends h2o's side of a response Lua can no longer finish: a 503 if nothing
 * was sent, else a broken chunk; either way the connection closes after. */
static void end_request(http_res *res, int was) {
  h2o_req_t *req = res->req;
  req->http1_is_persistent = 0;
  if (was == RES_NEW) {
    h2o_send_error_generic(req, 503, "Service Unavailable", "service unavailable\n",
                           H2O_SEND_ERROR_HTTP1_CLOSE_CONNECTION);
  } else {
    res->sending = 1;
    if (res->chunked) { /* a broken chunk, as h2o's encoder sends: the client sees an error */
      h2o_iovec_t broken = h2o_iovec_init(H2O_STRLIT("\r\n1\r\n"));
      h2o_send(req, &broken, 1, H2O_SEND_STATE_ERROR);
    } else {
      h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
    }
  }
}

/* The response can no longer be used from Lua: tell h2o (when end_h2o and no
 * send is in flight; else proceed does), then Lua's on_close(res, reason).
 * Never frees res (compilers rightly dislike a use after a possible free):
 * callers end with res_maybe_free. */
static void res_gone(http_res *res, const char *reason, int end_h2o) {
  int was = res->state;
  if (was == RES_FINISHED || was == RES_GONE) return;
  res->pins++;
  res->state = RES_GONE;
  res->gone_reason = reason;
  res->pending_len = res->pending_off = 0;
  res->finishing = 0;
  watch_stop(res);
  if (end_h2o && res->req != NULL && !res->sending) end_request(res, was);
  res_callback(res, "on_close", reason);
  claude_unref(res->ctx, &res->self_ref);
  res->pins--; /* the caller frees it if need be, last */
}

static void watch_cb(uv_poll_t *h, int status, int events) {
  http_res *res = (http_res *)h->data;
  if (status < 0 || (events & UV_DISCONNECT)) {
    res_gone(res, res->dropped != NULL ? res->dropped : "client disconnected", 1);
    res_maybe_free(res);
  }
}

/* Watches the peer of an open response for a hang-up (EPOLLRDHUP, HUP, ERR).
 * Without it a client that leaves while we think or stream nothing would be
 * noticed only at the next write, or never. */
static void watch_start(http_res *res) {
  if (res->fd < 0 || res->watch_open) return;
  res->watch_fd = fcntl(res->fd, F_DUPFD_CLOEXEC, 0);
  if (res->watch_fd < 0) return;
  if (uv_poll_init(res->ctx->loop, &res->watch, res->watch_fd) != 0) {
    close(res->watch_fd);
    res->watch_fd = -1;
    return;
  }
  res->watch.data = res;
  res->watch_open = 1;
  claude_handle_opened(res->ctx);
  uv_poll_start(&res->watch, UV_DISCONNECT, watch_cb);
}

/* h2o is done with the request (connection closed, or the next request on it
 * starts): called while the request's pool is cleared. */
static void res_disposed(void *p) {
  http_res *res = *(http_res **)p;
  http_server *srv = res->srv;
  res->req = NULL;
  if (res->next != NULL) res->next->prev = res->prev;
  if (res->prev != NULL) res->prev->next = res->next;
  else if (srv != NULL && srv->responses == res) srv->responses = res->next;
  res->prev = res->next = NULL;
  res->pins++;
  res_gone(res, res->dropped != NULL ? res->dropped : "client disconnected", 0);
  res->srv = NULL;
  res_release(res);
}

/* Sends what is queued (and the end of the body when finishing), at most
 * SEND_MAX bytes of it, as one chunk when chunked. */
static void flush(http_res *res) {
  size_t avail = res->pending_len - res->pending_off, n = avail > SEND_MAX ? SEND_MAX : avail;
  int last = res->finishing && n == avail, k = 0;
  h2o_iovec_t iov[3];
  if (res->pending_off == 0 && n == avail) { /* all of it: swap the buffers, no copy */
    char *buf = res->inflight;
    size_t cap = res->inflight_cap;
    res->inflight = res->pending;
    res->inflight_cap = res->pending_cap;
    res->pending = buf;
    res->pending_cap = cap;
    res->pending_len = 0;
  } else { /* a slice: copied, so that appends may move pending meanwhile */
    if (res->inflight_cap < n) {
      char *p = (char *)realloc(res->inflight, SEND_MAX);
      if (p == NULL) { /* keep it for the next proceed; the write timeout ends a stuck one */
        n = 0;
        last = 0;
      } else {
        res->inflight = p;
        res->inflight_cap = SEND_MAX;
      }
    }
    memcpy(res->inflight, res->pending + res->pending_off, n);
    res->pending_off += n;
    if (res->pending_off == res->pending_len) res->pending_off = res->pending_len = 0;
  }
  res->inflight_len = n;
  if (res->chunked && n > 0) {
    int len = snprintf(res->chunk_head, sizeof res->chunk_head, "%zx\r\n", n);
    iov[k++] = h2o_iovec_init(res->chunk_head, (size_t)len);
    iov[k++] = h2o_iovec_init(res->inflight, n);
    iov[k++] = last ? h2o_iovec_init(H2O_STRLIT("\r\n0\r\n\r\n")) : h2o_iovec_init(H2O_STRLIT("\r\n"));
  } else if (res->chunked && last) {
    iov[k++] = h2o_iovec_init(H2O_STRLIT("0\r\n\r\n"));
  } else {
    /* always one buffer, even empty: with none, h2o ends an unframed body
     * (HEAD, HTTP/1.0) inside this call, and may start the next pipelined
     * request from within a Lua method */
    iov[k++] = h2o_iovec_init(res->inflight, n);
  }
  res->sending = 1;
  res->waiting_since = uv_now(res->ctx->loop);
  res->ctx->writes++;
  h2o_send(res->req, iov, (size_t)k, last ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static size_t queued(http_res *res) {
  return res->pending_len - res->pending_off + (res->sending ? res->inflight_len : 0);
}

size_t claude_http_res_queued(http_res *res) { return queued(res); }

/* Drops the client of res: the socket is shut down (reset at its close, so
 * that the kernel does not keep what the client never took either); h2o's
 * send fails, or the watch sees the hang-up, and the response goes with
 * on_close(why). Calls nothing in Lua. */
static void drop_client(http_res *res, const char *why) {
  struct linger lg = {1, 0};
  if (res->dropped != NULL) return;
  res->dropped = why;
  if (res->fd < 0) return;
  setsockopt(res->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  shutdown(res->fd, SHUT_RDWR);
}

void claude_http_res_sweep(http_res *res, uint64_t now, int held) {
  http_server *srv = res->srv;
  if (srv == NULL || res->dropped != NULL || !(res->sending || res->writing_inline)) return;
  if (held) {
    res->waiting_since = now;
    return;
  }
  if (now - res->waiting_since < srv->write_timeout) return;
  srv->dropped_timeout++;
  drop_client(res, "write timeout: the client took nothing of the answer");
}

/* h2o wrote what we gave it and asks for more. */
static void gen_proceed(h2o_generator_t *gen, h2o_req_t *req) {
  http_res *res = H2O_STRUCT_FROM_MEMBER(http_res, gen, gen);
  res->pins++;
  res->sending = 0;
  res->inflight_len = 0;
  if (res->pending_len > res->pending_off || res->finishing) flush(res);
  else if (res->state == RES_GONE && res->req != NULL) end_request(res, RES_STREAMING);
  if (res->want_drain && res->state == RES_STREAMING &&
      queued(res) <= (res->srv ? res->srv->high_water : 0)) {
    res->want_drain = 0;
    res_callback(res, "on_drain", NULL);
  }
  res_release(res);
}

/* ------------------------------------------------------------------------- */

http_res *claude_http_res_new(lua_State *L, http_server *srv, h2o_req_t *req) {
  http_res **box = (http_res **)lua_newuserdatauv(L, sizeof(*box), 1);
  http_res *res, **tie;
  h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
  *box = NULL;
  luaL_setmetatable(L, MT_HTTP_RESPONSE);
  res = (http_res *)calloc(1, sizeof(*res));
  if (res == NULL) luaL_error(L, "out of memory");
  res->ctx = srv->hdr.ctx;
  res->srv = srv;
  res->req = req;
  res->gen.proceed = gen_proceed;
  res->watch_fd = -1;
  res->fd = sock != NULL ? h2o_socket_get_fd(sock) : -1;
  res->state = RES_NEW;
  res->is_head = h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"));
  tie = (http_res **)h2o_mem_alloc_shared(&req->pool, sizeof(*tie), res_disposed);
  *tie = res;
  res->next = srv->responses;
  if (res->next != NULL) res->next->prev = res;
  srv->responses = res;
  res->box = box;
  *box = res;
  res->self_ref = claude_ref(res->ctx, L, -1);
  return res;
}

void claude_http_res_after_handler(http_res *res, int failed) {
  if (res->req == NULL) {
    /* gone during the handler */
  } else if (!failed) {
    if (res->state == RES_NEW || res->state == RES_STREAMING) watch_start(res);
  } else if (res->state == RES_NEW) {
    res->state = RES_FINISHED;
    h2o_send_error_generic(res->req, 500, "Internal Server Error", "internal server error\n", 0);
    claude_unref(res->ctx, &res->self_ref);
  } else if (res->state == RES_STREAMING) {
    res->state = RES_GONE;
    res->gone_reason = "the handler raised an error";
    res->pending_len = res->pending_off = 0;
    res->finishing = 0;
    if (!res->sending) end_request(res, RES_STREAMING);
    claude_unref(res->ctx, &res->self_ref);
  }
  res_release(res);
}

void claude_http_res_server_closing(http_res *res, int abort) {
  int was = res->state;
  if (res->req != NULL) res->req->http1_is_persistent = 0;
  if (was == RES_FINISHED || was == RES_GONE) return;
  if (abort) {
    res_gone(res, "server closed", 1); /* h2o holds the request: nothing to free */
    return;
  }
  /* graceful: a 503 for a request not answered yet, the end of the body for
   * a stream (what is queued still goes out) */
  res->pins++;
  res->state = RES_GONE;
  res->gone_reason = "server closed";
  watch_stop(res);
  if (was == RES_NEW) {
    end_request(res, RES_NEW);
  } else {
    res->finishing = 1;
    if (!res->sending) flush(res);
  }
  res_callback(res, "on_close", "server closed");
  claude_unref(res->ctx, &res->self_ref);
  res_release(res);
}

/* ------------------------------------------------------------------------- */

static http_res *check_res(lua_State *L) {
  http_res *res = *(http_res **)luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  if (res == NULL) luaL_error(L, "attempt to use a closed response");
  return res;
}

/* nil, message, code for a response Lua can no longer use; 0 if usable. */
static int unusable(lua_State *L, http_res *res) {
  if (res->state == RES_GONE) {
    luaL_pushfail(L);
    lua_pushfstring(L, "the response is closed (%s)", res->gone_reason);
    lua_pushliteral(L, "closed");
    return 3;
  }
  if (res->state == RES_FINISHED) {
    luaL_pushfail(L);
    lua_pushliteral(L, "the response is already finished");
    lua_pushliteral(L, "finished");
    return 3;
  }
  return 0;
}

static const char *reason_phrase(int status) {
  switch (status) {
  case 200: return "OK";
  case 201: return "Created";
  case 202: return "Accepted";
  case 204: return "No Content";
  case 206: return "Partial Content";
  case 301: return "Moved Permanently";
  case 302: return "Found";
  case 303: return "See Other";
  case 304: return "Not Modified";
  case 307: return "Temporary Redirect";
  case 308: return "Permanent Redirect";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 413: return "Payload Too Large";
  case 415: return "Unsupported Media Type";
  case 422: return "Unprocessable Content";
  case 429: return "Too Many Requests";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  default: return status < 300 ? "OK" : status < 400 ? "Redirect" : status < 500 ? "Client Error"
                                                                                 : "Server Error";
  }
}

static int check_status(lua_State *L, int idx) {
  lua_Integer status = luaL_checkinteger(L, idx);
  luaL_argcheck(L, status >= 200 && status <= 599, idx, "status must be 200-599");
  return (int)status;
}

/* Status line and headers: checked, then set; raises on bad input
 * (http/headers.c). */
static void response_head(lua_State *L, http_res *res, int status, int hidx) {
  claude_http_headers_check(L, hidx);
  res->req->res.status = status;
  res->req->res.reason = reason_phrase(status);
  claude_http_headers_add(L, hidx, res->req);
}

static void append(lua_State *L, http_res *res, const char *s, size_t len);

/* res:respond(status [, headers [, body]]) -> true | nil, err, code */
static int res_respond(lua_State *L) {
  http_res *res = check_res(L);
  int status = check_status(L, 2);
  size_t len = 0;
  const char *body = luaL_optlstring(L, 4, "", &len);
  int n = unusable(L, res);
  if (n) return n;
  if (res->state == RES_STREAMING) return luaL_error(L, "respond after start (use write and finish)");
  response_head(L, res, status, 3);
  watch_stop(res);
  res->req->res.content_length = len;
  if (len <= SEND_MAX || res->is_head) {
    res->state = RES_FINISHED;
    res->writing_inline = 1; /* until h2o disposes of the request */
    res->waiting_since = uv_now(res->ctx->loop);
    res->ctx->writes++;
    h2o_send_inline(res->req, body, len);
  } else { /* in pieces, so that write_timeout sees the progress of a large body */
    append(L, res, body, len);
    res->state = RES_FINISHED;
    res->finishing = 1;
    res->pins++;
    h2o_start_response(res->req, &res->gen);
    flush(res);
    res_release(res);
  }
  claude_unref(res->ctx, &res->self_ref);
  lua_pushboolean(L, 1);
  return 1;
}

/* res:start(status [, headers]) -> true | nil, err, code: sends the head now
 * (a client waits for it); the body follows with write and finish. */
static int res_start(lua_State *L) {
  http_res *res = check_res(L);
  int status = check_status(L, 2);
  int n = unusable(L, res);
  if (n) return n;
  if (res->state == RES_STREAMING) return luaL_error(L, "the response is already started");
  response_head(L, res, status, 3);
  /* An HTTP/1.1 200 of unknown length is chunked (other statuses are
   * close-delimited: h2o's rule). h2o's chunked encoder would do it, but it
   * turns the empty first send below into no write at all, so the head
   * would wait for the first byte of body: the client of an event stream
   * with nothing to say yet would never see its answer begin. With the
   * header set, h2o leaves the body to us. */
  if (res->req->version == 0x101 && !res->is_head && status == 200) {
    res->chunked = 1;
    h2o_add_header_by_str(&res->req->pool, &res->req->res.headers, H2O_STRLIT("transfer-encoding"),
                          1, NULL, H2O_STRLIT("chunked"));
  }
  res->state = RES_STREAMING;
  h2o_start_response(res->req, &res->gen);
  flush(res);
  lua_pushboolean(L, 1);
  return 1;
}

static void append(lua_State *L, http_res *res, const char *s, size_t len) {
  if (res->is_head || len == 0) return;
  if (res->pending_off > 0 && res->pending_len + len > res->pending_cap) {
    /* what was handed on makes room first */
    memmove(res->pending, res->pending + res->pending_off, res->pending_len - res->pending_off);
    res->pending_len -= res->pending_off;
    res->pending_off = 0;
  }
  if (!claude_grow(&res->pending, &res->pending_cap, res->pending_len + len, 4096))
    luaL_error(L, "out of memory");
  memcpy(res->pending + res->pending_len, s, len);
  res->pending_len += len;
}

/* res:write(chunk) -> true | false (queued, but more than high_water bytes
 * wait: on_drain is called when they went out) | nil, err, code (also when
 * more than max_queued bytes already waited: the client is dropped) */
static int res_write(lua_State *L) {
  http_res *res = check_res(L);
  http_server *srv;
  size_t len, q;
  const char *s = luaL_checklstring(L, 2, &len);
  int n = unusable(L, res);
  if (n) return n;
  if (res->state == RES_NEW) return luaL_error(L, "write before start");
  srv = res->srv;
  if (res->dropped == NULL && srv->max_queued > 0 && queued(res) > srv->max_queued) {
    srv->dropped_slow++;
    drop_client(res, "the client is too slow: more than max_queued bytes wait to be sent");
  }
  if (res->dropped != NULL) {
    luaL_pushfail(L);
    lua_pushfstring(L, "the response is closed (%s)", res->dropped);
    lua_pushliteral(L, "closed");
    return 3;
  }
  append(L, res, s, len);
  if (!res->sending && res->pending_len > res->pending_off) flush(res);
  q = queued(res);
  if (q > srv->queued_peak) srv->queued_peak = q;
  if (q > srv->high_water) {
    res->want_drain = 1;
    lua_pushboolean(L, 0);
  } else {
    lua_pushboolean(L, 1);
  }
  return 1;
}

/* res:finish([chunk]) -> true | nil, err, code: ends the body */
static int res_finish(lua_State *L) {
  http_res *res = check_res(L);
  size_t len = 0;
  const char *s = luaL_optlstring(L, 2, NULL, &len);
  int n = unusable(L, res);
  if (n) return n;
  if (res->state == RES_NEW) return luaL_error(L, "finish before start");
  if (res->dropped != NULL) s = NULL; /* nothing more for a dropped client */
  if (s != NULL) append(L, res, s, len);
  res->state = RES_FINISHED;
  res->finishing = 1;
  watch_stop(res);
  res->pins++;
  if (!res->sending) flush(res);
  claude_unref(res->ctx, &res->self_ref);
  res_release(res);
  lua_pushboolean(L, 1);
  return 1;
}

/* res:abort(): ends the response abruptly and closes the connection (a 503
 * if nothing was sent, else a broken chunk the client sees as an error);
 * on_close is not called. Nothing happens to a finished or closed response. */
static int res_abort(lua_State *L) {
  http_res *res = check_res(L);
  if (res->state == RES_NEW || res->state == RES_STREAMING) {
    res->quiet = 1;
    res_gone(res, "aborted", 1);
  }
  return 0;
}

static const char *const state_names[] = {"new", "streaming", "finished", "closed"};

/* res:state() -> "new" | "streaming" | "finished" | "closed" */
static int res_state(lua_State *L) {
  http_res *res = *(http_res **)luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  lua_pushstring(L, res == NULL ? "closed" : state_names[res->state]);
  return 1;
}

/* res:queued() -> bytes written and not yet taken by the socket */
static int res_queued(lua_State *L) {
  http_res *res = check_res(L);
  lua_pushinteger(L, (lua_Integer)queued(res));
  return 1;
}

static int res_gc(lua_State *L) {
  http_res **box = (http_res **)luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  http_res *res = *box;
  if (res == NULL) return 0;
  *box = NULL;
  res->box = NULL;
  res->pins++;
  /* only at lua_close can an open response be collected (self_ref holds it) */
  if (res->state == RES_NEW || res->state == RES_STREAMING) {
    res->quiet = 1;
    res_gone(res, "collected", 1);
  }
  claude_unref(res->ctx, &res->self_ref);
  res_release(res);
  return 0;
}

static int res_tostring(lua_State *L) {
  http_res *res = *(http_res **)luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  lua_pushfstring(L, "claude.HttpResponse (%s)", res == NULL ? "closed" : state_names[res->state]);
  return 1;
}

/* Methods first, then the fields Lua stored (on_close, on_drain, ...). */
static int res_index(lua_State *L) {
  luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (lua_getiuservalue(L, 1, 1) != LUA_TTABLE) return 0;
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int res_newindex(lua_State *L) {
  luaL_checkudata(L, 1, MT_HTTP_RESPONSE);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
    return luaL_error(L, "cannot replace the method '%s'", lua_tostring(L, 2));
  if (lua_getiuservalue(L, 1, 1) != LUA_TTABLE) {
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, 1, 1);
  }
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_rawset(L, -3);
  return 0;
}

static const luaL_Reg res_methods[] = {
  {"respond", res_respond}, {"start", res_start}, {"write", res_write}, {"finish", res_finish},
  {"abort", res_abort}, {"state", res_state}, {"queued", res_queued}, {NULL, NULL}};
static const luaL_Reg res_metamethods[] = {
  {"__gc", res_gc}, {"__tostring", res_tostring}, {"__newindex", NULL}, {"__index", NULL},
  {NULL, NULL}};

void claude_http_open_response(lua_State *L) {
  luaL_newmetatable(L, MT_HTTP_RESPONSE);
  luaL_setfuncs(L, res_metamethods, 0);
  luaL_newlib(L, res_methods);
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, res_index, 1);
  lua_setfield(L, -3, "__index");
  lua_pushcclosure(L, res_newindex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);
}
