/*
 * jsonl.c -- newline framing over a growing buffer.
 *
 * Reads land directly in the free tail of the buffer, so a line split over
 * many reads is never copied piecewise; only the bytes of each read are
 * searched for '\n'. A line has no fixed limit: the ceiling (max_line) is an
 * option, and a line over it is reported once and skipped up to its newline,
 * so the lines after it are still delivered.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MIN_READ ((size_t)64 * 1024)
#define SHRINK_ABOVE ((size_t)1024 * 1024)

void claude_lines_init(claude_lines *lb, size_t max_line) {
  memset(lb, 0, sizeof(*lb));
  lb->max_line = max_line ? max_line : CLAUDE_DEFAULT_MAX_LINE;
}

void claude_lines_free(claude_lines *lb) {
  free(lb->data);
  lb->data = NULL;
  lb->len = lb->cap = lb->scanned = 0;
}

/* Gives the free tail of the buffer for the next read, growing it by
 * doubling so that a long line costs O(n) copies in all. */
void claude_lines_space(claude_lines *lb, size_t want, char **buf, size_t *len) {
  size_t need = lb->len + (want > MIN_READ ? want : MIN_READ);
  if (need > lb->cap) {
    size_t cap = lb->cap ? lb->cap : MIN_READ;
    char *data;
    while (cap < need) cap *= 2;
    data = (char *)realloc(lb->data, cap);
    if (data == NULL) {
      *buf = NULL;
      *len = 0;
      return;
    }
    lb->data = data;
    lb->cap = cap;
  }
  *buf = lb->data + lb->len;
  *len = lb->cap - lb->len;
}

/* Drops consumed bytes from the front; gives memory back after a big line. */
static void compact(claude_lines *lb, size_t consumed) {
  if (consumed > 0) {
    lb->len -= consumed;
    if (lb->len > 0) memmove(lb->data, lb->data + consumed, lb->len);
    lb->scanned = lb->scanned > consumed ? lb->scanned - consumed : 0;
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

/* Accounts for `nread` new bytes at the tail and delivers every complete
 * line. Returns non-zero when on_line asked to stop. */
int claude_lines_push(claude_lines *lb, size_t nread, claude_line_fn on_line,
                      claude_overflow_fn on_overflow, void *ud) {
  size_t start = 0, pos;
  int stop = 0;
  lb->len += nread;
  pos = lb->scanned;
  while (pos < lb->len) {
    char *nl = (char *)memchr(lb->data + pos, '\n', lb->len - pos);
    size_t end;
    if (nl == NULL) break;
    end = (size_t)(nl - lb->data);
    if (lb->discarding) {
      lb->discarding = 0;
    } else if (end - start > lb->max_line) {
      on_overflow(ud, end - start);
    } else {
      size_t n = end - start;
      if (n > 0 && lb->data[end - 1] == '\r') n--;
      if (n > 0 && on_line(ud, lb->data + start, n)) {
        stop = 1;
        start = end + 1;
        break;
      }
    }
    start = end + 1;
    pos = start;
  }
  if (!stop) pos = lb->len;
  lb->scanned = pos;
  /* A partial line past the ceiling: report now, drop what is held. */
  if (!stop && !lb->discarding && lb->len - start > lb->max_line) {
    on_overflow(ud, lb->len - start);
    lb->discarding = 1;
    start = lb->len;
  } else if (!stop && lb->discarding) {
    start = lb->len;
  }
  compact(lb, start);
  return stop;
}

/* At EOF: a last line without '\n' is still a line. */
int claude_lines_finish(claude_lines *lb, claude_line_fn on_line, void *ud) {
  int stop = 0;
  if (lb->len > 0 && !lb->discarding) stop = on_line(ud, lb->data, lb->len);
  lb->len = lb->scanned = 0;
  lb->discarding = 0;
  claude_lines_free(lb);
  return stop;
}
