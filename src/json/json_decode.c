/*
 * json_decode.c -- JSON text to Lua values, in one pass.
 * (Over ~600 lines on purpose: the scanner, the string cache and the frame
 * stack are one hot loop whose helpers must stay static inline together.)
 *
 * The elements of an array wait on the Lua stack until their number is
 * known; an object is created with the size the last object of its shape had.
 * Either way a table is rarely resized while it fills. Integers
 * stay exact, `[]` comes back marked as an array, null is json.null (the NULL
 * light userdata, the same value as cjson.null). A string without escapes is
 * pushed straight from the text; its end is found sixteen bytes at a time.
 *
 * Containers nest in an explicit stack of frames, not in C calls: the depth
 * limit (CLAUDE_JSON_MAX_DEPTH, from the outermost value) costs no C stack.
 *
 * Strings must be well-formed UTF-8 (RFC 8259 8.1): a peer that sends other
 * bytes gets a parse error, and nothing that decodes can make the encoder
 * write text that is not UTF-8.
 *
 * The decoder never raises but for memory errors (it runs in protected calls
 * on the hot path); bad text gives nil and a message naming the byte.
 * See docs/json.md.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

#include "json/json.h"
#include "json/scan.h"
#include "json/utf8.h"

#define MAX_DEPTH CLAUDE_JSON_MAX_DEPTH
#define STR_(x) #x
#define STR(x) STR_(x)
#define TOO_DEEP "nested deeper than " STR(CLAUDE_JSON_MAX_DEPTH) " levels"
#define BAD_UTF8 "invalid UTF-8 in string"
/* Containers on the C stack before frames move into a userdata. */
#define LOCAL_FRAMES 64
/* Past this depth an array holds no elements on the stack while a nested
 * container is read (see open_container). */
#define DEEP 32
/* Array elements held on the stack before they move into their table. */
#define CHUNK 64
/* 2^53: integral floats up to this magnitude come back as integers. */
#define EXACT_LIMIT 9007199254740992.0

/* Recently seen short strings, so that the keys (and short values) that come
 * in every message are found by one compare instead of being hashed by Lua
 * again. Each slot's string is anchored in the userdata's uservalue table. */
#define CACHE_SLOTS 512
/* Keys up to 64 bytes: Lua's short strings (40) and the reserved keys of MCP's
 * `_meta` envelope, sent with every request of protocol 2026-07-28
 * ("io.modelcontextprotocol/clientCapabilities" is 42), whose string is then
 * reused, hash and all, instead of being made again. */
#define CACHE_KEY_LEN 64
#define CACHE_VALUE_LEN 20 /* longer values are mostly ids, seen once */
#define SHAPE_SLOTS 1024
typedef struct str_cache {
  const char *text[CACHE_SLOTS];
  size_t len[CACHE_SLOTS]; /* SIZE_MAX: empty */
  uint64_t head[CACHE_SLOTS], tail[CACHE_SLOTS];
  unsigned char shape[SHAPE_SLOTS]; /* members of the last object per shape */
} str_cache;

static const char CACHE_REGISTRY_KEY = 'c';

typedef struct dec {
  lua_State *L;
  str_cache *cache;
  int anchors; /* stack index of the cache's anchor table */
  int slot;    /* cache slot of the last short string pushed, or -1 */
  const char *start, *p, *end;
  const char *err;    /* what went wrong (static text) */
  const char *err_at; /* where */
  int depth;          /* open containers */
  int outer;          /* containers around the text decoded (claude_json_decode_at) */
  struct frame *frames;
  int nframes;        /* room in frames */
  int store;          /* stack slot of the userdata that holds frames past the C stack's */
} dec;

static int fail(dec *d, const char *what, const char *at) {
  d->err = what;
  d->err_at = at;
  return 0;
}

#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline void skip_ws(dec *d) {
  const char *p = d->p, *end = d->end;
  if (p < end && (unsigned char)*p > ' ') return; /* compact JSON: no blanks */
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  d->p = p;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The four hex digits at p, or -1. */
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

/* Writes the UTF-8 bytes of code point cp at o; returns how many. */
static size_t put_utf8(char *o, long cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The code point of the \u escape at q ("\uXXXX", and its low half when it
 * is a high surrogate); *after is the byte after it. -1 when malformed. A lone
 * surrogate, which JavaScript writes for a string cut in the middle of a
 * pair, becomes U+FFFD rather than failing the whole message. */
static long unicode_escape(const char *q, const char *end, const char **after) {
  long cp = hex4(q + 2, end), lo;
  if (cp < 0) return -1;
  q += 6;
  if (cp >= 0xD800 && cp <= 0xDBFF && end - q >= 6 && q[0] == '\\' && q[1] == 'u' &&
      (lo = hex4(q + 2, end)) >= 0xDC00 && lo <= 0xDFFF) {
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    q += 6;
  } else if (cp >= 0xD800 && cp <= 0xDFFF) {
    cp = 0xFFFD;
  }
  *after = q;
  return cp;
}

/* Where unescaped text goes: a buffer on the C stack while it fits (most
 * strings), then a luaL_Buffer. */
typedef struct unescaped {
  char *p; /* `local`, or the luaL_Buffer's memory */
  size_t n, cap;
  int boxed;
  luaL_Buffer b;
  char local[512];
} unescaped;

/* Room for `more` bytes at u->p + u->n. */
static char *room(lua_State *L, unescaped *u, size_t more) {
  if (u->n + more > u->cap) {
    if (!u->boxed) {
      char *p = luaL_buffinitsize(L, &u->b, 2 * (u->n + more));
      memcpy(p, u->local, u->n);
      u->boxed = 1;
    }
    u->b.n = u->n;
    luaL_prepbuffsize(&u->b, more);
    u->p = u->b.b;
    u->cap = u->b.size;
  }
  return u->p + u->n;
}

static void put_text(lua_State *L, unescaped *u, const char *s, size_t n) {
  memcpy(room(L, u, n), s, n);
  u->n += n;
}

/* The rest of a string with escapes: d->p is at its opening quote, s..q is
 * plain text, q is at the first backslash. */
static int parse_escaped(dec *d, const char *s, const char *q, unsigned high) {
  lua_State *L = d->L;
  const char *end = d->end, *bad;
  unescaped u;
  u.p = u.local;
  u.n = 0;
  u.cap = sizeof u.local;
  u.boxed = 0;
  if (high && (bad = claude_utf8_invalid(s, q)) != NULL) return fail(d, BAD_UTF8, bad);
  put_text(L, &u, s, (size_t)(q - s));
  for (;;) {
    char c;
    if (q >= end) return fail(d, "unterminated string", d->p);
    if (*q == '"') break;
    if (*q != '\\') return fail(d, "control character in string", q);
    if (q + 1 >= end) return fail(d, "unterminated string", d->p);
    switch (q[1]) {
      case '"': case '\\': case '/': c = q[1]; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        const char *after;
        long cp = unicode_escape(q, end, &after);
        if (cp < 0) return fail(d, "invalid \\u escape", q);
        u.n += put_utf8(room(L, &u, 4), cp);
        q = after;
        goto plain;
      }
      default: return fail(d, "invalid escape", q);
    }
    *room(L, &u, 1) = c;
    u.n++;
    q += 2;
  plain:
    s = q;
    high = 0;
    q = find_special(q, end, &high);
    /* a segment cut short by the end is an unterminated string, said next */
    if (high && q < end && (bad = claude_utf8_invalid(s, q)) != NULL)
      return fail(d, BAD_UTF8, bad);
    put_text(L, &u, s, (size_t)(q - s));
  }
  if (u.boxed) {
    u.b.n = u.n;
    luaL_pushresult(&u.b);
  } else {
    lua_pushlstring(L, u.local, u.n);
  }
  d->p = q + 1;
  return 1;
}

/* A short string's cache slot, from its first and last eight bytes (all of
 * them up to 16 bytes long), which the slot keeps to compare with. A hit is
 * the same bytes as a string already checked, so only a miss checks UTF-8.
 * Returns 0 (the error set) for a string that is not UTF-8. */
static int push_short(dec *d, const char *s, size_t n, unsigned high) {
  const char *bad;
  lua_State *L = d->L;
  str_cache *c = d->cache;
  uint64_t head = 0, tail = 0;
  unsigned i;
  if (n >= 8) {
    memcpy(&head, s, 8);
    memcpy(&tail, s + n - 8, 8);
  } else if (n > 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (d->end - s >= 8) { /* one load, and keep the string's bytes */
      memcpy(&head, s, 8);
      head &= ~0ULL >> (64 - 8 * n);
    } else
#endif
      memcpy(&head, s, n);
  }
  i = (unsigned)(((head ^ (tail * 0x9E3779B97F4A7C15ULL) ^ n) * 0xFF51AFD7ED558CCDULL) >> 55);
  d->slot = (int)i;
  if (c->len[i] == n && c->head[i] == head && c->tail[i] == tail &&
      (n <= 16 || memcmp(c->text[i] + 8, s + 8, n - 16) == 0)) {
    lua_rawgeti(L, d->anchors, (lua_Integer)i + 1);
    return 1;
  }
  if (high && (bad = claude_utf8_invalid(s, s + n)) != NULL) return fail(d, BAD_UTF8, bad);
  c->text[i] = lua_pushlstring(L, s, n);
  c->len[i] = n;
  c->head[i] = head;
  c->tail[i] = tail;
  lua_pushvalue(L, -1);
  lua_rawseti(L, d->anchors, (lua_Integer)i + 1);
  return 1;
}

/* d->p is at the opening quote. */
static int parse_string(dec *d, size_t cache_len) {
  unsigned high = 0;
  const char *s = d->p + 1, *q = find_special(s, d->end, &high);
  if (q < d->end && *q == '"') {
    size_t n = (size_t)(q - s);
    if (n <= cache_len) {
      if (!push_short(d, s, n, high)) return 0;
    } else {
      const char *bad = high ? claude_utf8_invalid(s, q) : NULL;
      if (bad != NULL) return fail(d, BAD_UTF8, bad);
      lua_pushlstring(d->L, s, n);
    }
    d->p = q + 1;
    return 1;
  }
  if (q >= d->end) return fail(d, "unterminated string", d->p);
  if (*q != '\\') return fail(d, "control character in string", q);
  return parse_escaped(d, s, q, high);
}

static int is_digit(const char *p, const char *end) {
  return p < end && *p >= '0' && *p <= '9';
}

/* Numbers follow RFC 8259's grammar. Integers of up to 18 digits are read
 * here; anything else goes through lua_stringtonumber (locale-safe), and an
 * integral result of magnitude up to 2^53 comes back as an integer. */
static int parse_number(dec *d) {
  lua_State *L = d->L;
  const char *s = d->p, *p = s, *end = d->end;
  uint64_t v = 0;
  int digits = 0, integral = 1;
  char buf[64];
  size_t n;
  if (*p == '-') p++;
  if (!is_digit(p, end)) return fail(d, "invalid number", s);
  if (*p == '0') {
    if (is_digit(++p, end)) return fail(d, "leading zero in number", s);
  } else {
    while (is_digit(p, end)) {
      v = v * 10 + (uint64_t)(*p++ - '0');
      digits++;
    }
  }
  if (p < end && *p == '.') {
    integral = 0;
    if (!is_digit(++p, end)) return fail(d, "invalid number", s);
    while (is_digit(p, end)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    integral = 0;
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (!is_digit(p, end)) return fail(d, "invalid number", s);
    while (is_digit(p, end)) p++;
  }
  d->p = p;
  if (integral && digits <= 18) {
    lua_pushinteger(L, *s == '-' ? -(lua_Integer)v : (lua_Integer)v);
    return 1;
  }
  n = (size_t)(p - s);
  if (n < sizeof buf) {
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (lua_stringtonumber(L, buf) == 0) return fail(d, "invalid number", s);
  } else { /* Lua refuses over 200 characters under a locale whose point is not '.' */
    lua_pushlstring(L, s, n);
    if (lua_stringtonumber(L, lua_tostring(L, -1)) == 0) return fail(d, "invalid number", s);
    lua_remove(L, -2);
  }
  if (!lua_isinteger(L, -1)) {
    double x = lua_tonumber(L, -1);
    if (x == floor(x) && fabs(x) <= EXACT_LIMIT) {
      lua_pop(L, 1);
      lua_pushinteger(L, (lua_Integer)x);
    }
  }
  return 1;
}

static int parse_literal(dec *d, const char *word, size_t n) {
  if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0)
    return fail(d, "expected a value", d->p);
  d->p += n;
  return 1;
}

/* The table's slot `t` holds nil until the first flush creates it, sized
 * for what is held then; the `held` values above it move into it from index
 * `count` + 1 on. */
static void flush_array(lua_State *L, int t, int held, lua_Integer count) {
  int i;
  if (lua_type(L, t) == LUA_TNIL) { /* a new table: fill it from the top */
    lua_createtable(L, held, 0);
    lua_replace(L, t);
    for (i = held; i >= 1; i--) lua_rawseti(L, t, count + i);
    return;
  }
  for (i = 1; i <= held; i++) {
    lua_pushvalue(L, t + i);
    lua_rawseti(L, t, count + i);
  }
  lua_settop(L, t);
}

/* Pushes one key (d->p at its quote) and reads the ':' after it. */
static int parse_key(dec *d) {
  if (d->p >= d->end || *d->p != '"') return fail(d, "expected a string key", d->p);
  if (!parse_string(d, CACHE_KEY_LEN)) return 0;
  skip_ws(d);
  if (d->p >= d->end || *d->p != ':') return fail(d, "expected ':'", d->p);
  d->p++;
  skip_ws(d);
  return 1;
}

/* A container being filled. Containers nest in these frames, not in C
 * calls, so that depth costs no C stack. */
enum { F_ARRAY, F_FIRST, F_OBJECT };
typedef struct frame {
  int kind;
  int t;             /* stack index of the table (an array's holds nil until its first flush) */
  int held;          /* array: elements waiting on the stack above t */
  unsigned shape;    /* object: its shape slot (F_FIRST: the first key's part of it) */
  lua_Integer count; /* array: elements already in the table; object: members */
} frame;

/* Enters a container at d->p: a frame for it, room on the stack. Past
 * DEEP levels an array first moves the elements it holds into its table, so
 * that every further level holds at most two stack slots. */
static frame *open_container(dec *d) {
  lua_State *L = d->L;
  if (d->depth + d->outer >= MAX_DEPTH) return fail(d, TOO_DEEP, d->p), NULL;
  if (!lua_checkstack(L, CHUNK + 8)) return fail(d, TOO_DEEP, d->p), NULL;
  if (d->depth >= DEEP) {
    frame *up = &d->frames[d->depth - 1];
    if (up->kind == F_ARRAY && up->held > 0) {
      flush_array(L, up->t, up->held, up->count);
      up->count += up->held;
      up->held = 0;
    }
  }
  if (d->depth == d->nframes) { /* more frames, in a userdata the collector owns */
    int n = d->nframes * 4;
    frame *more = (frame *)lua_newuserdatauv(L, (size_t)n * sizeof(frame), 0);
    memcpy(more, d->frames, (size_t)d->nframes * sizeof(frame));
    lua_replace(L, d->store);
    d->frames = more;
    d->nframes = n;
  }
  return &d->frames[d->depth++];
}

/* The value at d->p (blanks skipped), containers included: one loop, with
 * an explicit stack of frames for the open containers. */
static int parse_value(dec *d) {
  lua_State *L = d->L;
  frame *f;
value:
  if (d->p >= d->end) return fail(d, "expected a value", d->p);
  switch (*d->p) {
    case '{':
      if ((f = open_container(d)) == NULL) return 0;
      d->p++;
      skip_ws(d);
      if (d->p < d->end && *d->p == '}') {
        d->p++;
        lua_createtable(L, 0, 0);
        d->depth--;
        break;
      }
      /* The table is created after the first member, with the size that the
       * last object of the same shape had: the same first key and, when it
       * is a short string, first value ({"type":"text"...} and
       * {"type":"tool_use"...} are different shapes), at the same depth.
       * Members then go straight in; a wrong guess only costs Lua's growth. */
      f->kind = F_FIRST;
      d->slot = -1;
      if (!parse_key(d)) return 0;
      f->shape = (unsigned)(d->slot + 1) * 0x9E3779B1u;
      d->slot = -1;
      goto value;
    case '[':
      if ((f = open_container(d)) == NULL) return 0;
      d->p++;
      skip_ws(d);
      if (d->p < d->end && *d->p == ']') {
        d->p++;
        lua_createtable(L, 0, 0);
        luaL_setmetatable(L, CLAUDE_JSON_ARRAY_MT);
        d->depth--;
        break;
      }
      /* elements wait on the stack until their number is known */
      lua_pushnil(L); /* the table's slot */
      f->kind = F_ARRAY;
      f->t = lua_gettop(L);
      f->held = 0;
      f->count = 0;
      goto value;
    case '"':
      if (!parse_string(d, CACHE_VALUE_LEN)) return 0;
      break;
    case 't':
      if (!parse_literal(d, "true", 4)) return 0;
      lua_pushboolean(L, 1);
      break;
    case 'f':
      if (!parse_literal(d, "false", 5)) return 0;
      lua_pushboolean(L, 0);
      break;
    case 'n':
      if (!parse_literal(d, "null", 4)) return 0;
      lua_pushlightuserdata(L, NULL);
      break;
    default:
      if (*d->p != '-' && (*d->p < '0' || *d->p > '9')) return fail(d, "expected a value", d->p);
      if (!parse_number(d)) return 0;
  }
  /* A value is on top: it goes into the innermost open container. */
done:
  if (d->depth == 0) return 1;
  f = &d->frames[d->depth - 1];
  switch (f->kind) {
    case F_ARRAY:
      f->held++;
      skip_ws(d);
      if (d->p < d->end && *d->p == ',') {
        d->p++;
        skip_ws(d);
        if (f->held == CHUNK) {
          flush_array(L, f->t, f->held, f->count);
          f->count += f->held;
          f->held = 0;
        }
        goto value;
      }
      if (d->p < d->end && *d->p == ']') {
        d->p++;
        flush_array(L, f->t, f->held, f->count);
        d->depth--;
        goto done;
      }
      return fail(d, "expected ',' or ']'", d->p);
    case F_FIRST:
      if (lua_type(L, -1) != LUA_TSTRING) d->slot = -1; /* a nested object's */
      f->shape = (f->shape + (unsigned)(d->slot + 1) * 0x85EBCA77u + (unsigned)(d->depth + d->outer)) %
                 SHAPE_SLOTS;
      lua_createtable(L, 0, d->cache->shape[f->shape]);
      lua_rotate(L, -3, 1);
      f->t = lua_gettop(L) - 2;
      lua_rawset(L, f->t);
      f->kind = F_OBJECT;
      f->count = 1;
      break;
    default: /* F_OBJECT */
      lua_rawset(L, f->t);
      f->count++;
  }
  skip_ws(d);
  if (d->p < d->end && *d->p == ',') {
    d->p++;
    skip_ws(d);
    if (!parse_key(d)) return 0;
    goto value;
  }
  if (d->p < d->end && *d->p == '}') {
    d->p++;
    d->cache->shape[f->shape] = (unsigned char)(f->count < 255 ? f->count : 255);
    d->depth--;
    goto done;
  }
  return fail(d, "expected ',' or '}'", d->p);
}

/* "invalid JSON: <what> at byte N (found 'c')" */
static void push_error(lua_State *L, const dec *d) {
  char found[32];
  const char *at = d->err_at < d->end ? d->err_at : d->end;
  if (at >= d->end)
    snprintf(found, sizeof found, "the text ends");
  else if ((unsigned char)*at >= 0x20 && (unsigned char)*at < 0x7F)
    snprintf(found, sizeof found, "found '%c'", *at);
  else
    snprintf(found, sizeof found, "found byte 0x%02X", (unsigned char)*at);
  lua_pushfstring(L, "invalid JSON: %s at byte %I (%s)", d->err,
                  (lua_Integer)(at - d->start) + 1, found);
}

/* Pushes the state's string cache's anchor table; returns the cache. The
 * table is the registry's (one look-up), the cache a userdata in its slot
 * after the anchors' (an array read). */
static str_cache *push_cache(lua_State *L) {
  str_cache *c;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &CACHE_REGISTRY_KEY) == LUA_TTABLE) {
    lua_rawgeti(L, -1, CACHE_SLOTS + 1);
    c = (str_cache *)lua_touserdata(L, -1);
    lua_pop(L, 1);
  } else {
    int i;
    lua_pop(L, 1);
    lua_createtable(L, CACHE_SLOTS + 1, 0);
    c = (str_cache *)lua_newuserdatauv(L, sizeof *c, 0);
    memset(c, 0, sizeof *c);
    for (i = 0; i < CACHE_SLOTS; i++) c->len[i] = (size_t)-1;
    lua_rawseti(L, -2, CACHE_SLOTS + 1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &CACHE_REGISTRY_KEY);
  }
  return c;
}

/* The decoder over [s, end), `outer` containers deep in the text it is part
 * of; pushes the cache's anchors and the frame store's slot. */
static void start(dec *d, frame *local, lua_State *L, const char *s, const char *end,
                  int outer) {
  int base = lua_gettop(L);
  luaL_checkstack(L, 8, "json");
  d->L = L;
  d->cache = push_cache(L);
  d->anchors = base + 1;
  lua_pushnil(L);
  d->store = base + 2;
  d->frames = local;
  d->nframes = LOCAL_FRAMES;
  d->start = d->p = s;
  d->end = end;
  d->err = NULL;
  d->err_at = s;
  d->depth = 0;
  d->outer = outer;
  d->slot = -1;
}

int claude_json_decode_at(lua_State *L, const char *s, const char *end, int outer,
                          const char **after) {
  dec d;
  frame local[LOCAL_FRAMES];
  int base = lua_gettop(L);
  start(&d, local, L, s, end, outer);
  skip_ws(&d);
  if (parse_value(&d)) {
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    *after = d.p;
    return 1;
  }
  lua_settop(L, base);
  return 0;
}

int claude_json_decode_push(lua_State *L, const char *s, size_t len) {
  dec d;
  frame local[LOCAL_FRAMES];
  int base = lua_gettop(L);
  start(&d, local, L, s, s + len, 0);
  skip_ws(&d);
  if (parse_value(&d)) {
    skip_ws(&d);
    if (d.p == d.end) {
      lua_replace(L, base + 1);
      lua_settop(L, base + 1);
      return 1;
    }
    fail(&d, "unexpected text after the value", d.p);
  }
  lua_settop(L, base);
  luaL_pushfail(L);
  push_error(L, &d);
  return 0;
}

/* ---- ids out of a line that does not decode ------------------------------ */

/* The byte after the string whose opening quote is at p, or NULL when it
 * does not end. */
static const char *skip_string(const char *p, const char *end) {
  unsigned high = 0; /* the scan does not check UTF-8: decoding what it finds does */
  p++;
  for (;;) {
    p = find_special(p, end, &high);
    if (p >= end) return NULL;
    if (*p == '"') return p + 1;
    p += *p == '\\' ? 2 : 1; /* an escape, or a control character: go on */
    if (p > end) return NULL;
  }
}

static const char *skip_blanks(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

/* The byte after the value at p (a string, a container whatever its depth,
 * or a scalar's run of bytes), or NULL when the text ends first. Containers
 * are only counted, never nested in C calls. */
static const char *skip_value(const char *p, const char *end) {
  size_t depth = 0;
  if (p >= end) return NULL;
  if (*p != '"' && *p != '{' && *p != '[') {
    while (p < end && !strchr(",}] \t\r\n", *p)) p++;
    return p;
  }
  do {
    if (p >= end) return NULL;
    if (*p == '"') {
      if ((p = skip_string(p, end)) == NULL) return NULL;
      continue;
    }
    if (*p == '{' || *p == '[') depth++;
    else if (*p == '}' || *p == ']') depth--;
    p++;
  } while (depth > 0);
  return p;
}

typedef struct span {
  const char *p;
  size_t n;
} span;

enum { PEEK_REQUEST_ID, PEEK_ID, PEEK_TYPE, PEEK_RESPONSE_REQUEST_ID, PEEK_METHOD, PEEK_N };

static int key_is(const char *k, size_t n, const char *want) {
  return n == strlen(want) && memcmp(k, want, n) == 0;
}

/* Reads the members of the object at p as far as they go, noting where the
 * values of the keys of interest are (the last of duplicates, as decoding
 * would): request_id, id and type at the top, request_id inside "response"
 * (`nested`: inside it). Stops quietly at the first thing that is not JSON. */
static void scan_object(const char *p, const char *end, int nested, span *out) {
  p = skip_blanks(p, end);
  if (p >= end || *p != '{') return;
  p = skip_blanks(p + 1, end);
  while (p < end && *p == '"') {
    const char *k = p + 1, *v, *after;
    size_t kn;
    if ((p = skip_string(p, end)) == NULL) return;
    kn = (size_t)(p - 1 - k);
    p = skip_blanks(p, end);
    if (p >= end || *p != ':') return;
    v = skip_blanks(p + 1, end);
    after = skip_value(v, end);
    if (nested) {
      if (key_is(k, kn, "request_id") && after)
        out[PEEK_RESPONSE_REQUEST_ID] = (span){v, (size_t)(after - v)};
    } else if (key_is(k, kn, "response") && *v == '{') {
      scan_object(v, after ? after : end, 1, out);
    } else if (after) {
      int which = key_is(k, kn, "request_id") ? PEEK_REQUEST_ID
                  : key_is(k, kn, "id")       ? PEEK_ID
                  : key_is(k, kn, "type")     ? PEEK_TYPE
                  : key_is(k, kn, "method")   ? PEEK_METHOD
                                              : -1;
      if (which >= 0) out[which] = (span){v, (size_t)(after - v)};
    }
    if (after == NULL) return;
    p = skip_blanks(after, end);
    if (p >= end || *p != ',') return;
    p = skip_blanks(p + 1, end);
  }
}

/* Pushes the value in the span when it decodes to a string (or, with
 * `integer`, an integer); else nil. */
static void push_peeked(lua_State *L, span s, int integer) {
  int top = lua_gettop(L);
  if (s.p != NULL && (*s.p == '"' || (integer && *s.p != '{' && *s.p != '[')) &&
      claude_json_decode_push(L, s.p, s.n) &&
      (lua_type(L, -1) == LUA_TSTRING || (integer && lua_isinteger(L, -1))))
    return;
  lua_settop(L, top);
  lua_pushnil(L);
}

/* core.json_peek_ids(line) -> request_id, id, type, has_method: for a line
 * that does not decode (too deep, cut short, a bad escape or invalid UTF-8
 * further on), the top-level "request_id" (a string; a control_response's
 * "response"."request_id" when there is none), "id" (a string or an
 * integer) and "type" (a string) found before the first thing that is not
 * JSON, each nil when absent or of another type, and whether a top-level
 * "method" was found, whatever its value (a JSON-RPC request, not an
 * answer). The line is only scanned: no depth limit, no tables. */
int claude_json_peek_ids(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  span out[PEEK_N];
  memset(out, 0, sizeof out);
  lua_settop(L, 1);
  scan_object(s, s + len, 0, out);
  if (out[PEEK_REQUEST_ID].p == NULL) out[PEEK_REQUEST_ID] = out[PEEK_RESPONSE_REQUEST_ID];
  push_peeked(L, out[PEEK_REQUEST_ID], 0);
  push_peeked(L, out[PEEK_ID], 1);
  push_peeked(L, out[PEEK_TYPE], 0);
  lua_pushboolean(L, out[PEEK_METHOD].p != NULL);
  return 4;
}
