/*
 * json/scan.h -- finding the end of a JSON string fast, for the decoder and
 * the envelope readers (mcp/envelope_scan.h) (private).
 */
#ifndef CLAUDE_JSON_SCAN_H
#define CLAUDE_JSON_SCAN_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

/* The first quote, backslash or control character at or after q (or end).
 * With SSE2 (every x86-64), sixteen bytes at a time; else, and for the last
 * bytes of the text, eight at a time with the usual SWAR tests for a byte
 * equal to, or less than, a constant. A borrow can only mark bytes above a
 * true match, so on a little-endian machine the lowest marked byte is the
 * first match. *high becomes nonzero when a byte of 0x80 or more may lie
 * before the match: only then does the text need a UTF-8 check, so ASCII
 * costs one OR per load. */
static inline const char *find_special(const char *q, const char *end, unsigned *high) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
#if defined(__SSE2__) && defined(__GNUC__)
  const __m128i quote16 = _mm_set1_epi8('"'), bs16 = _mm_set1_epi8('\\');
  const __m128i ctl16 = _mm_set1_epi8(0x1F);
  while (end - q >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote16), _mm_cmpeq_epi8(v, bs16)),
                               _mm_cmpeq_epi8(_mm_min_epu8(v, ctl16), v));
    unsigned mask = (unsigned)_mm_movemask_epi8(hit);
    *high |= (unsigned)_mm_movemask_epi8(v);
    if (mask) return q + __builtin_ctz(mask);
    q += 16;
  }
#endif
  while (end - q >= 8) {
    uint64_t w, quote, bs, hits;
    memcpy(&w, q, 8);
    quote = w ^ (ones * '"');
    bs = w ^ (ones * '\\');
    hits = (((quote - ones) & ~quote) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w)) & highs;
    *high |= (w & highs) != 0;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (hits) return q + (__builtin_ctzll(hits) >> 3);
#else
    if (hits) break; /* borrows run the other way: find it byte by byte */
#endif
    q += 8;
  }
  while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) *high |= *q++ & 0x80;
  return q;
}

#endif
