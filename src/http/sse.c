/*
 * sse.c -- the Server-Sent Events parser (see sse.h).
 *
 * Complete lines are parsed where they lie in the caller's buffer; only a
 * line cut by the end of a chunk is copied, so a stream read in large chunks
 * costs one pass over its bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "http/sse.h"

/* ---- buffers ------------------------------------------------------------ */

int claude_buf_reserve(claude_buf *b, size_t more) {
  if (more > SIZE_MAX - b->len) return -1;
  return claude_grow(&b->p, &b->cap, b->len + more, 64) ? 0 : -1;
}

int claude_buf_append(claude_buf *b, const void *data, size_t len) {
  if (len == 0) return 0;
  if (claude_buf_reserve(b, len) != 0) return -1;
  memcpy(b->p + b->len, data, len);
  b->len += len;
  return 0;
}

void claude_buf_free(claude_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ---- the parser --------------------------------------------------------- */

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

#define RETRY_MAX 1000000000000LL /* ~31 years in ms: larger values saturate */

void claude_sse_init(claude_sse *p, size_t max_event) {
  memset(p, 0, sizeof(*p));
  p->retry = -1;
  p->max_event = max_event;
}

void claude_sse_free(claude_sse *p) {
  claude_buf_free(&p->line);
  claude_buf_free(&p->data);
  claude_buf_free(&p->type);
  claude_buf_free(&p->id);
}

/* Would an event holding a line of `line_len` bytes be over the ceiling? */
static int over(const claude_sse *p, size_t line_len) {
  return p->max_event > 0 && line_len + p->data.len + p->type.len > p->max_event;
}

/* Drops the event being read and reports it; the rest of it is skipped.
 * `partial`: the line that overflowed has not ended yet. */
static int overflow(claude_sse *p, int partial, claude_sse_emit emit, void *ud) {
  claude_sse_event ev;
  p->line.len = p->data.len = p->type.len = 0;
  p->discarding = partial ? 2 : 1; /* 2: inside a line, whose end is no blank line */
  memset(&ev, 0, sizeof ev);
  ev.overflow = 1;
  ev.retry = p->retry;
  return emit(ud, &ev) ? 1 : 0;
}

static int dispatch(claude_sse *p, claude_sse_emit emit, void *ud) {
  claude_sse_event ev;
  int stop;
  if (p->data.len == 0) { /* no data: nothing to dispatch */
    p->type.len = 0;
    return 0;
  }
  ev.type = p->type.len ? p->type.p : "message";
  ev.type_len = p->type.len ? p->type.len : 7;
  ev.data = p->data.p;
  ev.data_len = p->data.len - 1; /* without the last data line's "\n" */
  ev.id = p->id.p;
  ev.id_len = p->id.len;
  ev.retry = p->retry;
  ev.overflow = 0;
  stop = emit(ud, &ev);
  p->data.len = p->type.len = 0;
  return stop ? 1 : 0;
}

static int field_is(const char *f, size_t n, const char *name, size_t len) {
  return n == len && memcmp(f, name, len) == 0;
}

/* One complete line, without its line end. */
static int process_line(claude_sse *p, const char *s, size_t n, claude_sse_emit emit,
                        void *ud) {
  const char *colon, *v;
  size_t fn, vn;
  if (n == 0) return dispatch(p, emit, ud);
  if (s[0] == ':') return 0; /* comment */
  colon = (const char *)memchr(s, ':', n);
  if (colon != NULL) {
    fn = (size_t)(colon - s);
    v = colon + 1;
    vn = n - fn - 1;
    if (vn > 0 && *v == ' ') {
      v++;
      vn--;
    }
  } else {
    fn = n;
    v = s + n;
    vn = 0;
  }
  if (field_is(s, fn, "data", 4)) {
    if (claude_buf_reserve(&p->data, vn + 1) != 0) return -1;
    memcpy(p->data.p + p->data.len, v, vn);
    p->data.len += vn;
    p->data.p[p->data.len++] = '\n';
  } else if (field_is(s, fn, "event", 5)) {
    p->type.len = 0;
    if (claude_buf_append(&p->type, v, vn) != 0) return -1;
  } else if (field_is(s, fn, "id", 2)) {
    if (memchr(v, '\0', vn) == NULL) { /* an id with NUL is ignored */
      p->id.len = 0;
      if (claude_buf_append(&p->id, v, vn) != 0) return -1;
    }
  } else if (field_is(s, fn, "retry", 5)) {
    long long ms = 0;
    size_t i;
    for (i = 0; i < vn && v[i] >= '0' && v[i] <= '9'; i++)
      ms = ms >= RETRY_MAX ? RETRY_MAX : ms * 10 + (v[i] - '0');
    if (vn > 0 && i == vn) p->retry = ms > RETRY_MAX ? RETRY_MAX : ms;
  } /* other fields are ignored */
  return 0;
}

/* A line end has been found: the line is the held part plus s[0..n). */
static int end_line(claude_sse *p, const char *s, size_t n, claude_sse_emit emit, void *ud) {
  int r;
  if (p->discarding) {
    /* a blank line ends the dropped event */
    if (n == 0 && p->discarding == 1) p->discarding = 0;
    else p->discarding = 1;
    return 0;
  }
  if (over(p, p->line.len + n)) return overflow(p, 0, emit, ud);
  if (p->line.len == 0) return process_line(p, s, n, emit, ud);
  if (claude_buf_append(&p->line, s, n) != 0) return -1;
  r = process_line(p, p->line.p, p->line.len, emit, ud);
  p->line.len = 0;
  return r;
}

static int feed_bytes(claude_sse *p, const char *s, size_t len, claude_sse_emit emit, void *ud) {
  const char *end = s + len, *cr = NULL, *lf = NULL;
  if (p->skip_lf && s < end) {
    p->skip_lf = 0;
    if (*s == '\n') s++;
  }
  while (s < end) {
    const char *eol;
    int r;
    /* the next CR and LF, each searched for once per chunk position */
    if (cr < s) {
      cr = (const char *)memchr(s, '\r', (size_t)(end - s));
      if (cr == NULL) cr = end;
    }
    if (lf < s) {
      lf = (const char *)memchr(s, '\n', (size_t)(end - s));
      if (lf == NULL) lf = end;
    }
    eol = cr < lf ? cr : lf;
    if (eol == end) { /* the line goes on in the next chunk */
      size_t n = (size_t)(end - s);
      if (p->discarding) {
        p->discarding = 2;
      } else if (over(p, p->line.len + n)) {
        return overflow(p, 1, emit, ud);
      } else if (claude_buf_append(&p->line, s, n) != 0) {
        return -1;
      }
      return 0;
    }
    r = end_line(p, s, (size_t)(eol - s), emit, ud);
    if (r != 0) return r;
    s = eol + 1;
    if (*eol == '\r') {
      if (s == end) p->skip_lf = 1; /* a LF may start the next chunk */
      else if (*s == '\n') s++;
    }
  }
  return 0;
}

int claude_sse_feed(claude_sse *p, const char *buf, size_t len, claude_sse_emit emit, void *ud) {
  int r;
  if (p->failed) return -1;
  if (!p->started) {
    /* a UTF-8 BOM at the very start is skipped, even split across chunks */
    while (len > 0 && p->bom_len < 3) {
      if ((unsigned char)*buf != BOM[p->bom_len]) {
        int held = p->bom_len;
        p->started = 1;
        r = feed_bytes(p, (const char *)BOM, (size_t)held, emit, ud);
        if (r != 0) {
          if (r < 0) p->failed = 1;
          return r;
        }
        break;
      }
      p->bom_len++;
      buf++;
      len--;
    }
    if (p->bom_len == 3) p->started = 1;
    if (!p->started) return 0;
  }
  r = feed_bytes(p, buf, len, emit, ud);
  if (r < 0) p->failed = 1;
  return r;
}
