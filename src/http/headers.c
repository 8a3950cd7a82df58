/*
 * headers.c -- a response's headers: a table checked (tokens for names, no
 * CR, LF or NUL in values: no response splitting), then added to h2o's
 * answer; and core.http_headers(tbl): a response's headers checked and
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

/* A token (RFC 9110 field name). */
static int valid_name(const char *s, size_t len) {
  size_t i;
  if (len == 0) return 0;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i], l = (unsigned char)(c | 0x20);
    if ((l >= 'a' && l <= 'z') || (c >= '0' && c <= '9')) continue;
    switch (c) {
      case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-':
      case '.': case '^': case '_': case '`': case '|': case '~': continue;
      default: return 0;
    }
  }
  return 1;
}

/* No CR, LF or NUL: nothing that could end the header early. */
static int valid_value(const char *s, size_t len) {
  size_t i;
  for (i = 0; i < len; i++)
    if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0') return 0;
  return 1;
}

/* ASCII case-insensitive equality with a lower-case literal. */
static int lc_equal(const char *s, size_t len, const char *lit) {
  size_t i;
  if (strlen(lit) != len) return 0;
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (unsigned char)lit[i]) return 0;
  }
  return 1;
}

static int name_is(const char *s, size_t len, const char *lit) {
  return lc_equal(s, len, lit);
}

/* One header value (add = 0: only check it; add = 1: add it, checked before). */
static void header_value(lua_State *L, h2o_req_t *req, const char *name, size_t nlen, int vidx,
                         int add) {
  size_t vlen;
  const char *v;
  if (!add) {
    if (lua_type(L, vidx) != LUA_TSTRING && lua_type(L, vidx) != LUA_TNUMBER)
      luaL_error(L, "bad header '%s' (string expected, got %s)", name, luaL_typename(L, vidx));
    v = lua_tolstring(L, vidx, &vlen);
    if (!valid_value(v, vlen)) luaL_error(L, "bad header '%s' (CR, LF or NUL in its value)", name);
    return;
  }
  v = lua_tolstring(L, vidx, &vlen);
  if (name_is(name, nlen, "connection")) {
    if (lc_equal(v, vlen, "close")) req->http1_is_persistent = 0;
    return;
  }
  {
    h2o_iovec_t lname = h2o_strdup(&req->pool, name, nlen);
    h2o_iovec_t value = h2o_strdup(&req->pool, v, vlen);
    h2o_strtolower(lname.base, lname.len);
    h2o_add_header_by_str(&req->pool, &req->res.headers, lname.base, lname.len, 1, NULL,
                          value.base, value.len);
  }
}

/* The headers table at idx ({name = value | {value, ...}}): checked first
 * (add = 0), so that a bad one raises before anything is added. */
static void headers(lua_State *L, h2o_req_t *req, int idx, int add) {
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx) != 0) {
    size_t nlen;
    const char *name;
    if (!add) {
      if (lua_type(L, -2) != LUA_TSTRING) luaL_error(L, "bad header name (string expected)");
      name = lua_tolstring(L, -2, &nlen);
      if (!valid_name(name, nlen)) luaL_error(L, "bad header name '%s'", name);
      if (name_is(name, nlen, "content-length") || name_is(name, nlen, "transfer-encoding"))
        luaL_error(L, "bad header '%s' (the server sets it)", name);
    } else {
      name = lua_tolstring(L, -2, &nlen); /* a string: checked before */
    }
    if (lua_istable(L, -1)) {
      lua_Integer i, n = (lua_Integer)lua_rawlen(L, -1);
      for (i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        header_value(L, req, name, nlen, lua_gettop(L), add);
        lua_pop(L, 1);
      }
    } else {
      header_value(L, req, name, nlen, lua_gettop(L), add);
    }
    lua_pop(L, 1);
  }
}

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
    h->kind = lc_equal(v, vlen, "close") ? HDR_CLOSE : HDR_NONE;
}

/* core.http_headers(tbl) -> headers: tbl checked as res:respond checks it */
static int l_http_headers(lua_State *L) {
  fill_state s = {0, 0, NULL, NULL};
  luaL_checktype(L, 1, LUA_TTABLE);
  headers(L, NULL, 1, 0);
  each_value(L, 1, count, &s);
  s.hs = (http_headers *)lua_newuserdatauv(L, sizeof(http_headers) + s.n * sizeof(http_header) +
                                                  s.bytes, 0);
  s.hs->n = 0;
  s.at = (char *)&s.hs->h[s.n];
  each_value(L, 1, fill, &s);
  luaL_setmetatable(L, MT_HTTP_HEADERS);
  return 1;
}

void claude_http_headers_check(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA) headers(L, NULL, idx, 0);
  else luaL_checkudata(L, idx, MT_HTTP_HEADERS); /* checked when made */
}

void claude_http_headers_add(lua_State *L, int idx, h2o_req_t *req) {
  http_headers *hs;
  size_t i;
  if (lua_type(L, idx) != LUA_TUSERDATA) {
    headers(L, req, idx, 1);
    return;
  }
  hs = (http_headers *)lua_touserdata(L, idx);
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
