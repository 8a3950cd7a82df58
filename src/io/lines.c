/*
 * lines.c -- line framing over a growing buffer (no JSON here: the JSON
 * mode of a stream decodes the lines this hands out).
 *
 * Reads land directly in the free tail of the buffer, so a line split over
 * many reads is never copied piecewise; only the bytes of each read are
 * searched for '\n'. A line has no fixed limit: the ceiling (max_line) is an
 * option, and a line over it is reported once and skipped up to its newline,
 * so the lines after it are still delivered. Lines are taken one at a time
 * (claude_lines_next), so a consumer can hand a whole read's lines to Lua in
 * one protected call and go on after an error.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "io/io.h"

#define MIN_READ ((size_t)64 * 1024)
#define SHRINK_ABOVE ((size_t)1024 * 1024)

void claude_lines_init(claude_lines *lb, size_t max_line) {
  memset(lb, 0, sizeof(*lb));
  lb->max_line = max_line ? max_line : CLAUDE_DEFAULT_MAX_LINE;
}

void claude_lines_free(claude_lines *lb) {
  free(lb->data);
  lb->data = NULL;
  lb->len = lb->cap = lb->scanned = lb->start = 0;
}

static void compact(claude_lines *lb);

/* Gives the free tail of the buffer for the next read, growing it by
 * doubling so that a long line costs O(n) copies in all. */
void claude_lines_space(claude_lines *lb, size_t want, char **buf, size_t *len) {
  size_t need;
  if (lb->start > 0) compact(lb); /* lines left behind by a consumer that stopped */
  need = lb->len + (want > MIN_READ ? want : MIN_READ);
  if (!claude_grow(&lb->data, &lb->cap, need, MIN_READ)) {
    *buf = NULL;
    *len = 0;
    return;
  }
  *buf = lb->data + lb->len;
  *len = lb->cap - lb->len;
}

/* Drops the bytes already handed out from the front; gives memory back after
 * a big line. */
static void compact(claude_lines *lb) {
  size_t consumed = lb->start;
  if (consumed > 0) {
    lb->len -= consumed;
    if (lb->len > 0) memmove(lb->data, lb->data + consumed, lb->len);
    lb->scanned = lb->scanned > consumed ? lb->scanned - consumed : 0;
    lb->start = 0;
  }
  if (lb->cap > SHRINK_ABOVE && lb->len < lb->cap / 8) {
    size_t cap = lb->len + MIN_READ;
    char *data = (char *)realloc(lb->data, cap);
    if (data != NULL) {
      lb->data = data;
      lb->cap = cap;
    }
  }
}

void claude_lines_feed(claude_lines *lb, size_t nread) { lb->len += nread; }

/* The cursor passes a line before the line is handed out, so a consumer that
 * raises in the middle of a batch loses nothing and sees nothing twice; the
 * line's bytes stay put until the next call. */
int claude_lines_next(claude_lines *lb, const char **line, size_t *len) {
  for (;;) {
    size_t pos = lb->scanned > lb->start ? lb->scanned : lb->start, begin, end, n;
    char *nl = pos < lb->len ? (char *)memchr(lb->data + pos, '\n', lb->len - pos) : NULL;
    if (nl == NULL) {
      lb->scanned = lb->len;
      if (!lb->discarding && lb->len - lb->start > lb->max_line) {
        /* a partial line past the ceiling: report it now, drop what is held */
        *len = lb->len - lb->start;
        lb->discarding = 1;
        lb->start = lb->len;
        return CLAUDE_LINE_OVERFLOW;
      }
      if (lb->discarding) lb->start = lb->len;
      compact(lb);
      return CLAUDE_LINE_NONE;
    }
    end = (size_t)(nl - lb->data);
    begin = lb->start;
    lb->start = lb->scanned = end + 1;
    if (lb->discarding) { /* the end of a line already reported */
      lb->discarding = 0;
      continue;
    }
    if (end - begin > lb->max_line) {
      *len = end - begin;
      return CLAUDE_LINE_OVERFLOW;
    }
    n = end - begin;
    if (n > 0 && lb->data[end - 1] == '\r') n--;
    if (n == 0) continue; /* blank lines are skipped */
    *line = lb->data + begin;
    *len = n;
    return CLAUDE_LINE;
  }
}

/* At EOF: a last line without '\n' is still a line (once). */
int claude_lines_rest(claude_lines *lb, const char **line, size_t *len) {
  size_t n = lb->len - lb->start;
  if (n == 0 || lb->discarding) return 0;
  *line = lb->data + lb->start;
  *len = n;
  lb->start = lb->len;
  return 1;
}
