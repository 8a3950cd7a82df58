/*
 * sse_fuzz.c -- libFuzzer target for the SSE parser (src/http/sse.c).
 *
 * The first two bytes choose a limit for one event and a seed for where the
 * rest is cut into chunks. The rest is parsed twice, whole and in chunks;
 * both parses must give the same events, overflows and final state, so a
 * stream split anywhere (inside a CRLF, a BOM, a field name) parses alike.
 *
 *   cmake -S . -B build-fuzz -DCLAUDELUA_FUZZ=ON -DCMAKE_C_COMPILER=clang
 *   cmake --build build-fuzz --target fuzz_sse && bash tools/fuzz.sh sse
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/sse.h"

/* Every event, serialized: what the two parses are compared by. */
static int record(void *ud, const claude_sse_event *ev) {
  claude_buf *out = (claude_buf *)ud;
  char tag = ev->overflow ? 'O' : 'E';
  if (claude_buf_append(out, &tag, 1) != 0 ||
      claude_buf_append(out, &ev->type_len, sizeof ev->type_len) != 0 ||
      claude_buf_append(out, ev->type, ev->type_len) != 0 ||
      claude_buf_append(out, &ev->data_len, sizeof ev->data_len) != 0 ||
      claude_buf_append(out, ev->data, ev->data_len) != 0 ||
      claude_buf_append(out, &ev->id_len, sizeof ev->id_len) != 0 ||
      claude_buf_append(out, ev->id, ev->id_len) != 0 ||
      claude_buf_append(out, &ev->retry, sizeof ev->retry) != 0)
    abort();
  if (!ev->overflow && (ev->type_len == 0 ||
                        (ev->id_len > 0 && memchr(ev->id, 0, ev->id_len) != NULL)))
    abort();
  return 0;
}

static void finish(claude_sse *p, claude_buf *out) {
  claude_buf_append(out, "|", 1);
  claude_buf_append(out, p->id.p, p->id.len);
  claude_buf_append(out, &p->retry, sizeof p->retry);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  claude_sse whole, split;
  claude_buf a = {0}, b = {0};
  size_t max, pos;
  unsigned seed;
  if (size < 2) return 0;
  max = data[0] < 8 ? 0 : (size_t)data[0]; /* small limits, or none */
  seed = data[1];
  data += 2;
  size -= 2;

  claude_sse_init(&whole, max);
  if (claude_sse_feed(&whole, (const char *)data, size, record, &a) != 0) abort();
  finish(&whole, &a);

  claude_sse_init(&split, max);
  for (pos = 0; pos < size;) {
    size_t n;
    seed = seed * 1103515245u + 12345u;
    n = 1 + (seed >> 16) % 7; /* chunks of 1 to 7 bytes */
    if (n > size - pos) n = size - pos;
    if (claude_sse_feed(&split, (const char *)data + pos, n, record, &b) != 0) abort();
    pos += n;
  }
  finish(&split, &b);

  if (a.len != b.len || (a.len > 0 && memcmp(a.p, b.p, a.len) != 0)) abort();
  claude_sse_free(&whole);
  claude_sse_free(&split);
  claude_buf_free(&a);
  claude_buf_free(&b);
  return 0;
}
