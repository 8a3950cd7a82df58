/*
 * sse.h -- a Server-Sent Events parser (private; plain C, no Lua, no libuv).
 *
 * Follows the event stream interpretation of the WHATWG HTML standard
 * (section "Server-sent events"): lines end in CRLF, LF or CR; a leading
 * BOM is skipped; `:` starts a comment; `data`, `event`, `id` and `retry`
 * fields; an event is dispatched at a blank line when it has data. Input may
 * be split anywhere, also between the CR and LF of one line end.
 */
#ifndef CLAUDE_SSE_H
#define CLAUDE_SSE_H

#include <stddef.h>

/* A growing byte buffer; len bytes of p are used. */
typedef struct claude_buf {
  char *p;
  size_t len, cap;
} claude_buf;

/* Makes room for `more` bytes after len; 0 on success, -1 out of memory. */
int claude_buf_reserve(claude_buf *b, size_t more);
int claude_buf_append(claude_buf *b, const void *data, size_t len);
void claude_buf_free(claude_buf *b);

/* One event, valid during the emit callback only. */
typedef struct claude_sse_event {
  const char *type;    /* "message" unless an `event` field said otherwise */
  size_t type_len;
  const char *data;    /* the data lines joined with "\n" */
  size_t data_len;
  const char *id;      /* the stream's last event ID (id_len 0: none) */
  size_t id_len;
  long long retry;     /* the reconnection time in ms, -1 while none was given */
  int overflow;        /* set: an event over max_event was dropped (nothing else set) */
} claude_sse_event;

/* Returns nonzero to stop the parse at once (claude_sse_feed returns 1). */
typedef int (*claude_sse_emit)(void *ud, const claude_sse_event *ev);

typedef struct claude_sse {
  claude_buf line;       /* a line that is not complete yet */
  claude_buf data;       /* the data buffer of the event being read */
  claude_buf type;       /* its event type buffer */
  claude_buf id;         /* the last event ID buffer (kept across events) */
  long long retry;       /* -1 until a valid retry field */
  size_t max_event;      /* ceiling for line + data + type of one event (0: none) */
  int bom_len;           /* bytes of a leading BOM seen so far */
  int started;           /* past the point where a BOM could be */
  int skip_lf;           /* the last byte seen was a CR: a LF right after it ends nothing */
  int discarding;        /* dropping the rest of an oversized event */
  int failed;            /* out of memory: the parser is unusable */
} claude_sse;

/* max_event 0 means no ceiling. */
void claude_sse_init(claude_sse *p, size_t max_event);
void claude_sse_free(claude_sse *p);

/* Parses `len` bytes, calling `emit` for every event completed. An event
 * whose size goes past max_event is reported once (ev->overflow) and the
 * rest of it, up to its blank line, is skipped. Returns 0 when every byte
 * was taken, 1 when emit asked to stop, -1 when memory ran out. */
int claude_sse_feed(claude_sse *p, const char *buf, size_t len, claude_sse_emit emit, void *ud);

/* sse_lua.c, the parser for Lua (declared without Lua's headers: the parser
 * itself builds without them, as fuzz_sse does). Pushes one event as a table;
 * adds core.sse_parser to the module table on top of the stack. */
struct lua_State;
void claude_sse_push(struct lua_State *L, const claude_sse_event *ev);
void claude_open_sse(struct lua_State *L);

#endif
