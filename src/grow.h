/*
 * grow.h -- room in a growing byte buffer: the one rule of every buffer in
 * claude.core that grows (a stream's coalesced writes, a line buffer, the
 * JSON encoder's output, an HTTP response's pending body, a header line, the
 * SSE parser's), doubling so that n appended bytes cost O(n) copies in all.
 * Inline: the encoder and the writers call it for every piece.
 */
#ifndef CLAUDE_GROW_H
#define CLAUDE_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Makes *p (of *cap bytes, NULL when 0) hold at least `need` bytes; the
 * first allocation is `first` bytes or more. 1 on success; 0 when out of
 * memory or `need` is past what a size can double to, with *p unchanged. */
static inline int claude_grow(char **p, size_t *cap, size_t need, size_t first) {
  size_t c;
  char *q;
  if (need <= *cap) return 1;
  c = *cap ? *cap : first;
  while (c < need) {
    if (c > SIZE_MAX / 2) return 0;
    c *= 2;
  }
  q = (char *)realloc(*p, c);
  if (q == NULL) return 0;
  *p = q;
  *cap = c;
  return 1;
}

#endif
