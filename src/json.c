/*
 * json.c -- Lua values to JSON text, and the claude.json entry points.
 *
 * Integers are written exactly, floats with the shortest text that reads back
 * to the same double, tables marked with the array or object metatable encode
 * as `[]` / `{}` even when empty, and json.null (the NULL light userdata, the
 * same value as cjson.null) is null. Decoding is json_decode.c.
 * See docs/json.md.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MAX_DEPTH 1000

/* The marker metatables, also kept under these keys: no string lookup. */
static const char ARRAY_MT_KEY = 'a', OBJECT_MT_KEY = 'o';

/* ---- encoding ------------------------------------------------------------ */

typedef struct enc {
  lua_State *L;
  char *buf;
  size_t len, cap;
  int array_mt, object_mt; /* stack indexes of the marker metatables (0: not fetched) */
  char err[256];
  char path[256];
} enc;

static int reserve(enc *e, size_t n) {
  if (e->len + n > e->cap) {
    size_t cap = e->cap ? e->cap : 256;
    char *b;
    while (cap < e->len + n) cap *= 2;
    b = (char *)realloc(e->buf, cap);
    if (b == NULL) {
      snprintf(e->err, sizeof e->err, "out of memory");
      return 0;
    }
    e->buf = b;
    e->cap = cap;
  }
  return 1;
}

static int put(enc *e, const char *s, size_t n) {
  if (!reserve(e, n)) return 0;
  memcpy(e->buf + e->len, s, n);
  e->len += n;
  return 1;
}

/* Prepends a path segment while an error unwinds. */
static void path_prepend(enc *e, const char *seg) {
  size_t n = strlen(seg), have = strlen(e->path);
  if (n + have + 1 > sizeof e->path) return;
  memmove(e->path + n, e->path, have + 1);
  memcpy(e->path, seg, n);
}

static const char need_escape[256] = {
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};

static int put_string(enc *e, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i, run = 0;
  if (!reserve(e, n + 2)) return 0;
  e->buf[e->len++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!need_escape[c]) continue;
    if (!put(e, s + run, i - run)) return 0;
    run = i + 1;
    switch (c) {
      case '"': if (!put(e, "\\\"", 2)) return 0; break;
      case '\\': if (!put(e, "\\\\", 2)) return 0; break;
      case '\n': if (!put(e, "\\n", 2)) return 0; break;
      case '\r': if (!put(e, "\\r", 2)) return 0; break;
      case '\t': if (!put(e, "\\t", 2)) return 0; break;
      case '\b': if (!put(e, "\\b", 2)) return 0; break;
      case '\f': if (!put(e, "\\f", 2)) return 0; break;
      default: {
        char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (!put(e, u, 6)) return 0;
      }
    }
  }
  if (!put(e, s + run, n - run)) return 0;
  return put(e, "\"", 1);
}

/* Writes an integer's digits backwards from `end`; returns where they start. */
static char *format_integer(lua_Integer i, char *end) {
  lua_Unsigned u = i < 0 ? (lua_Unsigned)0 - (lua_Unsigned)i : (lua_Unsigned)i;
  char *p = end;
  do {
    *--p = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0);
  if (i < 0) *--p = '-';
  return p;
}

static int put_number(enc *e, int idx) {
  char tmp[32];
  int n;
  if (lua_isinteger(e->L, idx)) {
    char *start = format_integer(lua_tointeger(e->L, idx), tmp + sizeof tmp);
    return put(e, start, (size_t)(tmp + sizeof tmp - start));
  } else {
    double d = lua_tonumber(e->L, idx);
    int prec;
    if (!isfinite(d)) {
      snprintf(e->err, sizeof e->err, "cannot encode %s", isnan(d) ? "NaN" : "infinity");
      return 0;
    }
    /* shortest of %.15g..%.17g that reads back exactly */
    for (prec = 15; prec <= 17; prec++) {
      n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
      if (strtod(tmp, NULL) == d) break;
    }
  }
  return put(e, tmp, (size_t)n);
}

static int encode_value(enc *e, int idx, int depth);

static int encode_array(enc *e, int idx, lua_Integer n, int depth) {
  lua_State *L = e->L;
  lua_Integer i;
  if (!put(e, "[", 1)) return 0;
  for (i = 1; i <= n; i++) {
    if (i > 1 && !put(e, ",", 1)) return 0;
    lua_rawgeti(L, idx, i);
    if (!encode_value(e, lua_gettop(L), depth + 1)) {
      char seg[32];
      snprintf(seg, sizeof seg, "[%lld]", (long long)i);
      path_prepend(e, seg);
      lua_pop(L, 1);
      return 0;
    }
    lua_pop(L, 1);
  }
  return put(e, "]", 1);
}

static int encode_object(enc *e, int idx, int depth) {
  lua_State *L = e->L;
  int first = 1;
  if (!put(e, "{", 1)) return 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    size_t klen;
    const char *k;
    if (lua_type(L, -2) != LUA_TSTRING) {
      snprintf(e->err, sizeof e->err,
               "cannot encode a table with a %s key (object keys are strings, list keys 1..n)",
               luaL_typename(L, -2));
      lua_pop(L, 2);
      return 0;
    }
    k = lua_tolstring(L, -2, &klen);
    if (!first && !put(e, ",", 1)) goto fail;
    first = 0;
    if (!put_string(e, k, klen) || !put(e, ":", 1)) goto fail;
    if (!encode_value(e, lua_gettop(L), depth + 1)) {
      char seg[72];
      snprintf(seg, sizeof seg, ".%.64s", k);
      path_prepend(e, seg);
      goto fail;
    }
    lua_pop(L, 1);
  }
  return put(e, "}", 1);
fail:
  lua_pop(L, 2);
  return 0;
}

/* A plain table is an array when its keys are exactly 1..n, an object when
 * they are all strings; a marked table follows its marker. */
static int encode_table(enc *e, int idx, int depth) {
  lua_State *L = e->L;
  lua_Integer n;
  if (depth > MAX_DEPTH) {
    snprintf(e->err, sizeof e->err, "nesting deeper than %d (a cycle?)", MAX_DEPTH);
    return 0;
  }
  luaL_checkstack(L, 6, "json nesting");
  if (e->array_mt == 0) { /* the first table: always the outermost, before any push */
    lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
    e->array_mt = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &OBJECT_MT_KEY);
    e->object_mt = lua_gettop(L);
  }
  if (lua_getmetatable(L, idx)) {
    int is_array = lua_rawequal(L, -1, e->array_mt);
    int is_object = !is_array && lua_rawequal(L, -1, e->object_mt);
    lua_pop(L, 1);
    if (is_array) return encode_array(e, idx, (lua_Integer)lua_rawlen(L, idx), depth);
    if (is_object) return encode_object(e, idx, depth);
  }
  n = (lua_Integer)lua_rawlen(L, idx);
  if (n > 0) {
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      count++;
    }
    if (count == n) return encode_array(e, idx, n, depth);
    snprintf(e->err, sizeof e->err,
             "cannot encode a table with both list items and other keys (or holes)");
    return 0;
  }
  return encode_object(e, idx, depth);
}

static int encode_value(enc *e, int idx, int depth) {
  lua_State *L = e->L;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      return put_string(e, s, n);
    }
    case LUA_TNUMBER: return put_number(e, idx);
    case LUA_TBOOLEAN:
      return lua_toboolean(L, idx) ? put(e, "true", 4) : put(e, "false", 5);
    case LUA_TTABLE: return encode_table(e, idx, depth);
    case LUA_TNIL: return put(e, "null", 4);
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) return put(e, "null", 4);
      /* fall through */
    default:
      snprintf(e->err, sizeof e->err, "cannot encode a %s", luaL_typename(L, idx));
      return 0;
  }
}

/* Appends the JSON text of the value at idx to the malloc'ed buffer *buf
 * (*len bytes used of *cap), growing it as needed. Returns 1, or 0 with an
 * error message pushed and *len as it was. The encoder reads tables raw and
 * runs no Lua code, so nothing else can touch the buffer meanwhile. */
int claude_json_encode_append(lua_State *L, int idx, char **buf, size_t *len, size_t *cap) {
  enc e;
  int ok, top = lua_gettop(L);
  idx = lua_absindex(L, idx);
  e.L = L;
  e.buf = *buf;
  e.len = *len;
  e.cap = *cap;
  e.array_mt = e.object_mt = 0;
  e.err[0] = e.path[0] = '\0';
  ok = encode_value(&e, idx, 0);
  lua_settop(L, top); /* the metatables, if a table was met */
  *buf = e.buf;
  *cap = e.cap;
  if (!ok) {
    if (e.path[0] != '\0') lua_pushfstring(L, "json: %s at $%s", e.err, e.path);
    else lua_pushfstring(L, "json: %s", e.err);
    return 0;
  }
  *len = e.len;
  return 1;
}

/* Encodes the value at idx into a malloc'ed buffer (the caller frees it).
 * Returns 1, or 0 with an error message pushed. */
int claude_json_encode_buffer(lua_State *L, int idx, char **out, size_t *len) {
  char *buf = NULL;
  size_t used = 0, cap = 0;
  if (!claude_json_encode_append(L, idx, &buf, &used, &cap)) {
    free(buf);
    return 0;
  }
  *out = buf;
  *len = used;
  return 1;
}

/* json_encode(value) -> text; raises on values JSON cannot hold */
static int l_encode(lua_State *L) {
  char *buf;
  size_t len;
  luaL_checkany(L, 1);
  if (!claude_json_encode_buffer(L, 1, &buf, &len)) return lua_error(L);
  lua_pushlstring(L, buf, len);
  free(buf);
  return 1;
}

/* json_decode(text) -> value | nil, message */
static int l_decode(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  return claude_json_decode_push(L, s, len) ? 1 : 2;
}

/* Puts json_encode, json_decode, json_array_mt, json_object_mt and json_null
 * into the module table on top of the stack. */
void claude_open_json(lua_State *L) {
  lua_pushlightuserdata(L, NULL);
  lua_setfield(L, -2, "json_null");
  luaL_newmetatable(L, CLAUDE_JSON_ARRAY_MT);
  lua_pushliteral(L, "array");
  lua_setfield(L, -2, "__jsontype");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
  lua_setfield(L, -2, "json_array_mt");
  luaL_newmetatable(L, CLAUDE_JSON_OBJECT_MT);
  lua_pushliteral(L, "object");
  lua_setfield(L, -2, "__jsontype");
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &OBJECT_MT_KEY);
  lua_setfield(L, -2, "json_object_mt");
  lua_pushcfunction(L, l_encode);
  lua_setfield(L, -2, "json_encode");
  lua_pushcfunction(L, l_decode);
  lua_setfield(L, -2, "json_decode");
}
