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
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

#include "grow.h"
#include "json/json.h"
#include "json/utf8.h"

#define ENCODE_MAX_DEPTH (2 * CLAUDE_JSON_MAX_DEPTH)

/* The marker metatables, also kept under these keys: no string lookup. */
static const char ARRAY_MT_KEY = 'a', OBJECT_MT_KEY = 'o';

/* ---- encoding ------------------------------------------------------------ */

typedef struct enc {
  lua_State *L;
  char *buf;
  size_t len, cap;
  const void *array_mt, *object_mt; /* the marker metatables, once a metatable is met */
  char err[256];
  char path[256];
} enc;

static int reserve(enc *e, size_t n) {
  if (e->len + n <= e->cap) return 1;
  if (claude_grow(&e->buf, &e->cap, e->len + n, 256)) return 1;
  snprintf(e->err, sizeof e->err, "out of memory");
  return 0;
}

static inline int put(enc *e, const char *s, size_t n) {
  if (!reserve(e, n)) return 0;
  memcpy(e->buf + e->len, s, n);
  e->len += n;
  return 1;
}

static const char need_escape[256] = {
  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* 0x80..0xFF: a UTF-8 sequence, checked */
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
  2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};

/* A Lua string is bytes; JSON text is UTF-8 (RFC 8259 8.1). What is not
 * well-formed UTF-8 (a tool's binary output, Latin-1 text) is written as
 * U+FFFD, one per maximal subpart as Unicode recommends, so that the rest of
 * the message still goes out and stays readable. */
#define REPLACEMENT "\xEF\xBF\xBD"

/* The first byte at or after p that needs more than a copy (need_escape),
 * or end: sixteen bytes at a time with SSE2. */
static inline const char *first_special(const char *p, const char *end) {
#if defined(__SSE2__) && defined(__GNUC__)
  const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
  const __m128i ctl = _mm_set1_epi8(0x1F);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
                               _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
    unsigned mask = (unsigned)_mm_movemask_epi8(hit) | (unsigned)_mm_movemask_epi8(v);
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
  while (p < end && !need_escape[(unsigned char)*p]) p++;
  return p;
}

static int put_string(enc *e, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t i, run = 0;
  if (!reserve(e, n + 2)) return 0;
  e->buf[e->len++] = '"';
  i = (size_t)(first_special(s, s + n) - s);
  if (i == n) { /* the usual string: copied whole */
    memcpy(e->buf + e->len, s, n);
    e->len += n;
    e->buf[e->len++] = '"';
    return 1;
  }
  for (; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!need_escape[c]) continue;
    if (c >= 0x80) {
      const unsigned char *u = (const unsigned char *)s;
      size_t bad, len = claude_utf8_seq(u + i, u + n, &bad);
      if (len > 0) {
        i += len - 1;
        continue;
      }
      if (!put(e, s + run, i - run) || !put(e, REPLACEMENT, 3)) return 0;
      i += bad - 1;
      run = i + 1;
      continue;
    }
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

/* A table being written. Tables nest in these frames, not in C calls, so
 * that depth costs no C stack. An array's element, or an object's key and
 * value, sit on the Lua stack above the table while they are written. */
typedef struct eframe {
  int t;            /* stack index of the table */
  int is_array;
  lua_Integer i, n; /* array: the element being written, and how many */
} eframe;

/* The error's path, "$.a.b[1]", from the outermost of the first `n` frames
 * inward (an object's key being written is the slot above its table). */
static void set_path(enc *e, const eframe *f, int n) {
  int k;
  size_t used = 0;
  for (k = 0; k < n && used + 80 < sizeof e->path; k++) {
    int w;
    if (f[k].is_array)
      w = snprintf(e->path + used, sizeof e->path - used, "[%lld]", (long long)f[k].i);
    else
      w = snprintf(e->path + used, sizeof e->path - used, ".%.64s",
                   lua_tostring(e->L, f[k].t + 1));
    if (w < 0) break;
    used += (size_t)w;
  }
  if (k < n) snprintf(e->path + used, sizeof e->path - used, "...");
}

/* Is the table at idx written as an array (*n elements)? 0 for an object,
 * -1 (error set) when it is neither. A plain table is an array when its
 * keys are exactly 1..n, an object when they are all strings; a marked table
 * follows its marker. */
static int classify(enc *e, int idx, lua_Integer *n) {
  lua_State *L = e->L;
  *n = (lua_Integer)lua_rawlen(L, idx);
  if (lua_getmetatable(L, idx)) {
    const void *mt = lua_topointer(L, -1);
    int is_array, is_object;
    lua_pop(L, 1);
    if (e->array_mt == NULL) { /* looked up only for a table that has a metatable */
      lua_rawgetp(L, LUA_REGISTRYINDEX, &ARRAY_MT_KEY);
      e->array_mt = lua_topointer(L, -1);
      lua_rawgetp(L, LUA_REGISTRYINDEX, &OBJECT_MT_KEY);
      e->object_mt = lua_topointer(L, -1);
      lua_pop(L, 2);
    }
    is_array = mt == e->array_mt;
    is_object = !is_array && mt == e->object_mt;
    if (is_array) return 1;
    if (is_object) return 0;
  }
  if (*n > 0) {
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      count++;
    }
    if (count == *n) return 1;
    snprintf(e->err, sizeof e->err,
             "cannot encode a table with both list items and other keys (or holes)");
    return -1;
  }
  return 0;
}

/* Writes one scalar (or fails naming it). */
static int encode_scalar(enc *e, int idx) {
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
    case LUA_TNIL: return put(e, "null", 4);
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) return put(e, "null", 4);
      /* fall through */
    default:
      snprintf(e->err, sizeof e->err, "cannot encode a %s", luaL_typename(L, idx));
      return 0;
  }
}

/* Writes the value on top of the stack and pops it; on failure sets the
 * error and its path (the caller resets the stack). Raises nothing. */
static int encode_top(enc *e) {
  lua_State *L = e->L;
  eframe local[64], *frames = local, *f;
  int depth = 0, cap = 64, ok = 0, path_frames = 0;
  lua_Integer n;
next:
  if (lua_type(L, -1) != LUA_TTABLE) {
    if (!encode_scalar(e, lua_gettop(L))) goto fail_here;
    lua_pop(L, 1);
  } else {
    int is_array;
    if (depth >= ENCODE_MAX_DEPTH) {
      snprintf(e->err, sizeof e->err, "nesting deeper than %d (a cycle?)", ENCODE_MAX_DEPTH);
      goto fail_here;
    }
    if (!lua_checkstack(L, 6)) {
      snprintf(e->err, sizeof e->err, "no stack room for nesting this deep");
      goto fail_here;
    }
    if ((is_array = classify(e, lua_gettop(L), &n)) < 0) goto fail_here;
    if (depth == cap) {
      eframe *more = (eframe *)malloc((size_t)cap * 4 * sizeof *more);
      if (more == NULL) {
        snprintf(e->err, sizeof e->err, "out of memory");
        goto fail_here;
      }
      memcpy(more, frames, (size_t)cap * sizeof *more);
      if (frames != local) free(frames);
      frames = more;
      cap *= 4;
    }
    f = &frames[depth++];
    f->t = lua_gettop(L);
    f->is_array = is_array;
    f->i = 0;
    f->n = n;
    if (!put(e, is_array ? "[" : "{", 1)) goto fail_inside;
    if (!is_array) lua_pushnil(L); /* the first key for lua_next */
  }
  /* The value is written: go on with the innermost table. */
  while (depth > 0) {
    f = &frames[depth - 1];
    if (f->is_array) {
      if (f->i < f->n) {
        if (f->i > 0 && !put(e, ",", 1)) goto fail_inside;
        lua_rawgeti(L, f->t, ++f->i);
        goto next;
      }
    } else if (lua_next(L, f->t)) {
      size_t klen;
      const char *k;
      if (lua_type(L, -2) != LUA_TSTRING) {
        snprintf(e->err, sizeof e->err,
                 "cannot encode a table with a %s key (object keys are strings, list keys 1..n)",
                 luaL_typename(L, -2));
        path_frames = depth - 1;
        goto fail;
      }
      k = lua_tolstring(L, -2, &klen);
      if ((f->i++ > 0 && !put(e, ",", 1)) || !put_string(e, k, klen) || !put(e, ":", 1))
        goto fail_inside;
      goto next;
    }
    if (!put(e, f->is_array ? "]" : "}", 1)) goto fail_inside;
    lua_settop(L, f->t - 1);
    depth--;
  }
  ok = 1;
  goto out;
fail_inside: /* in the innermost table itself: its own key or index is not part of the path */
  path_frames = depth - 1;
  goto fail;
fail_here: /* at the value on top: every open table's key or index is */
  path_frames = depth;
fail:
  set_path(e, frames, path_frames);
out:
  if (frames != local) free(frames);
  return ok;
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
  e.err[0] = e.path[0] = '\0';
  e.array_mt = e.object_mt = NULL;
  if (lua_type(L, idx) != LUA_TTABLE) { /* a string or a number (write_pieces' ids) */
    ok = encode_scalar(&e, idx);
  } else {
    lua_pushvalue(L, idx);
    ok = encode_top(&e);
    lua_settop(L, top);
  }
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

/* Appends s (n bytes) as a JSON string, quoted and escaped as the encoder writes strings, to
 * the malloc'ed buffer *buf (*len bytes used of *cap). 1, or 0 when out of memory (*len as
 * it was). */
int claude_json_append_string(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  enc e;
  e.buf = *buf;
  e.len = *len;
  e.cap = *cap;
  e.L = NULL;
  e.err[0] = e.path[0] = '\0';
  e.array_mt = e.object_mt = NULL;
  if (!put_string(&e, s, n)) {
    *buf = e.buf;
    *cap = e.cap;
    return 0;
  }
  *buf = e.buf;
  *len = e.len;
  *cap = e.cap;
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

static int append_bytes(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (n == 0) return 1; /* the buffer may not exist yet: no memcpy to NULL */
  if (!claude_grow(buf, cap, *len + n, 4096)) return 0;
  memcpy(*buf + *len, s, n);
  *len += n;
  return 1;
}

int claude_json_pieces_append(lua_State *L, const claude_pieces *p, char **buf, size_t *len,
                              size_t *cap) {
  size_t used = *len;
  int k;
  for (k = 0; k < p->n; k++) {
    int i = p->at != NULL ? p->at[k] : p->first + k, held;
    const char *s;
    size_t n;
    if ((k & 1) == 0) {
      if (p->raws != NULL && p->raws[k / 2] != NULL) {
        s = p->raws[k / 2];
        n = p->raw_lens[k / 2];
      } else {
        s = lua_type(L, i) == LUA_TSTRING ? lua_tolstring(L, i, &n) : NULL;
        if (s == NULL) return luaL_typeerror(L, i, "string"); /* misuse */
      }
      if (!append_bytes(buf, &used, cap, s, n)) return luaL_error(L, "out of memory");
    } else if (lua_isinteger(L, i)) { /* (an id: its digits, without the encoder's set-up) */
      char digits[24];
      char *start = format_integer(lua_tointeger(L, i), digits + sizeof digits);
      if (!append_bytes(buf, &used, cap, start, (size_t)(digits + sizeof digits - start)))
        return luaL_error(L, "out of memory");
    } else if (p->held != NULL && lua_type(L, i) == LUA_TLIGHTUSERDATA &&
               (held = p->held(p->held_ud, L, i, &s, &n)) != 0) {
      if (held < 0) {
        lua_pushfstring(L, "piece %d: a value no longer held", k + 1);
        return 0;
      }
      if (!append_bytes(buf, &used, cap, "\"", 1) || !append_bytes(buf, &used, cap, s, n) ||
          !append_bytes(buf, &used, cap, "\"", 1))
        return luaL_error(L, "out of memory");
    } else if (!claude_json_encode_append(L, i, buf, &used, cap)) {
      lua_pushfstring(L, "piece %d: %s", k + 1, lua_tostring(L, -1));
      return 0;
    }
  }
  *len = used;
  return 1;
}

/* The buffer core.json_pieces builds its texts in (its upvalue): kept, grown, reused. */
typedef struct pieces_buf {
  char *data;
  size_t cap;
} pieces_buf;

static int pieces_buf_gc(lua_State *L) {
  pieces_buf *b = (pieces_buf *)lua_touserdata(L, 1);
  free(b->data);
  b->data = NULL;
  b->cap = 0;
  return 0;
}

/* json_pieces(raw1, v1, raw2, v2, ..., rawN) -> text | nil, err, "encode": the text
 * write_pieces would write, as a string (a message's JSON made from its pieces, no table). */
static int l_pieces(lua_State *L) {
  pieces_buf *b = (pieces_buf *)lua_touserdata(L, lua_upvalueindex(1));
  size_t len = 0;
  claude_pieces p;
  memset(&p, 0, sizeof p);
  p.first = 1;
  p.n = lua_gettop(L);
  if (!claude_json_pieces_append(L, &p, &b->data, &len, &b->cap)) {
    luaL_pushfail(L);
    lua_insert(L, -2);
    lua_pushliteral(L, "encode");
    return 3;
  }
  lua_pushlstring(L, b->data, len);
  if (b->cap > 65536) { /* (a big one is not kept) */
    free(b->data);
    b->data = NULL;
    b->cap = 0;
  }
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

/* number_text(n) -> the text of a number as a tool result says it (claude.mcp.content's
 * format_number): an integer, or an integral float, without ".0"; "nan", "inf", "-inf";
 * else the shortest of %.14g..%.16g that reads back exactly, or %.17g. The tool-call path
 * turns a result of `add` into text: tostring() would go through snprintf. */
static int l_number_text(lua_State *L) {
  char tmp[48];
  int isint, prec, n = 0;
  lua_Integer i;
  double d;
  luaL_checktype(L, 1, LUA_TNUMBER);
  i = lua_tointegerx(L, 1, &isint); /* a float only when integral and in range */
  if (isint) {
    char *start = format_integer(i, tmp + sizeof tmp);
    lua_pushlstring(L, start, (size_t)(tmp + sizeof tmp - start));
    return 1;
  }
  d = lua_tonumber(L, 1);
  if (isnan(d)) lua_pushliteral(L, "nan");
  else if (isinf(d)) lua_pushstring(L, d > 0 ? "inf" : "-inf");
  else {
    for (prec = 14; prec <= 17; prec++) {
      n = snprintf(tmp, sizeof tmp, "%.*g", prec, d);
      if (prec == 17 || strtod(tmp, NULL) == d) break;
    }
    lua_pushlstring(L, tmp, (size_t)n);
  }
  return 1;
}

static const luaL_Reg funcs[] = {{"json_encode", l_encode}, {"json_decode", l_decode},
                                  {"json_peek_ids", claude_json_peek_ids},
                                  {"number_text", l_number_text}, {NULL, NULL}};

/* Puts json_encode, json_decode, json_peek_ids, number_text, json_pieces, json_array_mt,
 * json_object_mt and json_null into the module table on top of the stack. */
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
  luaL_setfuncs(L, funcs, 0);
  memset(lua_newuserdatauv(L, sizeof(pieces_buf), 0), 0, sizeof(pieces_buf));
  lua_newtable(L);
  lua_pushcfunction(L, pieces_buf_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_pushcclosure(L, l_pieces, 1);
  lua_setfield(L, -2, "json_pieces");
}
