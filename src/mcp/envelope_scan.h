/*
 * mcp/envelope_scan.h -- the scanner the envelope readers share (mcp/envelope.c,
 * the readers of a tools/call; mcp/answer.c, the reader of an answer): a line's
 * JSON read in place, as far as routing needs, every step refusing (0) what the
 * decoder would not give the same values for, so that the caller can hand the
 * line to the decoder whole (private: its functions are static, for each reader
 * to inline).
 */
#ifndef CLAUDE_MCP_ENVELOPE_SCAN_H
#define CLAUDE_MCP_ENVELOPE_SCAN_H

#include <string.h>

#include "json/json.h"
#include "json/scan.h"
#include "json/utf8.h"
#include "mcp/pending.h"

/* One line being read. */
typedef struct reader {
  const char *p, *end;
  struct claude_envelope_state *state; /* the stream's, or NULL (mcp/envelope.h) */
  struct claude_call_ids *ids;         /* where the ids are held back, or NULL */
  /* the answer's request takes its usual complete result without "resultType"
   * (claude_pending_usual); and whether the result was built so */
  int drop_complete, dropped;
  int object; /* the answer's request is told whether its result is an object */
} reader;

static inline void blanks(reader *r) {
  if (r->p < r->end && (unsigned char)*r->p > ' ') return; /* compact JSON: no blanks */
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
    r->p++;
}

/* The character c, after blanks. */
static inline int eat(reader *r, char c) {
  blanks(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return 1;
  }
  return 0;
}

/* A string without escapes or control characters, well-formed UTF-8 (the
 * decoder refuses the rest): its bytes are [*s, *s + *n). */
static int plain(reader *r, const char **s, size_t *n) {
  const char *q, *e;
  unsigned high = 0;
  blanks(r);
  if (r->p >= r->end || *r->p != '"') return 0;
  q = r->p + 1;
  e = find_special(q, r->end, &high);
  if (e >= r->end || *e != '"') return 0;
  if (high && claude_utf8_invalid(q, e) != NULL) return 0;
  *s = q;
  *n = (size_t)(e - q);
  r->p = e + 1;
  return 1;
}

/* The string `want` (plain ASCII without quotes), compared as a key is. */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int plain_is(reader *r, const char *want, size_t len) {
  const char *k;
  blanks(r);
  if (r->p >= r->end || *r->p != '"') return 0;
  k = r->p + 1;
  if ((size_t)(r->end - k) <= len || k[len] != '"' || memcmp(k, want, len) != 0) return 0;
  r->p = k + len + 1;
  return 1;
}
#define PLAIN_IS(r, lit) plain_is(r, lit, sizeof(lit) - 1)

/* The literal `word` (true, false, null) at r->p. */
static int plain_word(reader *r, const char *word, size_t n) {
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return 0;
  r->p += n;
  return 1;
}
#define PLAIN_WORD(r, lit) plain_word(r, lit, sizeof(lit) - 1)

/* An integer as the decoder reads it exactly: an optional minus, no leading
 * zero, up to 18 digits, no fraction or exponent. */
static int integer(reader *r, lua_Integer *v) {
  const char *p;
  lua_Unsigned u = 0;
  int neg = 0, digits = 0;
  blanks(r);
  p = r->p;
  if (p < r->end && *p == '-') {
    neg = 1;
    p++;
  }
  if (p >= r->end || *p < '0' || *p > '9') return 0;
  if (*p == '0') {
    p++;
    digits = 1;
    if (p < r->end && *p >= '0' && *p <= '9') return 0;
  } else {
    while (p < r->end && *p >= '0' && *p <= '9') {
      u = u * 10 + (lua_Unsigned)(*p++ - '0');
      if (++digits > 18) return 0;
    }
  }
  if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
  *v = neg ? -(lua_Integer)u : (lua_Integer)u;
  r->p = p;
  return 1;
}

/* The key `lit` (plain ASCII without quotes) at r->p, the opening quote:
 * its bytes and a closing quote follow. A key is compared, not scanned: with
 * `lit` a literal, the compare is a few loads. Moves past the quote. */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int key_is(reader *r, const char *lit, size_t n) {
  const char *k = r->p + 1;
  if ((size_t)(r->end - k) <= n || k[n] != '"' || memcmp(k, lit, n) != 0) return 0;
  r->p = k + n + 1;
  return 1;
}
#define KEY_IS(r, lit) key_is(r, lit, sizeof(lit) - 1)

/* Before a key: its opening quote, after blanks. */
static inline int key_start(reader *r) {
  blanks(r);
  return r->p < r->end && *r->p == '"';
}

/* The ':' after key number `which`: `which`, or -1. */
static inline int colon(reader *r, int which) { return which >= 0 && eat(r, ':') ? which : -1; }

/* Which of the keys named is at r->p, then ':': its index, or -1 (a key the
 * reader does not know, or no key: the line is not of the usual shape). */
#define KEY2(r, a, b) colon(r, !key_start(r) ? -1 : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : -1)
#define KEY3(r, a, b, c)                                                                    \
  colon(r, !key_start(r) ? -1 : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : -1)
#define KEY5(r, a, b, c, d, e)                                                              \
  colon(r, !key_start(r) ? -1                                                               \
           : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : KEY_IS(r, d) ? 3      \
           : KEY_IS(r, e) ? 4 : -1)
#define KEY4(r, a, b, c, d)                                                                 \
  colon(r, !key_start(r) ? -1                                                               \
           : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : KEY_IS(r, d) ? 3 : -1)

/* After a member: ',' (returns 1, more follow) or '}' (sets *done). */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int next_member(reader *r, int *done) {
  blanks(r);
  if (r->p < r->end && *r->p == ',') {
    r->p++;
    return 1;
  }
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    *done = 1;
    return 1;
  }
  return 0;
}

/* Decodes the value at r->p, `outer` containers deep, into stack slot
 * `slot`. */
static int decode_into(lua_State *L, reader *r, int outer, int slot) {
  const char *after;
  if (!claude_json_decode_at(L, r->p, r->end, outer, &after)) return 0;
  r->p = after;
  lua_replace(L, slot);
  return 1;
}

/* An id (an integer, or a string) into slot. With a set bound at `bound`, an
 * integer's request is looked at: whether it takes its usual complete result
 * checked here (claude_pending_usual). */
#ifdef __GNUC__
__attribute__((always_inline)) /* (the request readers' bound is 0: no look) */
#endif
static inline int id_into(lua_State *L, reader *r, int slot, int bound) {
  lua_Integer v;
  const char *s;
  size_t n;
  if (integer(r, &v)) {
    lua_pushinteger(L, v);
    if (bound) {
      int checks = claude_pending_usual(L, bound, v);
      r->drop_complete = checks == CLAUDE_PENDING_USUAL;
      r->object = checks == CLAUDE_PENDING_OBJECT;
    }
  } else if (plain(r, &s, &n)) {
    lua_pushlstring(L, s, n);
  } else {
    return 0;
  }
  lua_replace(L, slot);
  return 1;
}

/* The end of a line read (ok) into the mark and count - 1 slots above base:
 * only blanks may follow. Returns count, or 0 with the stack back at base. */
static int finish(lua_State *L, reader *r, int base, int ok, int count) {
  blanks(r);
  if (ok && r->p == r->end) {
    lua_settop(L, base + count);
    return count;
  }
  lua_settop(L, base);
  return 0;
}

#endif
