/*
 * client.c -- core.http_request: HTTP(S) requests with libcurl on the
 * context's libuv loop (multi.c, transfer.c); easy handles of
 * finished requests are kept for the next ones.
 *
 * A request lives in a userdata box. While its transfer runs, a registry
 * ref keeps the box alive; the C side is freed when the box is collected
 * and nothing (curl, a delivery under way) still uses it, in either order.
 * The contract for Lua is documented in lua/claude/http/client.lua.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/client.h"

#define MT_REQUEST "claude.HttpRequest"

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
    if (claude_http_prefix_ci(k, strlen(k), "expect") && k[6] == '\0') expect = 1;
    if (claude_http_prefix_ci(k, strlen(k), "content-type") && k[12] == '\0') ctype = 1;
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

/* Ends r where it stands (claude_http_stop); with that, the multi handle may
 * have nothing left to do. */
static void stop(http_req *r) {
  http_multi *m = r->m;
  claude_http_stop(r);
  if (!m->closing) claude_http_maybe_idle(m);
}

/* core.http_request{ url, method, headers, body, timeout, connect_timeout,
 * max_body, max_event, resolve, on_headers, on_data, on_event, on_done } -> request |
 * nil, message, "url" | nil, message, "ENOSYS" (libcurl missing: it is
 * loaded here, on the first request, not with the module). See lua/claude/http/client.lua for the contract. */
static int l_http_request(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  const char *url, *method, *body, *resolve;
  size_t body_len = 0, method_len = 4;
  double timeout, connect_timeout;
  long long max_body, max_event;
  int headers_idx = 0, body_idx, nret;
  http_multi *m;
  http_req **box, *r;
  CURL *e;
  CURLMcode mrc;
  char why[256];

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
  resolve = opt_string(L, "resolve", NULL, 0);
  if (lua_getfield(L, 1, "headers") == LUA_TTABLE) {
    headers_idx = lua_gettop(L);
    check_headers(L, headers_idx);
  } else if (!lua_isnil(L, -1)) {
    return luaL_error(L, "bad field 'headers' to 'http_request' (table expected, got %s)",
                      luaL_typename(L, -1));
  }
  if (claude_curl_load(why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libcurl could not be loaded: %s", why);
    lua_pushliteral(L, "ENOSYS");
    return 3;
  }
  if ((nret = check_url(L, url)) != 0) return nret;

  m = claude_http_multi(L, ctx);
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

  /* "host:port:address", as claude.guard.url pins it: no second look-up to rebind */
  if (resolve != NULL && (r->resolve = curl_slist_append(NULL, resolve)) == NULL)
    return luaL_error(L, "not enough memory");

  e = m->npool > 0 ? m->pool[--m->npool] : curl_easy_init();
  if (e == NULL) return luaL_error(L, "not enough memory");
  r->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, claude_http_on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, claude_http_on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "claudelua/" CLAUDE_VERSION);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
  if (r->resolve != NULL) curl_easy_setopt(e, CURLOPT_RESOLVE, r->resolve);
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
  ctx->writes++;
  mrc = curl_multi_add_handle(m->multi, e);
  if (mrc != CURLM_OK) {
    r->running = 0;
    m->active--;
    stop(r);
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
  stop(r);
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
  if (!r->finished) stop(r);
  claude_http_free_if_done(r);
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
void claude_open_http_client(lua_State *L) {
  luaL_newmetatable(L, MT_REQUEST);
  luaL_setfuncs(L, req_metamethods, 0);
  luaL_newlib(L, req_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_http_request);
  lua_setfield(L, -2, "http_request");
}
