/*
 * http_client.c -- core.http_request: HTTP(S) requests with libcurl on the
 * context's libuv loop: curl_multi_socket_action, one uv_poll per socket
 * curl uses, a uv_timer for curl's timeouts. No threads of ours.
 *
 * One curl multi handle per lua_State holds the connection cache, so
 * requests to one server reuse its keep-alive connections; easy handles of
 * finished requests are kept for the next ones. libcurl's callbacks only
 * collect bytes (and parse SSE) into the request. Lua's callbacks run in the
 * loop's check phase, after curl_multi_socket_action has returned: curl
 * forbids adding or removing transfers from inside its callbacks, and Lua
 * code does both. While no transfer runs, no libuv handle stays open.
 *
 * A request lives in a userdata box. While its transfer runs, a registry
 * ref keeps the box alive; the C side is freed when the box is collected
 * and nothing (curl, a delivery under way) still uses it, in either order.
 * The contract for Lua is documented in lua/claude/http/client.lua.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "core.h"
#include "sse.h"

#define MT_REQUEST "claude.HttpRequest"
#define POOL_MAX 16 /* idle easy handles kept for reuse */
#define MAX_IDLE_CONNECTIONS 64

enum { BODY_COLLECT, BODY_STREAM, BODY_SSE };

typedef struct http_multi http_multi;
typedef struct http_req http_req;
typedef struct http_busy http_busy;

typedef struct http_sock {
  uv_poll_t poll;
  http_multi *m;
  curl_socket_t fd;
  struct http_sock *prev, *next;
} http_sock;

struct http_multi {
  claude_handle hdr;     /* linked in the context: torn down at lua_close */
  http_multi **box;      /* the registry's box pointing here */
  CURLM *multi;
  http_busy *busy;       /* handles open while transfers run or Lua has things due */
  int handles;           /* our libuv handles not yet closed */
  int active;            /* transfers in the multi handle */
  int closing;
  int depth;             /* deliveries under way */
  http_sock socks;       /* list head */
  http_req *reqs;        /* every request not yet freed */
  http_req *dirty, *dirty_tail; /* requests with something for Lua */
  CURL *pool[POOL_MAX];
  int npool;
};

struct http_req {
  http_multi *m;
  http_req **box;              /* the userdata pointing here, or NULL */
  http_req *prev, *next;       /* m->reqs */
  http_req *dirty_next;
  int is_dirty, delivering;
  CURL *easy;
  struct curl_slist *hdrs;
  char *label;                 /* "METHOD url" */
  int self_ref, body_ref, headers_ref, data_ref, event_ref, done_ref;
  int running;                 /* in the multi handle */
  int finished;                /* done or cancelled: no more callbacks */
  int cancelled;
  int mode;                    /* BODY_*, chosen when the headers are in */
  int want_sse, want_stream;
  long status;
  claude_buf head;             /* "name:value\n" lines of the final response */
  int head_done, head_pending;
  claude_buf body;             /* the collected body, or a chunk not yet delivered */
  size_t body_total;
  long long max_body;          /* -1: the default for the mode */
  claude_sse sse;
  claude_buf events;           /* parsed events not yet delivered, serialized */
  size_t events_pos;
  int done_pending;
  CURLcode result;
  const char *fail_kind;       /* our own reason for aborting the transfer */
  char fail_msg[128];
  char errbuf[CURL_ERROR_SIZE];
};

static const char HTTP_KEY = 'h'; /* its address keys the registry entry */

static void deliver_all(http_multi *m);
static void mark_dirty(http_req *r);

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

/* The handles a multi handle needs while it works: curl's timer, and a
 * check handle that hands Lua what curl produced once the turn's I/O is
 * handled, with an idle handle keeping the loop from blocking meanwhile. A
 * result that came from a timer at the start of a turn would otherwise wait
 * behind a poll that blocks until some other I/O arrives. */
struct http_busy {
  uv_timer_t timer;
  uv_idle_t idle;
  uv_check_t check;
  http_multi *m;
  int open; /* handles not yet closed */
};

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
static void maybe_idle(http_multi *m) {
  if (m->active == 0 && m->dirty == NULL) busy_close(m);
}

static void on_check(uv_check_t *h) {
  http_multi *m = ((http_busy *)h->data)->m;
  uv_idle_stop(&m->busy->idle);
  uv_check_stop(&m->busy->check);
  deliver_all(m);
  if (!m->closing) maybe_idle(m);
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
    mark_dirty(r);
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

/* ---- requests ----------------------------------------------------------- */

static void release_refs(http_req *r) {
  claude_ctx *ctx = r->m->hdr.ctx;
  claude_unref(ctx, &r->headers_ref);
  claude_unref(ctx, &r->data_ref);
  claude_unref(ctx, &r->event_ref);
  claude_unref(ctx, &r->done_ref);
  claude_unref(ctx, &r->body_ref);
  claude_unref(ctx, &r->self_ref);
}

/* The easy handle goes back to the pool (reset: it points at nothing of
 * ours any more), the header list with it. */
static void recycle_easy(http_req *r) {
  http_multi *m = r->m;
  if (r->easy != NULL) {
    if (!m->closing && m->npool < POOL_MAX) {
      curl_easy_reset(r->easy);
      m->pool[m->npool++] = r->easy;
    } else {
      curl_easy_cleanup(r->easy);
    }
    r->easy = NULL;
  }
  curl_slist_free_all(r->hdrs);
  r->hdrs = NULL;
}

static void undirty(http_req *r) {
  http_multi *m = r->m;
  http_req **pp, *prev = NULL;
  if (!r->is_dirty) return;
  for (pp = &m->dirty; *pp != NULL; prev = *pp, pp = &(*pp)->dirty_next) {
    if (*pp == r) {
      *pp = r->dirty_next;
      if (m->dirty_tail == r) m->dirty_tail = prev;
      break;
    }
  }
  r->dirty_next = NULL;
  r->is_dirty = 0;
}

/* Ends the request where it stands: out of the multi handle, no more
 * callbacks, nothing pending. */
static void req_stop(http_req *r) {
  http_multi *m = r->m;
  if (r->running) {
    curl_multi_remove_handle(m->multi, r->easy);
    r->running = 0;
    m->active--;
  }
  r->finished = 1;
  r->head_pending = r->done_pending = 0;
  r->events.len = r->events_pos = 0;
  r->body.len = 0;
  undirty(r);
  release_refs(r);
  recycle_easy(r);
  if (!m->closing) maybe_idle(m);
}

static void req_free(http_req *r) {
  http_multi *m = r->m;
  if (r->prev) r->prev->next = r->next;
  else m->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  recycle_easy(r);
  claude_buf_free(&r->head);
  claude_buf_free(&r->body);
  claude_buf_free(&r->events);
  claude_sse_free(&r->sse);
  free(r->label);
  free(r);
}

static void req_free_if_done(http_req *r) {
  if (r->box == NULL && !r->running && !r->is_dirty && r->delivering == 0) req_free(r);
}

static void mark_dirty(http_req *r) {
  http_multi *m = r->m;
  if (r->is_dirty) return;
  r->is_dirty = 1;
  r->dirty_next = NULL;
  if (m->dirty_tail) m->dirty_tail->dirty_next = r;
  else m->dirty = r;
  m->dirty_tail = r;
}

/* Makes curl abort the transfer (a write callback returning 0). */
static size_t fail(http_req *r, const char *kind, const char *msg, size_t limit) {
  r->fail_kind = kind;
  snprintf(r->fail_msg, sizeof r->fail_msg, msg, limit);
  return 0;
}

/* ---- curl's callbacks: collect only, no Lua ----------------------------- */

static int ascii_prefix_ci(const char *s, size_t n, const char *prefix) {
  size_t i, k = strlen(prefix);
  if (n < k) return 0;
  for (i = 0; i < k; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != prefix[i]) return 0;
  }
  return 1;
}

/* True when the response's content type is text/event-stream. */
static int is_event_stream(const http_req *r) {
  const char *s = r->head.p, *end = s + r->head.len;
  while (s < end) {
    const char *nl = (const char *)memchr(s, '\n', (size_t)(end - s));
    size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
    if (ascii_prefix_ci(s, n, "content-type:")) {
      const char *v = s + 13;
      size_t vn = n - 13;
      while (vn > 0 && (*v == ' ' || *v == '\t')) v++, vn--;
      return ascii_prefix_ci(v, vn, "text/event-stream") &&
             (vn == 17 || v[17] == ';' || v[17] == ' ' || v[17] == '\t');
    }
    s += n + 1;
  }
  return 0;
}

/* The headers are in: the body is SSE, streamed, or collected. */
static void headers_done(http_req *r, long status) {
  r->status = status;
  r->head_done = 1;
  r->head_pending = 1;
  if (r->want_sse && status >= 200 && status < 300 && is_event_stream(r)) r->mode = BODY_SSE;
  else if (r->want_stream) r->mode = BODY_STREAM;
  else r->mode = BODY_COLLECT;
  if (r->max_body < 0) r->max_body = r->mode == BODY_COLLECT ? (long long)CLAUDE_DEFAULT_MAX_LINE : 0;
  mark_dirty(r);
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
  http_req *r = (http_req *)ud;
  size_t len = size * nmemb, n = len;
  while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r')) n--;
  if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) { /* a status line starts a response */
    r->head.len = 0;
    r->head_done = 0;
    return len;
  }
  if (r->head_done) return len; /* trailers */
  if (n == 0) {                 /* the blank line ending the headers */
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 100 && code < 200) r->head.len = 0; /* an interim response */
    else headers_done(r, code);
    return len;
  }
  if ((*p == ' ' || *p == '\t') && r->head.len > 0) {
    /* obsolete line folding: the line continues the previous value */
    while (n > 0 && (*p == ' ' || *p == '\t')) p++, n--;
    r->head.p[r->head.len - 1] = ' ';
  }
  if (claude_buf_reserve(&r->head, n + 1) != 0) return fail(r, "connection", "out of memory", 0);
  memcpy(r->head.p + r->head.len, p, n);
  r->head.len += n;
  r->head.p[r->head.len++] = '\n';
  return len;
}

/* Serialized event: three (length, bytes) pairs and the retry time. */
static int put_field(claude_buf *b, const char *s, size_t n) {
  if (claude_buf_reserve(b, sizeof n + n) != 0) return -1;
  memcpy(b->p + b->len, &n, sizeof n);
  if (n > 0) memcpy(b->p + b->len + sizeof n, s, n);
  b->len += sizeof n + n;
  return 0;
}

static const char *get_field(const char **s, size_t *n) {
  const char *v;
  memcpy(n, *s, sizeof *n);
  v = *s + sizeof *n;
  *s = v + *n;
  return v;
}

static int queue_event(void *ud, const claude_sse_event *ev) {
  http_req *r = (http_req *)ud;
  claude_buf *b = &r->events;
  if (ev->overflow) {
    fail(r, "overflow", "an SSE event exceeds the limit of %zu bytes", r->sse.max_event);
    return 1;
  }
  if (put_field(b, ev->type, ev->type_len) != 0 || put_field(b, ev->data, ev->data_len) != 0 ||
      put_field(b, ev->id, ev->id_len) != 0 ||
      claude_buf_append(b, &ev->retry, sizeof ev->retry) != 0) {
    fail(r, "connection", "out of memory", 0);
    return 1;
  }
  return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
  http_req *r = (http_req *)ud;
  size_t len = size * nmemb;
  if (!r->head_done) {
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    headers_done(r, code);
  }
  r->body_total += len;
  if (r->max_body > 0 && r->body_total > (size_t)r->max_body)
    return fail(r, "overflow", "the response body exceeds the limit of %zu bytes",
                (size_t)r->max_body);
  if (r->mode == BODY_SSE) {
    int rc = claude_sse_feed(&r->sse, p, len, queue_event, r);
    if (rc < 0) return fail(r, "connection", "out of memory", 0);
    if (rc > 0) return 0;
    if (r->events.len == r->events_pos) return len; /* comments only: nothing for Lua */
  } else if (claude_buf_append(&r->body, p, len) != 0) {
    return fail(r, "connection", "out of memory", 0);
  }
  if (r->mode != BODY_COLLECT) mark_dirty(r);
  return len;
}

/* ---- delivery to Lua ---------------------------------------------------- */

/* Pushes the headers as { lowercased name = value }; a repeated name's
 * values are joined with ", ". */
static void push_headers(lua_State *L, const http_req *r) {
  const char *s = r->head.p, *end = s + r->head.len;
  lua_newtable(L);
  while (s < end) {
    const char *nl = (const char *)memchr(s, '\n', (size_t)(end - s));
    const char *colon = (const char *)memchr(s, ':', (size_t)(nl - s));
    if (colon != NULL && colon > s) {
      const char *v = colon + 1, *ve = nl;
      const char *k;
      luaL_Buffer b;
      while (v < ve && (*v == ' ' || *v == '\t')) v++;
      while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
      luaL_buffinit(L, &b);
      for (k = s; k < colon; k++)
        luaL_addchar(&b, (*k >= 'A' && *k <= 'Z') ? (char)(*k - 'A' + 'a') : *k);
      luaL_pushresult(&b);
      lua_pushvalue(L, -1);
      if (lua_rawget(L, -3) == LUA_TSTRING) {
        lua_pushliteral(L, ", ");
        lua_pushlstring(L, v, (size_t)(ve - v));
        lua_concat(L, 3);
      } else {
        lua_pop(L, 1);
        lua_pushlstring(L, v, (size_t)(ve - v));
      }
      lua_rawset(L, -3);
    }
    s = nl + 1;
  }
}

/* Pushes { status, headers, body (collected), last_event_id, retry (SSE) }. */
static void push_response(lua_State *L, const http_req *r, int with_body) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, r->status);
  lua_setfield(L, -2, "status");
  push_headers(L, r);
  lua_setfield(L, -2, "headers");
  if (with_body && r->mode == BODY_COLLECT) {
    lua_pushlstring(L, r->body.p ? r->body.p : "", r->body.len);
    lua_setfield(L, -2, "body");
  }
  if (r->mode == BODY_SSE) {
    if (r->sse.id.len > 0) {
      lua_pushlstring(L, r->sse.id.p, r->sse.id.len);
      lua_setfield(L, -2, "last_event_id");
    }
    if (r->sse.retry >= 0) {
      lua_pushinteger(L, (lua_Integer)r->sse.retry);
      lua_setfield(L, -2, "retry");
    }
  }
}

static const char *kind_of(CURLcode rc) {
  switch (rc) {
  case CURLE_OPERATION_TIMEDOUT: return "timeout";
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL: return "url";
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_USE_SSL_FAILED: return "tls";
  default: return "connection";
  }
}

/* Pushes on_done's arguments: true, response; or false, message, kind
 * [, response so far when the headers had come]. Returns how many. */
static int push_outcome(lua_State *L, http_req *r) {
  if (r->result == CURLE_OK) {
    lua_pushboolean(L, 1);
    push_response(L, r, 1);
    return 2;
  }
  lua_pushboolean(L, 0);
  if (r->fail_kind != NULL) {
    lua_pushstring(L, r->fail_msg);
    lua_pushstring(L, r->fail_kind);
  } else {
    lua_pushstring(L, r->errbuf[0] ? r->errbuf : curl_easy_strerror(r->result));
    lua_pushstring(L, kind_of(r->result));
  }
  if (!r->head_done) return 3;
  push_response(L, r, 0);
  return 4;
}

static int stopped(const http_req *r) {
  return r->finished || r->m->closing;
}

/* Protected: hands Lua what the request has: headers, events or a body
 * chunk, then the end. Each item is taken before its callback runs, so after
 * an error the next call goes on with the next item. */
static int deliver_p(lua_State *L) {
  http_req *r = (http_req *)lua_touserdata(L, 1);
  if (r->head_pending) {
    r->head_pending = 0;
    if (r->headers_ref != LUA_NOREF) {
      static const char *const modes[] = {"collect", "stream", "sse"};
      lua_rawgeti(L, LUA_REGISTRYINDEX, r->headers_ref);
      lua_pushinteger(L, r->status);
      push_headers(L, r);
      lua_pushstring(L, modes[r->mode]);
      lua_call(L, 3, 0);
      if (stopped(r)) return 0;
    }
  }
  while (r->events_pos < r->events.len) {
    claude_sse_event ev;
    const char *s = r->events.p + r->events_pos;
    ev.type = get_field(&s, &ev.type_len);
    ev.data = get_field(&s, &ev.data_len);
    ev.id = get_field(&s, &ev.id_len);
    memcpy(&ev.retry, s, sizeof ev.retry);
    s += sizeof ev.retry;
    ev.overflow = 0;
    r->events_pos = (size_t)(s - r->events.p);
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->event_ref);
    claude_sse_push(L, &ev);
    lua_call(L, 1, 0);
    if (stopped(r)) return 0;
  }
  r->events.len = r->events_pos = 0;
  if (r->mode == BODY_STREAM && r->body.len > 0) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, r->data_ref);
    lua_pushlstring(L, r->body.p, r->body.len);
    r->body.len = 0;
    lua_call(L, 1, 0);
    if (stopped(r)) return 0;
  }
  if (r->done_pending) {
    int nargs = 0, ref = r->done_ref;
    r->done_pending = 0;
    r->done_ref = LUA_NOREF;
    if (ref != LUA_NOREF) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
      claude_unref(r->m->hdr.ctx, &ref);
      nargs = push_outcome(L, r);
    }
    req_stop(r); /* refs go, the easy handle goes back to the pool */
    if (nargs > 0) lua_call(L, nargs, 0);
  }
  return 0;
}

static void deliver(http_req *r) {
  http_multi *m = r->m;
  claude_ctx *ctx = m->hdr.ctx;
  r->delivering++;
  while (!ctx->closing && !m->closing) {
    lua_State *L = claude_cb_state(ctx);
    lua_pushcfunction(L, deliver_p);
    lua_pushlightuserdata(L, r);
    if (claude_pcall(ctx, L, 1) == LUA_OK || r->finished) break;
  }
  r->delivering--;
}

static void deliver_all(http_multi *m) {
  m->depth++;
  while (!m->closing && m->dirty != NULL) {
    http_req *r = m->dirty;
    m->dirty = r->dirty_next;
    if (m->dirty == NULL) m->dirty_tail = NULL;
    r->dirty_next = NULL;
    r->is_dirty = 0;
    deliver(r);
    req_free_if_done(r);
  }
  m->depth--;
  multi_free_if_done(m);
}

/* ---- the multi handle of a lua_State ------------------------------------ */

static void multi_teardown(claude_handle *h) {
  http_multi *m = (http_multi *)h;
  int i;
  if (m->box != NULL) *m->box = NULL;
  while (m->reqs != NULL) {
    http_req *r = m->reqs;
    req_stop(r);
    if (r->box != NULL) { /* the context goes first: the userdata becomes closed */
      *r->box = NULL;
      r->box = NULL;
    }
    req_free(r);
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

static http_multi *get_multi(lua_State *L, claude_ctx *ctx) {
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

/* ---- core.http_request -------------------------------------------------- */

static int is_tchar(unsigned char c) { /* RFC 9110 token characters */
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int is_token(const char *s, size_t n) {
  size_t i;
  if (n == 0) return 0;
  for (i = 0; i < n; i++)
    if (!is_tchar((unsigned char)s[i])) return 0;
  return 1;
}

static const char *opt_string(lua_State *L, const char *name, size_t *len, int required) {
  int t = lua_getfield(L, 1, name);
  if (t == LUA_TNIL && !required) {
    lua_pop(L, 1);
    return NULL;
  }
  if (t != LUA_TSTRING)
    luaL_error(L, "bad field '%s' to 'http_request' (string expected, got %s)", name,
               luaL_typename(L, -1));
  return lua_tolstring(L, -1, len); /* stays on the stack, so it stays alive */
}

static double opt_seconds(lua_State *L, const char *name) {
  double v = 0;
  int t = lua_getfield(L, 1, name);
  if (t != LUA_TNIL) {
    if (t != LUA_TNUMBER || (v = lua_tonumber(L, -1)) <= 0 || v != v)
      luaL_error(L, "bad field '%s' to 'http_request' (positive number of seconds expected, "
                 "got %s)", name, luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, 1);
  return v;
}

static long long opt_size(lua_State *L, const char *name, long long dflt) {
  long long v = dflt;
  int t = lua_getfield(L, 1, name);
  if (t != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || (v = (long long)lua_tointeger(L, -1)) < 0)
      luaL_error(L, "bad field '%s' to 'http_request' (non-negative integer expected, got %s)",
                 name, luaL_tolstring(L, -1, NULL));
  }
  lua_pop(L, 1);
  return v;
}

static int opt_function(lua_State *L, claude_ctx *ctx, const char *name) {
  int ref = LUA_NOREF, t = lua_getfield(L, 1, name);
  if (t == LUA_TFUNCTION) ref = claude_ref(ctx, L, -1);
  else if (t != LUA_TNIL)
    luaL_error(L, "bad field '%s' to 'http_request' (function expected, got %s)", name,
               luaL_typename(L, -1));
  lua_pop(L, 1);
  return ref;
}

/* Checks the headers table at `idx` (names are tokens, values strings or
 * numbers without CR, LF or NUL); raises for a bad one. */
static void check_headers(lua_State *L, int idx) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t kn = 0, vn;
    const char *k = "", *v;
    if (lua_type(L, -2) == LUA_TSTRING) k = lua_tolstring(L, -2, &kn);
    if (lua_type(L, -2) != LUA_TSTRING || !is_token(k, kn))
      luaL_error(L, "bad header name %s to 'http_request' (a token expected)",
                 luaL_tolstring(L, -2, NULL));
    if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "bad value for header '%s' to 'http_request' (string expected, got %s)", k,
                 luaL_typename(L, -1));
    lua_pushvalue(L, -1);
    v = lua_tolstring(L, -1, &vn); /* a copy: converting the key's value would upset lua_next */
    if (memchr(v, '\r', vn) || memchr(v, '\n', vn) || memchr(v, '\0', vn))
      luaL_error(L, "bad value for header '%s' to 'http_request' (CR, LF or NUL in it)", k);
    lua_pop(L, 2);
  }
}

static void append_header(lua_State *L, http_req *r, const char *line) {
  struct curl_slist *l = curl_slist_append(r->hdrs, line);
  if (l == NULL) luaL_error(L, "not enough memory");
  r->hdrs = l;
}

/* Appends the headers at `idx` to r->hdrs, and "Expect:" (no 100-continue
 * round trip) and "Content-Type:" (not curl's form-urlencoded default) unless
 * the caller set them. */
static void build_headers(lua_State *L, http_req *r, int idx) {
  int expect = 0, ctype = 0;
  struct curl_slist *l;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_tostring(L, -2);
    lua_pushvalue(L, -1);
    /* "Name;" is curl's way to send a header with an empty value */
    lua_pushfstring(L, *lua_tostring(L, -1) ? "%s: %s" : "%s;", k, lua_tostring(L, -1));
    if ((l = curl_slist_append(r->hdrs, lua_tostring(L, -1))) == NULL)
      luaL_error(L, "not enough memory");
    r->hdrs = l;
    if (ascii_prefix_ci(k, strlen(k), "expect") && k[6] == '\0') expect = 1;
    if (ascii_prefix_ci(k, strlen(k), "content-type") && k[12] == '\0') ctype = 1;
    lua_pop(L, 3);
  }
  if (!expect) append_header(L, r, "Expect:");
  if (!ctype) append_header(L, r, "Content-Type:");
}

/* Returns nil, message, "url" for a URL curl cannot use. */
static int check_url(lua_State *L, const char *url) {
  CURLU *u = curl_url();
  char *scheme = NULL;
  CURLUcode rc;
  if (u == NULL) return luaL_error(L, "not enough memory");
  rc = curl_url_set(u, CURLUPART_URL, url, 0);
  if (rc == CURLUE_OK) rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
  curl_url_cleanup(u);
  if (rc == CURLUE_OK && strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "unsupported URL scheme '%s' in '%s' (http or https expected)", scheme, url);
    curl_free(scheme);
    lua_pushliteral(L, "url");
    return 3;
  }
  curl_free(scheme);
  if (rc == CURLUE_OK) return 0;
  luaL_pushfail(L);
  lua_pushfstring(L, "invalid URL '%s': %s", url, curl_url_strerror(rc));
  lua_pushliteral(L, "url");
  return 3;
}

/* core.http_request{ url, method, headers, body, timeout, connect_timeout,
 * max_body, max_event, on_headers, on_data, on_event, on_done } -> request |
 * nil, message, "url". See lua/claude/http/client.lua for the contract. */
static int l_http_request(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  const char *url, *method, *body;
  size_t body_len = 0, method_len = 4;
  double timeout, connect_timeout;
  long long max_body, max_event;
  int headers_idx = 0, body_idx, nret;
  http_multi *m;
  http_req **box, *r;
  CURL *e;
  CURLMcode mrc;

  luaL_checktype(L, 1, LUA_TTABLE);
  if (ctx->closing) return luaL_error(L, "the claude context is closing");
  url = opt_string(L, "url", NULL, 1);
  method = opt_string(L, "method", &method_len, 0);
  if (method == NULL) method = "GET";
  else if (!is_token(method, method_len))
    return luaL_error(L, "bad field 'method' to 'http_request' (a token such as \"POST\" "
                         "expected, got '%s')", method);
  body = opt_string(L, "body", &body_len, 0);
  body_idx = body ? lua_gettop(L) : 0;
  timeout = opt_seconds(L, "timeout");
  connect_timeout = opt_seconds(L, "connect_timeout");
  max_body = opt_size(L, "max_body", -1);
  max_event = opt_size(L, "max_event", (long long)CLAUDE_DEFAULT_MAX_LINE);
  if (lua_getfield(L, 1, "headers") == LUA_TTABLE) {
    headers_idx = lua_gettop(L);
    check_headers(L, headers_idx);
  } else if (!lua_isnil(L, -1)) {
    return luaL_error(L, "bad field 'headers' to 'http_request' (table expected, got %s)",
                      luaL_typename(L, -1));
  }
  if ((nret = check_url(L, url)) != 0) return nret;

  m = get_multi(L, ctx);
  box = (http_req **)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  luaL_setmetatable(L, MT_REQUEST);
  r = (http_req *)calloc(1, sizeof(*r));
  if (r == NULL) return luaL_error(L, "not enough memory");
  r->m = m;
  r->self_ref = r->body_ref = r->headers_ref = r->data_ref = r->event_ref = r->done_ref =
      LUA_NOREF;
  r->max_body = max_body;
  claude_sse_init(&r->sse, (size_t)max_event);
  r->next = m->reqs;
  if (m->reqs) m->reqs->prev = r;
  m->reqs = r;
  r->box = box;
  *box = r; /* from here on the box's __gc frees r, also after an error below */

  r->label = (char *)malloc(strlen(method) + strlen(url) + 2);
  if (r->label == NULL) return luaL_error(L, "not enough memory");
  sprintf(r->label, "%s %s", method, url);
  r->headers_ref = opt_function(L, ctx, "on_headers");
  r->data_ref = opt_function(L, ctx, "on_data");
  r->event_ref = opt_function(L, ctx, "on_event");
  r->done_ref = opt_function(L, ctx, "on_done");
  r->want_stream = r->data_ref != LUA_NOREF;
  r->want_sse = r->event_ref != LUA_NOREF;
  if (headers_idx) {
    build_headers(L, r, headers_idx);
  } else {
    append_header(L, r, "Expect:");
    append_header(L, r, "Content-Type:");
  }

  e = m->npool > 0 ? m->pool[--m->npool] : curl_easy_init();
  if (e == NULL) return luaL_error(L, "not enough memory");
  r->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "claudelua/" CLAUDE_VERSION);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
  if (timeout > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000.0 + 0.5));
  if (connect_timeout > 0)
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout * 1000.0 + 0.5));
  if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (body != NULL || strcmp(method, "POST") == 0) {
    /* the Lua string is the body: no copy, kept alive by a ref */
    if (body != NULL) r->body_ref = claude_ref(ctx, L, body_idx);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body != NULL ? body : "");
    if (strcmp(method, "POST") != 0) curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  }

  r->self_ref = claude_ref(ctx, L, -1); /* alive while the transfer runs */
  m->active++;
  r->running = 1;
  mrc = curl_multi_add_handle(m->multi, e);
  if (mrc != CURLM_OK) {
    r->running = 0;
    m->active--;
    req_stop(r);
    luaL_pushfail(L);
    lua_pushstring(L, curl_multi_strerror(mrc));
    lua_pushliteral(L, "connection");
    return 3;
  }
  return 1;
}

/* ---- methods ------------------------------------------------------------ */

static http_req **check_box(lua_State *L) {
  return (http_req **)luaL_checkudata(L, 1, MT_REQUEST);
}

/* request:cancel() -> true when it was running; no callback runs after it */
static int req_cancel(lua_State *L) {
  http_req *r = *check_box(L);
  if (r == NULL || r->finished) {
    lua_pushboolean(L, 0);
    return 1;
  }
  r->cancelled = 1;
  req_stop(r);
  lua_pushboolean(L, 1);
  return 1;
}

/* request:running() -> true until on_done has been called or it was cancelled */
static int req_running(lua_State *L) {
  http_req *r = *check_box(L);
  lua_pushboolean(L, r != NULL && !r->finished);
  return 1;
}

static int req_gc(lua_State *L) {
  http_req **box = check_box(L);
  http_req *r = *box;
  if (r == NULL) return 0;
  *box = NULL;
  r->box = NULL;
  if (!r->finished) req_stop(r);
  req_free_if_done(r);
  return 0;
}

static int req_tostring(lua_State *L) {
  http_req *r = *check_box(L);
  if (r == NULL) lua_pushliteral(L, "claude.HttpRequest (closed)");
  else lua_pushfstring(L, "claude.HttpRequest (%s, %s)", r->label,
                       r->cancelled ? "cancelled" : r->finished ? "finished" : "running");
  return 1;
}

static const luaL_Reg req_methods[] = {
  {"cancel", req_cancel}, {"running", req_running}, {NULL, NULL}};
static const luaL_Reg req_metamethods[] = {
  {"__gc", req_gc}, {"__close", req_cancel}, {"__tostring", req_tostring},
  {"__index", NULL}, {NULL, NULL}};

/* Adds http_request to the module table on top of the stack. */
void claude_open_http(lua_State *L) {
  luaL_newmetatable(L, MT_REQUEST);
  luaL_setfuncs(L, req_metamethods, 0);
  luaL_newlib(L, req_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_http_request);
  lua_setfield(L, -2, "http_request");
}
