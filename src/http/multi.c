/*
 * multi.c -- the curl multi handle of a lua_State on the context's
 * libuv loop: curl_multi_socket_action with one uv_poll per socket curl
 * uses and a uv_timer for curl's timeouts (no threads of ours), and what
 * the multi handle reports done. One multi handle holds the connection
 * cache, so requests to one server reuse its keep-alive connections. While
 * no transfer runs, it keeps no libuv handle open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/client.h"

static const char HTTP_KEY = 'h'; /* its address keys the registry entry */

/* ---- libuv handles for curl --------------------------------------------- */

static void multi_free_if_done(http_multi *m) {
  if (m->closing && m->handles == 0 && m->depth == 0) free(m);
}

static void our_handle_closed(http_multi *m) {
  claude_ctx *ctx = m->hdr.ctx;
  m->handles--;
  multi_free_if_done(m);
  claude_handle_closed(ctx);
}

static void sock_closed(uv_handle_t *h) {
  http_sock *s = (http_sock *)h->data;
  http_multi *m = s->m;
  free(s);
  our_handle_closed(m);
}

static void sock_close(http_sock *s) {
  s->prev->next = s->next;
  s->next->prev = s->prev;
  uv_close((uv_handle_t *)&s->poll, sock_closed);
}


static void busy_handle_closed(uv_handle_t *h) {
  http_busy *b = (http_busy *)h->data;
  http_multi *m = b->m;
  if (--b->open == 0) free(b);
  our_handle_closed(m);
}

static void busy_close(http_multi *m) {
  http_busy *b = m->busy;
  if (b == NULL) return;
  m->busy = NULL;
  uv_close((uv_handle_t *)&b->timer, busy_handle_closed);
  uv_close((uv_handle_t *)&b->idle, busy_handle_closed);
  uv_close((uv_handle_t *)&b->check, busy_handle_closed);
}

static int busy_open(http_multi *m) {
  http_busy *b;
  if (m->busy != NULL) return 0;
  b = (http_busy *)calloc(1, sizeof(*b));
  if (b == NULL) return -1;
  b->m = m;
  uv_timer_init(m->hdr.ctx->loop, &b->timer);
  uv_idle_init(m->hdr.ctx->loop, &b->idle);
  uv_check_init(m->hdr.ctx->loop, &b->check);
  b->timer.data = b->idle.data = b->check.data = b;
  b->open = 3;
  m->handles += 3;
  claude_handle_opened(m->hdr.ctx);
  claude_handle_opened(m->hdr.ctx);
  claude_handle_opened(m->hdr.ctx);
  m->busy = b;
  return 0;
}

/* Nothing runs and nothing waits for Lua: the multi handle goes idle and
 * keeps no libuv handle open (its connections stay in curl's cache). */
void claude_http_maybe_idle(http_multi *m) {
  if (m->active == 0 && m->dirty == NULL) busy_close(m);
}

/* Hands Lua what the requests collected. Lua may close the state's client
 * meanwhile (m->depth keeps m), or end the last transfer: then the multi
 * handle goes idle. */
static void on_check(uv_check_t *h) {
  http_multi *m = ((http_busy *)h->data)->m;
  uv_idle_stop(&m->busy->idle);
  uv_check_stop(&m->busy->check);
  m->depth++;
  claude_http_deliver_all(m);
  m->depth--;
  if (m->closing) multi_free_if_done(m);
  else claude_http_maybe_idle(m);
}

static void idle_cb(uv_idle_t *h) { (void)h; }

/* What curl reports done is taken out of the multi handle, and whatever
 * waits for Lua is handed over in this turn's check phase. */
static void collect(http_multi *m) {
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(m->multi, &left)) != NULL) {
    http_req *r = NULL;
    if (msg->msg != CURLMSG_DONE) continue;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
    r->result = msg->data.result;
    curl_multi_remove_handle(m->multi, r->easy);
    r->running = 0;
    m->active--;
    r->done_pending = 1;
    claude_http_mark_dirty(r);
  }
  if (m->dirty != NULL && busy_open(m) == 0 && !uv_is_active((uv_handle_t *)&m->busy->check)) {
    uv_idle_start(&m->busy->idle, idle_cb);
    uv_check_start(&m->busy->check, on_check);
  }
}

static void on_poll(uv_poll_t *h, int status, int events) {
  http_sock *s = (http_sock *)h->data;
  http_multi *m = s->m;
  int flags = 0, running;
  if (status < 0) flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(m->multi, s->fd, flags, &running);
  collect(m);
}

static void on_timer(uv_timer_t *t) {
  http_multi *m = ((http_busy *)t->data)->m;
  int running;
  curl_multi_socket_action(m->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  collect(m);
}

/* CURLMOPT_SOCKETFUNCTION: watch `fd` for what curl wants. */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp) {
  http_multi *m = (http_multi *)userp;
  http_sock *s = (http_sock *)socketp;
  int events = 0;
  (void)e;
  if (m->closing) return 0; /* our handles are being closed already */
  if (what == CURL_POLL_REMOVE) {
    if (s != NULL) {
      curl_multi_assign(m->multi, fd, NULL);
      sock_close(s);
    }
    return 0;
  }
  if (s == NULL) {
    s = (http_sock *)calloc(1, sizeof(*s));
    if (s == NULL) return -1;
    if (uv_poll_init_socket(m->hdr.ctx->loop, &s->poll, fd) != 0) {
      free(s);
      return -1;
    }
    s->poll.data = s;
    s->m = m;
    s->fd = fd;
    s->next = m->socks.next;
    s->prev = &m->socks;
    m->socks.next->prev = s;
    m->socks.next = s;
    m->handles++;
    claude_handle_opened(m->hdr.ctx);
    curl_multi_assign(m->multi, fd, s);
  }
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  uv_poll_start(&s->poll, events, on_poll);
  return 0;
}

/* CURLMOPT_TIMERFUNCTION: call curl back after `ms` (-1: never). */
static int on_timeout_set(CURLM *multi, long ms, void *userp) {
  http_multi *m = (http_multi *)userp;
  (void)multi;
  if (m->closing) return 0;
  if (ms < 0) {
    if (m->busy) uv_timer_stop(&m->busy->timer);
    return 0;
  }
  /* With no transfer nothing needs timing; the next one sets a timeout again */
  if (m->busy == NULL && m->active == 0) return 0;
  if (busy_open(m) != 0) return -1;
  uv_timer_start(&m->busy->timer, on_timer, (uint64_t)ms, 0);
  return 0;
}

/* ---- the multi handle of a lua_State ------------------------------------ */

static void multi_teardown(claude_handle *h) {
  http_multi *m = (http_multi *)h;
  int i;
  if (m->box != NULL) *m->box = NULL;
  while (m->reqs != NULL) {
    http_req *r = m->reqs;
    claude_http_stop(r);
    if (r->box != NULL) { /* the context goes first: the userdata becomes closed */
      *r->box = NULL;
      r->box = NULL;
    }
    claude_http_free(r);
  }
  m->closing = 1;
  busy_close(m);
  while (m->socks.next != &m->socks) sock_close(m->socks.next);
  for (i = 0; i < m->npool; i++) curl_easy_cleanup(m->pool[i]);
  m->npool = 0;
  curl_multi_cleanup(m->multi); /* closes the cached connections */
  m->multi = NULL;
  curl_global_cleanup();
  multi_free_if_done(m);
}

http_multi *claude_http_multi(lua_State *L, claude_ctx *ctx) {
  http_multi **box, *m;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &HTTP_KEY) == LUA_TUSERDATA) {
    m = *(http_multi **)lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (m == NULL) luaL_error(L, "the HTTP client of this state is closed");
    return m;
  }
  lua_pop(L, 1);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) luaL_error(L, "curl_global_init failed");
  box = (http_multi **)lua_newuserdatauv(L, sizeof(*box), 0);
  m = (http_multi *)calloc(1, sizeof(*m));
  if (m == NULL || (m->multi = curl_multi_init()) == NULL) {
    free(m);
    curl_global_cleanup();
    luaL_error(L, "not enough memory");
    return NULL;
  }
  curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m);
  curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, on_timeout_set);
  curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m);
  /* idle connections kept (curl's default follows the transfers running) */
  curl_multi_setopt(m->multi, CURLMOPT_MAXCONNECTS, (long)MAX_IDLE_CONNECTIONS);
  m->socks.next = m->socks.prev = &m->socks;
  m->box = box;
  *box = m;
  claude_object_link(ctx, &m->hdr, "http", multi_teardown);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &HTTP_KEY);
  return m;
}
