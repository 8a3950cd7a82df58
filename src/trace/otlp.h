/*
 * trace/otlp.h -- what the two OTLP encoders (otlp_json.c, otlp_protobuf.c) share with their
 * entry (otlp.c, core.otlp_encode): the growing output buffer, and a span table's fields,
 * read raw by names interned once (the entry's upvalues 2...; upvalue 1 is the buffer).
 * Nothing here runs Lua code. Private to claude.core.
 */
#ifndef CLAUDE_TRACE_OTLP_H
#define CLAUDE_TRACE_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "grow.h"

typedef struct obuf {
  char *p;
  size_t len, cap;
} obuf;

typedef struct writer {
  lua_State *L;
  obuf *b;
  int oom; /* set once memory ran out: every later write is skipped */
} writer;

/* lists nested in an attribute's value, at most (deeper ones are written as "table") */
#define MAX_NESTING 4

/* Grows the buffer for n more bytes; 0 (and o->oom set) when out of memory. */
static inline int claude_otlp_grow(writer *o, size_t n) {
  if (o->oom) return 0;
  if (claude_grow(&o->b->p, &o->b->cap, o->b->len + n, 4096)) return 1;
  o->oom = 1;
  return 0;
}

/* room for n more bytes (the usual case: there is, one comparison) */
static inline int room(writer *o, size_t n) {
  return o->b->len + n <= o->b->cap || claude_otlp_grow(o, n);
}

static inline void raw(writer *o, const void *s, size_t n) {
  if (!room(o, n)) return;
  memcpy(o->b->p + o->b->len, s, n);
  o->b->len += n;
}
#define LIT(o, s) raw(o, s, sizeof(s) - 1)

/* A span's fields (otlp.c names them) */
enum { NAME, KIND, TRACE_ID, SPAN_ID, PARENT_ID, TRACESTATE, SAMPLED, REMOTE, START_TIME,
       END_TIME, STATUS, STATUS_MESSAGE, ATTRIBUTES, EVENTS, LINKS, TIME, NFIELDS };

/* pushes field f of the table at t (an absolute index); returns its type */
static inline int span_field(lua_State *L, int t, int f) {
  lua_pushvalue(L, lua_upvalueindex(2 + f));
  return lua_rawget(L, t);
}

/* a string field (NULL when it is not one: its bytes stay alive in the table) */
static inline const char *text_field(lua_State *L, int t, int f, size_t *n) {
  const char *s = NULL;
  if (span_field(L, t, f) == LUA_TSTRING) s = lua_tolstring(L, -1, n);
  lua_pop(L, 1);
  return s;
}

/* an integer field (a float's integer part; 0 when it is no number) */
static inline lua_Integer int_field(lua_State *L, int t, int f) {
  lua_Integer i = 0;
  int isint;
  if (span_field(L, t, f) == LUA_TNUMBER) {
    i = lua_tointegerx(L, -1, &isint);
    if (!isint) i = (lua_Integer)lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return i;
}

static inline int bool_field(lua_State *L, int t, int f) {
  int v;
  span_field(L, t, f);
  v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Calls one(o, k, index) for the k-th table (from 0) of the list in field f of the span at t
 * (the items that are no table skipped; nothing when the field is no table); returns how
 * many it called it for. */
typedef void (*otlp_item_fn)(writer *o, int k, int item);
static inline int otlp_each(writer *o, int t, int f, otlp_item_fn one) {
  lua_State *L = o->L;
  lua_Integer i, n;
  int k = 0;
  if (span_field(L, t, f) == LUA_TTABLE) {
    n = (lua_Integer)lua_rawlen(L, -1);
    for (i = 1; i <= n; i++) {
      if (lua_rawgeti(L, -1, i) == LUA_TTABLE) one(o, k++, lua_gettop(L));
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  return k;
}

/* SpanKind of a kind's name (1 internal .. 5 consumer; none: 1; another: 0) */
static inline int claude_otlp_kind(const char *k, size_t n) {
  if (k == NULL || n < 6) return k == NULL ? 1 : 0;
  switch (k[0]) {
    case 'i': return n == 8 && memcmp(k, "internal", 8) == 0 ? 1 : 0;
    case 's': return n == 6 && memcmp(k, "server", 6) == 0 ? 2 : 0;
    case 'c':
      if (n == 6 && memcmp(k, "client", 6) == 0) return 3;
      return n == 8 && memcmp(k, "consumer", 8) == 0 ? 5 : 0;
    case 'p': return n == 8 && memcmp(k, "producer", 8) == 0 ? 4 : 0;
    default: return 0;
  }
}

/* W3C flags: sampled, and "whether the parent is remote" known (OTLP's bits 8 and 9) */
static inline uint32_t claude_otlp_flags(lua_State *L, int t) {
  return 0x100u | (bool_field(L, t, SAMPLED) ? 1u : 0u) |
         (bool_field(L, t, REMOTE) ? 0x200u : 0u);
}

/* The ExportTraceServiceRequest of the spans in the array at stack index 1 under the resource
 * attributes at index 2, appended to o's buffer. */
void claude_otlp_json(writer *o, const char *version, size_t vn);
void claude_otlp_protobuf(writer *o, const char *version, size_t vn);

#endif
