/*
 * utf8.h -- what well-formed UTF-8 is (RFC 3629; Unicode's table 3-7): the
 * JSON decoder refuses a string that is not (RFC 8259 8.1), the encoder
 * writes U+FFFD in place of what is not, so JSON text out is always UTF-8.
 */
#ifndef CLAUDE_UTF8_H
#define CLAUDE_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The length (1 to 4) of the well-formed sequence at p, or 0 when it is
 * ill-formed; then *bad is the length of its maximal subpart (the longest
 * start of a well-formed sequence, at least 1 byte), which Unicode's
 * "substitution of maximal subparts" replaces by one U+FFFD. p < end. */
static inline size_t claude_utf8_seq(const unsigned char *p, const unsigned char *end,
                                     size_t *bad) {
  unsigned c = p[0], lo = 0x80, hi = 0xBF; /* the range of the second byte */
  size_t n, i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;      /* no overlong forms */
    else if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;      /* no overlong forms */
    else if (c == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
  } else {
    *bad = 1; /* 80..C1 (a continuation, or an overlong lead), F5..FF */
    return 0;
  }
  for (i = 1; i < n; i++) {
    unsigned b = p + i < end ? p[i] : 0;
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
      *bad = i;
      return 0;
    }
  }
  return n;
}

/* The first byte of s..end where an ill-formed sequence starts, or NULL.
 * ASCII, most of what goes through, is passed sixteen bytes at a time. */
static inline const char *claude_utf8_invalid(const char *s, const char *end) {
  const unsigned char *p = (const unsigned char *)s, *e = (const unsigned char *)end;
  const uint64_t highs = 0x8080808080808080ULL;
  while (p < e) {
    size_t n, bad;
    if (e - p >= 16) {
      uint64_t a, b;
      memcpy(&a, p, 8);
      memcpy(&b, p + 8, 8);
      if (((a | b) & highs) == 0) {
        p += 16;
        continue;
      }
    }
    if (*p < 0x80) {
      p++;
      continue;
    }
    if ((n = claude_utf8_seq(p, e, &bad)) == 0) return (const char *)p;
    p += n;
  }
  return NULL;
}

#endif
