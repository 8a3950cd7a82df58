/*
 * headers.c -- core.http_headers(tbl): a response's headers checked and
 * lower-cased once, for a server that sends the same ones again and again
 * (the MCP transport: a session's JSON headers, on every answer).
 * res:respond and res:start take it where they take a headers table; each
 * header then costs a copy of its value into the request's pool, with
 * h2o's token for its name looked up once, not the checks, the copy and
 * lower-casing of the name and the token look-up of a table's header on
 * every response.
 */
#include <stdlib.h>
#include <string.h>

#include "http/server.h"

enum { HDR_ADD, HDR_CLOSE, HDR_NONE }; /* connection: close / another connection value */

typedef struct {
  const char *name, *value;
  size_t nlen, vlen;
  const h2o_token_t *token; /* h2o's token of name, or NULL */
  int looked;               /* token looked up (libh2o is loaded by then) */
  int kind;                 /* HDR_* */
} http_header;

typedef struct {
  size_t n;
  http_header h[];          /* then the names and values */
} http_headers;

/* Calls fn(name, nlen, value, vlen, data) for each header value of the
 * (checked) table at idx, in lua_next's order. */
static void each_value(lua_State *L, int idx,
                       void (*fn)(const char *, size_t, const char *, size_t, void *), void *data) {
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    size_t nlen, vlen;
    const char *name = lua_tolstring(L, -2, &nlen), *v;
    if (lua_istable(L, -1)) {
      lua_Integer i, n = (lua_Integer)lua_rawlen(L, -1);
      for (i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        v = lua_tolstring(L, -1, &vlen);
        fn(name, nlen, v, vlen, data);
        lua_pop(L, 1);
      }
    } else {
      v = lua_tolstring(L, -1, &vlen);
      fn(name, nlen, v, vlen, data);
    }
    lua_pop(L, 1);
  }
}

typedef struct {
  size_t n, bytes;
  http_headers *hs;
  char *at;
} fill_state;

static void count(const char *name, size_t nlen, const char *v, size_t vlen, void *data) {
  fill_state *s = (fill_state *)data;
  (void)name;
  (void)v;
  s->n++;
  s->bytes += nlen + vlen;
}

static void fill(const char *name, size_t nlen, const char *v, size_t vlen, void *data) {
  fill_state *s = (fill_state *)data;
  http_header *h = &s->hs->h[s->hs->n++];
  size_t i;
  char *lname = s->at;
  for (i = 0; i < nlen; i++) {
    char c = name[i];
    lname[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  memcpy(s->at + nlen, v, vlen);
  h->name = lname;
  h->nlen = nlen;
  h->value = s->at + nlen;
  h->vlen = vlen;
  s->at += nlen + vlen;
  h->token = NULL;
  h->looked = 0;
  h->kind = HDR_ADD;
  if (nlen == 10 && memcmp(lname, "connection", 10) == 0)
    h->kind = claude_http_lc_equal(v, vlen, "close") ? HDR_CLOSE : HDR_NONE;
}

/* core.http_headers(tbl) -> headers: tbl checked as res:respond checks it */
static int l_http_headers(lua_State *L) {
  fill_state s = {0, 0, NULL, NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  claude_http_check_headers(L, 1);
  each_value(L, 1, count, &s);
  s.hs = (http_headers *)lua_newuserdatauv(L, sizeof(http_headers) + s.n * sizeof(http_header) +
                                                  s.bytes, 0);
  s.hs->n = 0;
  s.at = (char *)&s.hs->h[s.n];
  each_value(L, 1, fill, &s);
  luaL_setmetatable(L, MT_HTTP_HEADERS);
  return 1;
}

int claude_http_headers_put(lua_State *L, int idx, h2o_req_t *req) {
  http_headers *hs = (http_headers *)luaL_testudata(L, idx, MT_HTTP_HEADERS);
  size_t i;
  if (hs == NULL) return 0;
  for (i = 0; i < hs->n; i++) {
    http_header *h = &hs->h[i];
    h2o_iovec_t value;
    if (h->kind != HDR_ADD) {
      if (h->kind == HDR_CLOSE) req->http1_is_persistent = 0;
      continue;
    }
    if (!h->looked) {
      h->token = h2o_lookup_token(h->name, h->nlen);
      h->looked = 1;
    }
    /* copies: h2o may write the head after this call, the userdata may be gone by then */
    value = h2o_strdup(&req->pool, h->value, h->vlen);
    if (h->token != NULL) {
      h2o_add_header(&req->pool, &req->res.headers, h->token, NULL, value.base, value.len);
    } else {
      h2o_iovec_t name = h2o_strdup(&req->pool, h->name, h->nlen);
      h2o_add_header_by_str(&req->pool, &req->res.headers, name.base, name.len, 0, NULL, value.base,
                            value.len);
    }
  }
  return 1;
}

static int headers_tostring(lua_State *L) {
  http_headers *hs = (http_headers *)luaL_checkudata(L, 1, MT_HTTP_HEADERS);
  lua_pushfstring(L, "claude.HttpHeaders (%d)", (int)hs->n);
  return 1;
}

void claude_http_open_headers(lua_State *L) {
  luaL_newmetatable(L, MT_HTTP_HEADERS);
  lua_pushcfunction(L, headers_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_http_headers);
  lua_setfield(L, -2, "http_headers");
}
