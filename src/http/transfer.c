/*
 * transfer.c -- one request's transfer: libcurl's callbacks collect the
 * headers and the body (parsing SSE in C) into the request, and the loop's
 * check phase hands Lua what they collected, after
 * curl_multi_socket_action has returned: curl forbids adding or removing
 * transfers from inside its callbacks, and Lua code does both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/client.h"

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
  curl_slist_free_all(r->resolve);
  r->resolve = NULL;
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
void claude_http_stop(http_req *r) {
  http_multi *m = r->m;
  if (r->running) {
    curl_multi_remove_handle(m->multi, r->easy);
    r->running = 0;
    m->active--;
  }
  r->finished = 1;
  r->head_pending = r->done_pending = 0;
  r->events_pos = 0;
  /* Lua has its copies: a large body is not kept until the box is collected */
  claude_buf_free(&r->head);
  claude_buf_free(&r->body);
  claude_buf_free(&r->events);
  claude_sse_free(&r->sse);
  undirty(r);
  release_refs(r);
  recycle_easy(r);
}

void claude_http_free(http_req *r) {
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

void claude_http_free_if_done(http_req *r) {
  if (r->box == NULL && !r->running && !r->is_dirty && r->delivering == 0) claude_http_free(r);
}

void claude_http_mark_dirty(http_req *r) {
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

int claude_http_prefix_ci(const char *s, size_t n, const char *prefix) {
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
    if (claude_http_prefix_ci(s, n, "content-type:")) {
      const char *v = s + 13;
      size_t vn = n - 13;
      while (vn > 0 && (*v == ' ' || *v == '\t')) v++, vn--;
      return claude_http_prefix_ci(v, vn, "text/event-stream") &&
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
  claude_http_mark_dirty(r);
}

size_t claude_http_on_header(char *p, size_t size, size_t nmemb, void *ud) {
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

/* The bytes of events (or of a streamed body) waiting for Lua past which
 * the transfer stops reading until they are delivered. */
#define QUEUE_MAX ((size_t)1024 * 1024)

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

size_t claude_http_on_body(char *p, size_t size, size_t nmemb, void *ud) {
  http_req *r = (http_req *)ud;
  size_t len = size * nmemb;
  if (!r->head_done) {
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    headers_done(r, code);
  }
  /* Lua has not taken what came before: stop reading (curl keeps this chunk)
   * until it has, so that a server faster than its client fills the socket,
   * not this process (curl reads all the socket holds in one go: 2M
   * notifications queued here took 520 MiB) */
  if (r->mode != BODY_COLLECT &&
      r->events.len - r->events_pos + (r->mode == BODY_STREAM ? r->body.len : 0) >= QUEUE_MAX) {
    r->paused = 1;
    claude_http_mark_dirty(r);
    return CURL_WRITEFUNC_PAUSE;
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
  if (r->mode != BODY_COLLECT) claude_http_mark_dirty(r);
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
    claude_http_stop(r); /* refs go, the easy handle goes back to the pool */
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
  if (r->paused && r->running && !r->finished && !ctx->closing && !m->closing) {
    r->paused = 0; /* curl hands the chunk it kept to on_body again, and reads on */
    curl_easy_pause(r->easy, CURLPAUSE_CONT);
  }
  /* the end was taken but raised before the request was stopped (memory) */
  if (!r->finished && !r->running && !r->done_pending && !ctx->closing && !m->closing)
    claude_http_stop(r);
  r->delivering--;
}

void claude_http_deliver_all(http_multi *m) {
  while (!m->closing && m->dirty != NULL) {
    http_req *r = m->dirty;
    m->dirty = r->dirty_next;
    if (m->dirty == NULL) m->dirty_tail = NULL;
    r->dirty_next = NULL;
    r->is_dirty = 0;
    deliver(r);
    claude_http_free_if_done(r);
  }
}
