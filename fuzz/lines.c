/*
 * lines.c -- libFuzzer target: the line framer against a reference model.
 * The first byte sets the line ceiling (small ones make overflows), the
 * second seeds the sizes of the reads the rest arrives in. The model: the
 * text split at '\n'; a piece longer than the ceiling is reported once as an
 * overflow; else one '\r' before the '\n' goes, blank lines are skipped; at
 * EOF a last piece without '\n' (not over the ceiling) is a line as it is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  claude_lines lb;
  const char *text, *line, *p, *end;
  size_t max_line, n, len, fed = 0;
  uint32_t seed;
  int kind;
  if (size < 2) return 0;
  max_line = data[0] == 0 ? 1 : data[0] == 255 ? CLAUDE_DEFAULT_MAX_LINE : data[0];
  seed = data[1] * 2654435761u + 1;
  text = (const char *)data + 2;
  size -= 2;
  p = text; /* the model's position */
  end = text + size;
  claude_lines_init(&lb, max_line);
  for (;;) {
    int eof = fed == size;
    if (!eof) {
      char *buf;
      size_t room;
      seed = seed * 1103515245u + 12345u;
      n = 1 + (seed >> 16) % 97;
      if (n > size - fed) n = size - fed;
      claude_lines_space(&lb, n, &buf, &room);
      if (buf == NULL || room < n) abort();
      memcpy(buf, text + fed, n);
      claude_lines_feed(&lb, n);
      fed += n;
    }
    while ((kind = eof ? (claude_lines_rest(&lb, &line, &len) ? CLAUDE_LINE : CLAUDE_LINE_NONE)
                       : claude_lines_next(&lb, &line, &len)) != CLAUDE_LINE_NONE) {
      /* the model's next event */
      for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t piece = (size_t)((nl ? nl : end) - p);
        if (p == end) abort(); /* an event the model does not have */
        if (nl != NULL && (piece == 0 || (piece == 1 && *p == '\r'))) {
          p = nl + 1; /* blank: skipped */
          continue;
        }
        if (piece > max_line) { /* reported once, maybe before its '\n' arrived */
          if (kind != CLAUDE_LINE_OVERFLOW || len <= max_line) abort();
          p = nl ? nl + 1 : end;
          break;
        }
        if (kind == CLAUDE_LINE_OVERFLOW) abort();
        if (nl != NULL) {
          if (p[piece - 1] == '\r') piece--;
          if (eof) abort(); /* at EOF only the last piece, without '\n', comes */
        } else if (!eof || piece == 0) {
          abort();
        }
        if (len != piece || memcmp(line, p, piece) != 0) abort();
        p = nl ? nl + 1 : end;
        break;
      }
      if (eof) break;
    }
    if (eof) break;
  }
  /* nothing the model still has was missed: only blank lines, an overlong
   * tail (reported when it passed the ceiling), or nothing */
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t piece = (size_t)((nl ? nl : end) - p);
    if (nl != NULL && piece > 0 && p[piece - 1] == '\r') piece--;
    if (nl == NULL && piece > max_line) break;
    if (piece != 0) abort();
    p = nl ? nl + 1 : end;
  }
  claude_lines_free(&lb);
  return 0;
}
