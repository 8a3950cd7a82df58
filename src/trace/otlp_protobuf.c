/*
 * otlp_protobuf.c -- the protobuf ExportTraceServiceRequest of a batch of spans (otlp.h), by
 * opentelemetry/proto/collector/trace/v1 and the messages it holds (trace, common,
 * resource): ids as bytes, times as fixed64. Each nested message is written after a
 * one-byte length, moved up when its length needs more bytes.
 */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>

#include "trace/otlp.h"

enum { VARINT = 0, FIXED64 = 1, LEN = 2, FIXED32 = 5 };

static inline void varint(writer *o, uint64_t v) {
  char *p;
  if (!room(o, 10)) return;
  p = o->b->p + o->b->len;
  while (v >= 0x80) {
    *p++ = (char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (char)v;
  o->b->len = (size_t)(p - o->b->p);
}

static inline void tag(writer *o, unsigned field, unsigned wire) { varint(o, (uint64_t)field << 3 | wire); }

static void p_bytes(writer *o, unsigned field, const char *s, size_t n) {
  tag(o, field, LEN);
  varint(o, n);
  raw(o, s, n);
}

static void p_fixed(writer *o, unsigned field, uint64_t v, int bytes) {
  char t[8];
  int i;
  tag(o, field, bytes == 8 ? FIXED64 : FIXED32);
  for (i = 0; i < bytes; i++) t[i] = (char)(v >> (8 * i));
  raw(o, t, (size_t)bytes);
}

/* A nested message: its tag and a one-byte length now, the length set by `close_msg`. */
static size_t open_msg(writer *o, unsigned field) {
  tag(o, field, LEN);
  raw(o, "", 1);
  return o->oom ? 0 : o->b->len - 1;
}

static void close_msg(writer *o, size_t at) {
  char t[10];
  size_t n, k = 0;
  uint64_t v;
  if (o->oom) return;
  n = o->b->len - at - 1;
  if (n < 128) {
    o->b->p[at] = (char)n;
    return;
  }
  v = n;
  do {
    unsigned char c = (unsigned char)(v & 0x7f);
    v >>= 7;
    t[k++] = (char)(v ? c | 0x80 : c);
  } while (v);
  if (!room(o, k - 1)) return;
  memmove(o->b->p + at + k, o->b->p + at + 1, n);
  memcpy(o->b->p + at, t, k);
  o->b->len += k - 1;
}

/* a hex digit's value, or 16 for any other byte */
static const unsigned char HEX_VALUE[256] = {
#define X16 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16
  X16, X16, X16,
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 16, 16, 16, 16, 16,
  16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16, X16,
  16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16, X16,
  X16, X16, X16, X16, X16, X16, X16, X16
#undef X16
};

/* an id (hex) as its bytes; nothing when it is not `bytes` bytes of hex */
static void p_id(writer *o, unsigned number, lua_State *L, int t, int k, size_t bytes) {
  char bin[16];
  size_t n, i;
  const char *s = text_field(L, t, k, &n);
  if (s == NULL || n != 2 * bytes) return;
  for (i = 0; i < bytes; i++) {
    unsigned hi = HEX_VALUE[(unsigned char)s[2 * i]], lo = HEX_VALUE[(unsigned char)s[2 * i + 1]];
    if ((hi | lo) > 15) return;
    bin[i] = (char)(hi << 4 | lo);
  }
  p_bytes(o, number, bin, bytes);
}

static void p_text(writer *o, unsigned number, lua_State *L, int t, int k) {
  size_t n;
  const char *s = text_field(L, t, k, &n);
  if (s != NULL && n > 0) p_bytes(o, number, s, n);
}

/* AnyValue (common.proto): string 1, bool 2, int 3, double 4, array 5 (values 1) */
static void p_any(writer *o, unsigned field, int idx, int depth) {
  lua_State *L = o->L;
  size_t at = open_msg(o, field), n;
  const char *s;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
      s = lua_tolstring(L, idx, &n);
      p_bytes(o, 1, s, n);
      break;
    case LUA_TBOOLEAN:
      tag(o, 2, VARINT);
      varint(o, lua_toboolean(L, idx) ? 1 : 0);
      break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        tag(o, 3, VARINT);
        varint(o, (uint64_t)lua_tointeger(L, idx));
      } else {
        double d = lua_tonumber(L, idx);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        p_fixed(o, 4, bits, 8);
      }
      break;
    case LUA_TTABLE:
      if (depth < MAX_NESTING) {
        lua_Integer i, len = (lua_Integer)lua_rawlen(L, idx);
        size_t array = open_msg(o, 5);
        luaL_checkstack(L, 2, "otlp_encode");
        for (i = 1; i <= len; i++) {
          lua_rawgeti(L, idx, i);
          p_any(o, 1, lua_gettop(L), depth + 1);
          lua_pop(L, 1);
        }
        close_msg(o, array);
        break;
      }
      /* fall through */
    default:
      s = luaL_typename(L, idx);
      p_bytes(o, 1, s, strlen(s));
  }
  close_msg(o, at);
}

/* KeyValue (key 1, value 2), repeated as `field`, of the string keys of the table at t */
static void p_attributes(writer *o, unsigned field, int t) {
  lua_State *L = o->L;
  if (lua_type(L, t) != LUA_TTABLE) return;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      size_t n, at = open_msg(o, field);
      const char *k = lua_tolstring(L, -2, &n);
      p_bytes(o, 1, k, n);
      p_any(o, 2, lua_gettop(L), 0);
      close_msg(o, at);
    }
    lua_pop(L, 1);
  }
}

/* Span.events (11): Event { time 1, name 2, attributes 3 } */
static void p_event(writer *o, int k, int e) {
  lua_State *L = o->L;
  size_t at = open_msg(o, 11);
  (void)k;
  p_fixed(o, 1, (uint64_t)int_field(L, e, TIME), 8);
  p_text(o, 2, L, e, NAME);
  span_field(L, e, ATTRIBUTES);
  p_attributes(o, 3, lua_gettop(L));
  lua_pop(L, 1);
  close_msg(o, at);
}

/* Span.links (13): Link { trace_id 1, span_id 2, trace_state 3, attributes 4 } */
static void p_link(writer *o, int k, int l) {
  lua_State *L = o->L;
  size_t at = open_msg(o, 13);
  (void)k;
  p_id(o, 1, L, l, TRACE_ID, 16);
  p_id(o, 2, L, l, SPAN_ID, 8);
  p_text(o, 3, L, l, TRACESTATE);
  span_field(L, l, ATTRIBUTES);
  p_attributes(o, 4, lua_gettop(L));
  lua_pop(L, 1);
  close_msg(o, at);
}

/* ScopeSpans.spans (2): Span (trace.proto) */
static void p_span(writer *o, int t) {
  lua_State *L = o->L;
  size_t at = open_msg(o, 2), n;
  const char *s;
  lua_Integer start = int_field(L, t, START_TIME), end = int_field(L, t, END_TIME);
  p_id(o, 1, L, t, TRACE_ID, 16);
  p_id(o, 2, L, t, SPAN_ID, 8);
  p_text(o, 3, L, t, TRACESTATE);
  p_id(o, 4, L, t, PARENT_ID, 8);
  p_text(o, 5, L, t, NAME);
  tag(o, 6, VARINT);
  s = text_field(L, t, KIND, &n);
  varint(o, (uint64_t)claude_otlp_kind(s, s ? n : 0));
  p_fixed(o, 7, (uint64_t)start, 8);
  p_fixed(o, 8, (uint64_t)(end < start ? start : end), 8);
  span_field(L, t, ATTRIBUTES);
  p_attributes(o, 9, lua_gettop(L));
  lua_pop(L, 1);
  otlp_each(o, t, EVENTS, p_event);
  otlp_each(o, t, LINKS, p_link);
  s = text_field(L, t, STATUS, &n);
  if (s != NULL && (strcmp(s, "error") == 0 || strcmp(s, "ok") == 0)) {
    size_t status = open_msg(o, 15); /* Status { message 2, code 3 } */
    int error = s[0] == 'e';
    if (error) p_text(o, 2, L, t, STATUS_MESSAGE);
    tag(o, 3, VARINT);
    varint(o, error ? 2 : 1);
    close_msg(o, status);
  }
  p_fixed(o, 16, claude_otlp_flags(L, t), 4);
  close_msg(o, at);
}

/* ExportTraceServiceRequest { ResourceSpans 1 { Resource 1 { attributes 1 }, ScopeSpans 2 {
 * InstrumentationScope 1 { name 1, version 2 }, spans 2 } } } */
void claude_otlp_protobuf(writer *o, const char *version, size_t vn) {
  lua_State *L = o->L;
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, 1);
  size_t resource_spans = open_msg(o, 1), resource, scope_spans, scope;
  resource = open_msg(o, 1);
  p_attributes(o, 1, 2);
  close_msg(o, resource);
  scope_spans = open_msg(o, 2);
  scope = open_msg(o, 1);
  p_bytes(o, 1, "claudelua", 9);
  if (vn > 0) p_bytes(o, 2, version, vn);
  close_msg(o, scope);
  for (i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, i) == LUA_TTABLE) p_span(o, lua_gettop(L));
    lua_pop(L, 1);
  }
  close_msg(o, scope_spans);
  close_msg(o, resource_spans);
}
