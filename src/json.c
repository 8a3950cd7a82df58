/*
 * json.c -- exact JSON over Debian's lua-cjson 2.1.0.
 *
 * Decoding is cjson's (a private instance made with cjson.new(), so the
 * application's cjson settings are untouched), followed by one C pass that
 * turns integral numbers into Lua integers and marks decoded empty arrays.
 * cjson cannot tell `[]` from `{}`, so before decoding, an empty array in the
 * text is rewritten to hold one sentinel string, which the pass removes.
 *
 * Encoding is ours, in C: integers are written exactly, floats with the
 * shortest text that reads back to the same double, tables marked with the
 * array or object metatable encode as `[]` / `{}` even when empty, and
 * json.null (cjson.null) is null. See docs/json.md.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MT_ARRAY "claude.json.array"
#define MT_OBJECT "claude.json.object"
#define MAX_DEPTH 1000

static const char DECODE_KEY = 'd';
static const char SENTINEL[] = "\0claude:[]\0";
#define SENTINEL_LEN (sizeof(SENTINEL) - 1)
static const char SENTINEL_JSON[] = "\"\\u0000claude:[]\\u0000\"";
#define SENTINEL_JSON_LEN (sizeof(SENTINEL_JSON) - 1)

/* ---- decoding ------------------------------------------------------------ */

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Cheap test: is there a ']' whose previous non-blank byte is '['? */
static int maybe_empty_array(const char *s, size_t len) {
  const char *p = s, *end = s + len;
  while ((p = (const char *)memchr(p, ']', (size_t)(end - p))) != NULL) {
    const char *q = p - 1;
    while (q >= s && is_ws(*q)) q--;
    if (q >= s && *q == '[') return 1;
    p++;
  }
  return 0;
}

/* Copies the text with every empty array outside strings given the sentinel
 * as its only element. Returns a malloc'ed buffer, or NULL when none. */
static char *mark_empty_arrays(const char *s, size_t len, size_t *out_len) {
  size_t i, o = 0, cap = len + 64;
  int in_str = 0, found = 0;
  char *out = (char *)malloc(cap);
  if (out == NULL) return NULL;
  for (i = 0; i < len; i++) {
    char c = s[i];
    if (o + SENTINEL_JSON_LEN + 2 > cap) {
      char *n;
      cap = cap * 2 + SENTINEL_JSON_LEN;
      n = (char *)realloc(out, cap);
      if (n == NULL) {
        free(out);
        return NULL;
      }
      out = n;
    }
    out[o++] = c;
    if (in_str) {
      if (c == '\\' && i + 1 < len) out[o++] = s[++i];
      else if (c == '"') in_str = 0;
    } else if (c == '"') {
      in_str = 1;
    } else if (c == '[') {
      size_t j = i + 1;
      while (j < len && is_ws(s[j])) j++;
      if (j < len && s[j] == ']') {
        memcpy(out + o, SENTINEL_JSON, SENTINEL_JSON_LEN);
        o += SENTINEL_JSON_LEN;
        found = 1;
        i = j - 1; /* the ']' is copied next */
      }
    }
  }
  if (!found) {
    free(out);
    return NULL;
  }
  *out_len = o;
  return out;
}

/* Long string values are unescaped here, not by cjson: cjson copies a
 * string into its buffer one byte at a time, which made it most of the cost
 * of a 64 KiB message. In a long line, each string value of LONG_STRING bytes
 * or more is replaced in the text by a short placeholder (a "hole") before
 * cjson sees it, and put back by the fix-up pass. Anything unusual (a key, a
 * bad escape, a raw control character) is left to cjson and its errors. */
#define LONG_STRING ((size_t)1024)
#define LONG_LINE ((size_t)8192)
static const char HOLE[] = "\0claude:s:";
#define HOLE_LEN (sizeof(HOLE) - 1)
static const char HOLE_JSON[] = "\\u0000claude:s:";
#define HOLE_JSON_LEN (sizeof(HOLE_JSON) - 1)

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static long hex4(const char *p, const char *end) {
  long v = 0;
  int i;
  if (end - p < 4) return -1;
  for (i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/* Adds the unescaped text of p..end to b; 0 for an escape cjson would refuse. */
static int unescape(luaL_Buffer *b, const char *p, const char *end) {
  while (p < end) {
    const char *q = (const char *)memchr(p, '\\', (size_t)(end - p));
    long cp;
    char u[4];
    if (q == NULL) {
      luaL_addlstring(b, p, (size_t)(end - p));
      return 1;
    }
    luaL_addlstring(b, p, (size_t)(q - p));
    if (++q >= end) return 0;
    switch (*q) {
      case '"': case '\\': case '/': luaL_addchar(b, *q); p = q + 1; continue;
      case 'b': luaL_addchar(b, '\b'); p = q + 1; continue;
      case 'f': luaL_addchar(b, '\f'); p = q + 1; continue;
      case 'n': luaL_addchar(b, '\n'); p = q + 1; continue;
      case 'r': luaL_addchar(b, '\r'); p = q + 1; continue;
      case 't': luaL_addchar(b, '\t'); p = q + 1; continue;
      case 'u': break;
      default: return 0;
    }
    if ((cp = hex4(q + 1, end)) < 0) return 0;
    p = q + 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return 0; /* a lone low surrogate */
    if (cp >= 0xD800 && cp <= 0xDBFF) {         /* needs its low half */
      long lo;
      if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || (lo = hex4(p + 2, end)) < 0xDC00 ||
          lo > 0xDFFF)
        return 0;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      p += 6;
    }
    if (cp < 0x80) {
      luaL_addchar(b, (char)cp);
    } else if (cp < 0x800) {
      u[0] = (char)(0xC0 | (cp >> 6));
      u[1] = (char)(0x80 | (cp & 0x3F));
      luaL_addlstring(b, u, 2);
    } else if (cp < 0x10000) {
      u[0] = (char)(0xE0 | (cp >> 12));
      u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
      u[2] = (char)(0x80 | (cp & 0x3F));
      luaL_addlstring(b, u, 3);
    } else {
      u[0] = (char)(0xF0 | (cp >> 18));
      u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
      u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
      u[3] = (char)(0x80 | (cp & 0x3F));
      luaL_addlstring(b, u, 4);
    }
  }
  return 1;
}

/* Pushes the decoded string p..end (no quotes); 0 (nothing pushed) when it
 * holds something cjson should judge. */
static int push_unescaped(lua_State *L, const char *p, const char *end, int escapes) {
  luaL_Buffer b;
  if (!escapes) {
    lua_pushlstring(L, p, (size_t)(end - p));
    return 1;
  }
  luaL_buffinitsize(L, &b, (size_t)(end - p));
  if (!unescape(&b, p, end)) {
    luaL_pushresult(&b);
    lua_pop(L, 1);
    return 0;
  }
  luaL_pushresult(&b);
  return 1;
}

typedef struct textbuf {
  char *data;
  size_t len, cap;
} textbuf;

static int tb_put(textbuf *t, const char *s, size_t n) {
  if (t->len + n > t->cap) {
    size_t cap = t->cap ? t->cap : 1024;
    char *d;
    while (cap < t->len + n) cap *= 2;
    d = (char *)realloc(t->data, cap);
    if (d == NULL) return 0;
    t->data = d;
    t->cap = cap;
  }
  memcpy(t->data + t->len, s, n);
  t->len += n;
  return 1;
}

/* Finds the closing quote of a string whose text starts at q, eight bytes at
 * a time while none of them is a quote, a backslash or a control character
 * (the usual SWAR tests for a byte equal to, or less than, a constant).
 * Returns `end` when the string is not closed. */
static const char *string_end(const char *q, const char *end, int *escapes, int *ok) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  while (q < end) {
    unsigned char c;
    while (end - q >= 8) {
      uint64_t w, quote, bs;
      memcpy(&w, q, 8);
      quote = w ^ (ones * '"');
      bs = w ^ (ones * '\\');
      if ((((quote - ones) & ~quote) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w)) & highs)
        break;
      q += 8;
    }
    if (q >= end) break;
    c = (unsigned char)*q;
    if (c == '"') return q;
    if (c == '\\') {
      *escapes = 1;
      q += 2;
    } else {
      if (c < 0x20) *ok = 0;
      q++;
    }
  }
  return end;
}

/* Takes the long string values out of a long text: they go, decoded, into
 * the table at `list`; the text with holes in their place is returned
 * (malloc'ed), or NULL when nothing was taken. */
static char *take_long_strings(lua_State *L, int list, const char *s, size_t len,
                               size_t *out_len) {
  textbuf out = {NULL, 0, 0};
  const char *p = s, *end = s + len, *copied = s;
  int n = 0;
  while (p < end) {
    const char *q = (const char *)memchr(p, '"', (size_t)(end - p)), *start, *k;
    int escapes = 0, ok = 1;
    if (q == NULL) break;
    start = ++q;
    q = string_end(q, end, &escapes, &ok);
    if (q >= end) break; /* unterminated: cjson will say so */
    for (k = q + 1; k < end && is_ws(*k); k++) {
    }
    if (ok && (size_t)(q - start) >= LONG_STRING && (k >= end || *k != ':') &&
        push_unescaped(L, start, q, escapes)) {
      char num[24];
      int nl;
      lua_rawseti(L, list, ++n);
      nl = snprintf(num, sizeof num, "%d", n);
      if (!tb_put(&out, copied, (size_t)(start - copied)) ||
          !tb_put(&out, HOLE_JSON, HOLE_JSON_LEN) || !tb_put(&out, num, (size_t)nl)) {
        free(out.data);
        return NULL;
      }
      copied = q; /* the closing quote is copied with what follows */
    }
    p = q + 1;
  }
  if (n == 0 || !tb_put(&out, copied, (size_t)(end - copied))) {
    free(out.data);
    return NULL;
  }
  *out_len = out.len;
  return out.data;
}

/* The index a hole string stands for, or 0 when the string is no hole. */
static lua_Integer hole_index(lua_State *L, int idx) {
  size_t n;
  const char *s = lua_tolstring(L, idx, &n);
  if (n <= HOLE_LEN || memcmp(s, HOLE, HOLE_LEN) != 0) return 0;
  return (lua_Integer)strtol(s + HOLE_LEN, NULL, 10);
}

/* Integral floats become integers; sentinel arrays become marked empty
 * arrays. The value is at index idx. */
static void fixup(lua_State *L, int idx, int depth, int holes) {
  if (depth > MAX_DEPTH) return;
  if (lua_rawlen(L, idx) == 1 && lua_rawgeti(L, idx, 1) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    if (n == SENTINEL_LEN && memcmp(s, SENTINEL, n) == 0) {
      lua_pop(L, 1);
      lua_pushnil(L);
      lua_rawseti(L, idx, 1);
      luaL_setmetatable(L, MT_ARRAY);
      return;
    }
    lua_pop(L, 1);
  } else if (lua_rawlen(L, idx) == 1) {
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int t = lua_type(L, -1);
    if (t == LUA_TNUMBER) {
      if (!lua_isinteger(L, -1)) {
        double d = lua_tonumber(L, -1);
        if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
          lua_pushvalue(L, -2);
          lua_pushinteger(L, (lua_Integer)d);
          lua_rawset(L, idx);
        }
      }
    } else if (t == LUA_TTABLE) {
      fixup(L, lua_gettop(L), depth + 1, holes);
    } else if (holes && t == LUA_TSTRING) {
      lua_Integer i = hole_index(L, -1);
      if (i > 0) {
        lua_pushvalue(L, -2);
        lua_rawgeti(L, holes, i);
        lua_rawset(L, idx);
      }
    }
    lua_pop(L, 1);
  }
}

/* Decodes JSON text; pushes the value and returns 1, or pushes nil and a
 * message and returns 0. Never raises (but for memory errors). */
int claude_json_decode_push(lua_State *L, const char *s, size_t len) {
  size_t tlen = 0, mlen = 0;
  char *taken = NULL, *marked;
  int status, holes = 0;
  if (len >= LONG_LINE) {
    lua_createtable(L, 4, 0);
    holes = lua_gettop(L);
    taken = take_long_strings(L, holes, s, len, &tlen);
    if (taken != NULL) {
      s = taken;
      len = tlen;
    } else {
      lua_pop(L, 1);
      holes = 0;
    }
  }
  marked = maybe_empty_array(s, len) ? mark_empty_arrays(s, len, &mlen) : NULL;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &DECODE_KEY);
  if (marked != NULL) {
    lua_pushlstring(L, marked, mlen);
    free(marked);
  } else {
    lua_pushlstring(L, s, len);
  }
  free(taken);
  status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    luaL_pushfail(L);
    lua_pushfstring(L, "invalid JSON: %s", msg ? msg : "?");
    lua_remove(L, -3);
    if (holes) lua_remove(L, holes);
    return 0;
  }
  if (lua_type(L, -1) == LUA_TTABLE) {
    luaL_checkstack(L, 8, "json nesting");
    fixup(L, lua_gettop(L), 0, holes);
  } else if (lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1)) {
    double d = lua_tonumber(L, -1);
    if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
      lua_pop(L, 1);
      lua_pushinteger(L, (lua_Integer)d);
    }
  } else if (holes && lua_type(L, -1) == LUA_TSTRING) {
    lua_Integer i = hole_index(L, -1);
    if (i > 0) {
      lua_pop(L, 1);
      lua_rawgeti(L, holes, i);
    }
  }
  if (holes) lua_remove(L, holes);
  return 1;
}

/* json_decode(text) -> value | nil, message */
static int l_decode(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  return claude_json_decode_push(L, s, len) ? 1 : 2;
}

/* ---- encoding ------------------------------------------------------------ */

typedef struct enc {
  lua_State *L;
  char *buf;
  size_t len, cap;
  int array_mt, object_mt; /* stack indexes of the marker metatables */
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

static int put_number(enc *e, int idx) {
  char tmp[32];
  int n;
  if (lua_isinteger(e->L, idx)) {
    n = snprintf(tmp, sizeof tmp, LUA_INTEGER_FMT, lua_tointeger(e->L, idx));
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

/* Encodes the value at idx into a malloc'ed buffer (the caller frees it).
 * Returns 1, or 0 with an error message pushed. */
int claude_json_encode_buffer(lua_State *L, int idx, char **out, size_t *len) {
  enc e;
  int ok;
  idx = lua_absindex(L, idx);
  memset(&e, 0, sizeof e);
  e.L = L;
  luaL_getmetatable(L, MT_ARRAY);
  e.array_mt = lua_gettop(L);
  luaL_getmetatable(L, MT_OBJECT);
  e.object_mt = lua_gettop(L);
  ok = encode_value(&e, idx, 0);
  lua_pop(L, 2);
  if (!ok) {
    free(e.buf);
    if (e.path[0] != '\0') lua_pushfstring(L, "json: %s at $%s", e.err, e.path);
    else lua_pushfstring(L, "json: %s", e.err);
    return 0;
  }
  *out = e.buf;
  *len = e.len;
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

/* Loads a private cjson instance and keeps its decode function. Pushes
 * json_encode, json_decode, json_array_mt, json_object_mt, json_null into
 * the module table on top of the stack. */
void claude_open_json(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cjson");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "null");
  lua_setfield(L, -3, "json_null");
  lua_getfield(L, -1, "new");
  lua_call(L, 0, 1); /* cjson, instance */
  lua_getfield(L, -1, "decode_invalid_numbers");
  lua_pushboolean(L, 0);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "decode_max_depth");
  lua_pushinteger(L, MAX_DEPTH);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "decode");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &DECODE_KEY);
  lua_pop(L, 2);
  luaL_newmetatable(L, MT_ARRAY);
  lua_pushliteral(L, "array");
  lua_setfield(L, -2, "__jsontype");
  lua_setfield(L, -2, "json_array_mt");
  luaL_newmetatable(L, MT_OBJECT);
  lua_pushliteral(L, "object");
  lua_setfield(L, -2, "__jsontype");
  lua_setfield(L, -2, "json_object_mt");
  lua_pushcfunction(L, l_encode);
  lua_setfield(L, -2, "json_encode");
  lua_pushcfunction(L, l_decode);
  lua_setfield(L, -2, "json_decode");
}
