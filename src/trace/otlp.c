/*
 * otlp.c -- core.otlp_encode(spans, resource, version[, protobuf]) -> the body of one
 * OTLP/HTTP export: the ExportTraceServiceRequest of a batch of finished spans (claude.trace's
 * tables) under one resource and the `claudelua` scope, as OTLP/JSON or as protobuf, written
 * straight into one buffer (kept between exports: they come one at a time, from the loop).
 *
 * A span's fields: name, kind ("internal", "server", "client", "producer", "consumer"),
 * trace_id, span_id, parent_id (hex), tracestate, sampled, remote (its parent came from
 * another process), start_time and end_time (integers, ns), status ("error", "ok" or nil),
 * status_message, attributes (key -> a string, boolean, number, or a list of them), events
 * ({ name, time, attributes }) and links ({ trace_id, span_id, tracestate, attributes }).
 * Nothing here runs Lua code: a value of another type is written as its type's name.
 *
 * Protobuf (opentelemetry/proto/collector/trace/v1 and the messages it holds): each nested
 * message is written after a one-byte length, moved up when its length needs more bytes; the
 * JSON strings go through the JSON encoder's own writer (json.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "grow.h"
#include "json/json.h"
#include "trace/trace.h"

/* past this, an export's buffer is freed after it rather than kept */
#define KEEP_BUFFER ((size_t)1 << 20)
/* lists nested in an attribute's value, at most (deeper ones are written as "table") */
#define MAX_NESTING 4

typedef struct obuf {
  char *p;
  size_t len, cap;
} obuf;

typedef struct writer {
  lua_State *L;
  obuf *b;
  int oom;
} writer;

static int grow(writer *o, size_t n) {
  if (o->oom) return 0;
  if (claude_grow(&o->b->p, &o->b->cap, o->b->len + n, 4096)) return 1;
  o->oom = 1;
  return 0;
}

/* room for n more bytes (the usual case: there is, one comparison) */
static inline int room(writer *o, size_t n) {
  return o->b->len + n <= o->b->cap || grow(o, n);
}

static inline void raw(writer *o, const void *s, size_t n) {
  if (!room(o, n)) return;
  memcpy(o->b->p + o->b->len, s, n);
  o->b->len += n;
}
#define LIT(o, s) raw(o, s, sizeof(s) - 1)

/* ---- the fields of a span table ------------------------------------------------------ */

/* The field names, interned once (upvalues 2...: upvalue 1 is the buffer) and read raw: a
 * span's metatable is never consulted, and its strings stay alive in it. */
static const char *const FIELDS[] = {"name", "kind", "trace_id", "span_id", "parent_id",
  "tracestate", "sampled", "remote", "start_time", "end_time", "status", "status_message",
  "attributes", "events", "links", "time"};
enum { NAME, KIND, TRACE_ID, SPAN_ID, PARENT_ID, TRACESTATE, SAMPLED, REMOTE, START_TIME,
       END_TIME, STATUS, STATUS_MESSAGE, ATTRIBUTES, EVENTS, LINKS, TIME, NFIELDS };

/* pushes field f of the table at t (an absolute index); returns its type */
static inline int field(lua_State *L, int t, int f) {
  lua_pushvalue(L, lua_upvalueindex(2 + f));
  return lua_rawget(L, t);
}

static const char *text_field(lua_State *L, int t, int f, size_t *n) {
  const char *s = NULL;
  if (field(L, t, f) == LUA_TSTRING) s = lua_tolstring(L, -1, n);
  lua_pop(L, 1);
  return s;
}

static lua_Integer int_field(lua_State *L, int t, int f) {
  lua_Integer i = 0;
  int isint;
  if (field(L, t, f) == LUA_TNUMBER) {
    i = lua_tointegerx(L, -1, &isint);
    if (!isint) i = (lua_Integer)lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return i;
}

static int bool_field(lua_State *L, int t, int f) {
  int v;
  field(L, t, f);
  v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static int kind_number(const char *k, size_t n) {
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
static uint32_t span_flags(lua_State *L, int t) {
  return 0x100u | (bool_field(L, t, SAMPLED) ? 1u : 0u) | (bool_field(L, t, REMOTE) ? 0x200u : 0u);
}

/* ---- OTLP/JSON ------------------------------------------------------------------------ */

static void jstr(writer *o, const char *s, size_t n) {
  if (o->oom) return;
  if (!claude_json_append_string(&o->b->p, &o->b->len, &o->b->cap, s, n)) o->oom = 1;
}

static void jdigits(writer *o, lua_Integer i, int quoted) {
  char tmp[24], *p = tmp + sizeof tmp;
  lua_Unsigned u = i < 0 ? (lua_Unsigned)0 - (lua_Unsigned)i : (lua_Unsigned)i;
  if (quoted) *--p = '"';
  do {
    *--p = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u != 0);
  if (i < 0) *--p = '-';
  if (quoted) *--p = '"';
  raw(o, p, (size_t)(tmp + sizeof tmp - p));
}

static void jfield_text(writer *o, const char *member, const char *s, size_t n) {
  raw(o, member, strlen(member));
  jstr(o, s, n);
}

static void j_any(writer *o, int idx, int depth) {
  lua_State *L = o->L;
  size_t n;
  const char *s;
  switch (lua_type(L, idx)) {
    case LUA_TSTRING:
      s = lua_tolstring(L, idx, &n);
      LIT(o, "{\"stringValue\":");
      jstr(o, s, n);
      LIT(o, "}");
      return;
    case LUA_TBOOLEAN:
      if (lua_toboolean(L, idx)) LIT(o, "{\"boolValue\":true}");
      else LIT(o, "{\"boolValue\":false}");
      return;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        LIT(o, "{\"intValue\":");
        jdigits(o, lua_tointeger(L, idx), 1);
        LIT(o, "}");
      } else {
        double d = lua_tonumber(L, idx);
        LIT(o, "{\"doubleValue\":");
        if (isnan(d)) LIT(o, "\"NaN\"");
        else if (isinf(d)) {
          if (d > 0) LIT(o, "\"Infinity\"");
          else LIT(o, "\"-Infinity\"");
        } else if (!o->oom && !claude_json_encode_append(L, idx, &o->b->p, &o->b->len, &o->b->cap)) {
          lua_pop(L, 1); /* (only memory can fail a finite number) */
          o->oom = 1;
        }
        LIT(o, "}");
      }
      return;
    case LUA_TTABLE:
      if (depth < MAX_NESTING) {
        lua_Integer i, len = (lua_Integer)lua_rawlen(L, idx);
        luaL_checkstack(L, 2, "otlp_encode");
        LIT(o, "{\"arrayValue\":{\"values\":[");
        for (i = 1; i <= len; i++) {
          if (i > 1) LIT(o, ",");
          lua_rawgeti(L, idx, i);
          j_any(o, lua_gettop(L), depth + 1);
          lua_pop(L, 1);
        }
        LIT(o, "]}}");
        return;
      }
      /* fall through */
    default:
      s = luaL_typename(L, idx);
      LIT(o, "{\"stringValue\":");
      jstr(o, s, strlen(s));
      LIT(o, "}");
  }
}

/* `"member":[{"key":K,"value":V},...]` of the string keys of the table at t (if a table) */
static void j_attributes(writer *o, const char *member, int t) {
  lua_State *L = o->L;
  int first = 1;
  raw(o, member, strlen(member));
  LIT(o, "[");
  if (lua_type(L, t) == LUA_TTABLE) {
    lua_pushnil(L);
    while (lua_next(L, t)) {
      if (lua_type(L, -2) == LUA_TSTRING) {
        size_t n;
        const char *k = lua_tolstring(L, -2, &n);
        if (!first) LIT(o, ",");
        first = 0;
        LIT(o, "{\"key\":");
        jstr(o, k, n);
        LIT(o, ",\"value\":");
        j_any(o, lua_gettop(L), 0);
        LIT(o, "}");
      }
      lua_pop(L, 1);
    }
  }
  LIT(o, "]");
}

static void j_id(writer *o, const char *member, lua_State *L, int t, int k) {
  size_t n;
  const char *s = text_field(L, t, k, &n);
  if (s != NULL && n > 0) jfield_text(o, member, s, n);
}

static void j_events(writer *o, int t) {
  lua_State *L = o->L;
  lua_Integer i, n;
  if (field(L, t, EVENTS) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  LIT(o, ",\"events\":[");
  for (i = 1; i <= n; i++) {
    int e;
    size_t len;
    const char *name;
    if (lua_rawgeti(L, -1, i) != LUA_TTABLE) {
      lua_pop(L, 1);
      continue;
    }
    e = lua_gettop(L);
    if (i > 1) LIT(o, ",");
    LIT(o, "{\"timeUnixNano\":");
    jdigits(o, int_field(L, e, TIME), 1);
    name = text_field(L, e, NAME, &len);
    jfield_text(o, ",\"name\":", name ? name : "", name ? len : 0);
    field(L, e, ATTRIBUTES);
    j_attributes(o, ",\"attributes\":", lua_gettop(L));
    lua_pop(L, 2);
    LIT(o, "}");
  }
  LIT(o, "]");
  lua_pop(L, 1);
}

static void j_links(writer *o, int t) {
  lua_State *L = o->L;
  lua_Integer i, n;
  if (field(L, t, LINKS) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  n = (lua_Integer)lua_rawlen(L, -1);
  LIT(o, ",\"links\":[");
  for (i = 1; i <= n; i++) {
    int l;
    if (lua_rawgeti(L, -1, i) != LUA_TTABLE) {
      lua_pop(L, 1);
      continue;
    }
    l = lua_gettop(L);
    if (i > 1) LIT(o, ",");
    {
      size_t len;
      const char *s = text_field(L, l, TRACE_ID, &len);
      LIT(o, "{\"traceId\":");
      jstr(o, s ? s : "", s ? len : 0);
    }
    j_id(o, ",\"spanId\":", L, l, SPAN_ID);
    j_id(o, ",\"traceState\":", L, l, TRACESTATE);
    field(L, l, ATTRIBUTES);
    j_attributes(o, ",\"attributes\":", lua_gettop(L));
    lua_pop(L, 2);
    LIT(o, "}");
  }
  LIT(o, "]");
  lua_pop(L, 1);
}

static void j_span(writer *o, int t) {
  lua_State *L = o->L;
  size_t n;
  const char *s;
  lua_Integer start = int_field(L, t, START_TIME), end = int_field(L, t, END_TIME);
  LIT(o, "{\"traceId\":");
  s = text_field(L, t, TRACE_ID, &n);
  jstr(o, s ? s : "", s ? n : 0);
  j_id(o, ",\"spanId\":", L, t, SPAN_ID);
  j_id(o, ",\"parentSpanId\":", L, t, PARENT_ID);
  j_id(o, ",\"traceState\":", L, t, TRACESTATE);
  LIT(o, ",\"flags\":");
  jdigits(o, (lua_Integer)span_flags(L, t), 0);
  s = text_field(L, t, NAME, &n);
  jfield_text(o, ",\"name\":", s ? s : "", s ? n : 0);
  LIT(o, ",\"kind\":");
  s = text_field(L, t, KIND, &n);
  jdigits(o, kind_number(s, s ? n : 0), 0);
  LIT(o, ",\"startTimeUnixNano\":");
  jdigits(o, start, 1);
  LIT(o, ",\"endTimeUnixNano\":");
  jdigits(o, end < start ? start : end, 1);
  field(L, t, ATTRIBUTES);
  j_attributes(o, ",\"attributes\":", lua_gettop(L));
  lua_pop(L, 1);
  j_events(o, t);
  j_links(o, t);
  s = text_field(L, t, STATUS, &n);
  if (s != NULL && strcmp(s, "error") == 0) {
    LIT(o, ",\"status\":{\"code\":2");
    s = text_field(L, t, STATUS_MESSAGE, &n);
    if (s != NULL) jfield_text(o, ",\"message\":", s, n);
    LIT(o, "}}");
  } else if (s != NULL && strcmp(s, "ok") == 0) {
    LIT(o, ",\"status\":{\"code\":1}}");
  } else {
    LIT(o, ",\"status\":{}}");
  }
}

static void j_request(writer *o, const char *version, size_t vn) {
  lua_State *L = o->L;
  lua_Integer i, n = (lua_Integer)lua_rawlen(L, 1);
  LIT(o, "{\"resourceSpans\":[{\"resource\":{");
  j_attributes(o, "\"attributes\":", 2);
  LIT(o, "},\"scopeSpans\":[{\"scope\":{\"name\":\"claudelua\",\"version\":");
  jstr(o, version, vn);
  LIT(o, "},\"spans\":[");
  for (i = 1; i <= n; i++) {
    if (lua_rawgeti(L, 1, i) == LUA_TTABLE) {
      if (i > 1) LIT(o, ",");
      j_span(o, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  LIT(o, "]}]}]}");
}

/* ---- protobuf ------------------------------------------------------------------------- */

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
static void p_events(writer *o, int t) {
  lua_State *L = o->L;
  lua_Integer i, n;
  if (field(L, t, EVENTS) == LUA_TTABLE) {
    n = (lua_Integer)lua_rawlen(L, -1);
    for (i = 1; i <= n; i++) {
      if (lua_rawgeti(L, -1, i) == LUA_TTABLE) {
        int e = lua_gettop(L);
        size_t at = open_msg(o, 11);
        p_fixed(o, 1, (uint64_t)int_field(L, e, TIME), 8);
        p_text(o, 2, L, e, NAME);
        field(L, e, ATTRIBUTES);
        p_attributes(o, 3, lua_gettop(L));
        lua_pop(L, 1);
        close_msg(o, at);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* Span.links (13): Link { trace_id 1, span_id 2, trace_state 3, attributes 4 } */
static void p_links(writer *o, int t) {
  lua_State *L = o->L;
  lua_Integer i, n;
  if (field(L, t, LINKS) == LUA_TTABLE) {
    n = (lua_Integer)lua_rawlen(L, -1);
    for (i = 1; i <= n; i++) {
      if (lua_rawgeti(L, -1, i) == LUA_TTABLE) {
        int l = lua_gettop(L);
        size_t at = open_msg(o, 13);
        p_id(o, 1, L, l, TRACE_ID, 16);
        p_id(o, 2, L, l, SPAN_ID, 8);
        p_text(o, 3, L, l, TRACESTATE);
        field(L, l, ATTRIBUTES);
        p_attributes(o, 4, lua_gettop(L));
        lua_pop(L, 1);
        close_msg(o, at);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
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
  varint(o, (uint64_t)kind_number(s, s ? n : 0));
  p_fixed(o, 7, (uint64_t)start, 8);
  p_fixed(o, 8, (uint64_t)(end < start ? start : end), 8);
  field(L, t, ATTRIBUTES);
  p_attributes(o, 9, lua_gettop(L));
  lua_pop(L, 1);
  p_events(o, t);
  p_links(o, t);
  s = text_field(L, t, STATUS, &n);
  if (s != NULL && (strcmp(s, "error") == 0 || strcmp(s, "ok") == 0)) {
    size_t status = open_msg(o, 15); /* Status { message 2, code 3 } */
    int error = s[0] == 'e';
    if (error) p_text(o, 2, L, t, STATUS_MESSAGE);
    tag(o, 3, VARINT);
    varint(o, error ? 2 : 1);
    close_msg(o, status);
  }
  p_fixed(o, 16, span_flags(L, t), 4);
  close_msg(o, at);
}

/* ExportTraceServiceRequest { ResourceSpans 1 { Resource 1 { attributes 1 }, ScopeSpans 2 {
 * InstrumentationScope 1 { name 1, version 2 }, spans 2 } } } */
static void p_request(writer *o, const char *version, size_t vn) {
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

/* ---- the entry ------------------------------------------------------------------------ */

static int obuf_gc(lua_State *L) {
  obuf *b = (obuf *)lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  return 0;
}

static int l_otlp_encode(lua_State *L) {
  writer o;
  size_t vn;
  const char *version;
  int protobuf;
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  version = luaL_optlstring(L, 3, "", &vn);
  protobuf = lua_toboolean(L, 4);
  lua_settop(L, 4);
  luaL_checkstack(L, 12, "otlp_encode");
  o.L = L;
  o.b = (obuf *)lua_touserdata(L, lua_upvalueindex(1));
  o.b->len = 0;
  o.oom = 0;
  if (protobuf) p_request(&o, version, vn);
  else j_request(&o, version, vn);
  if (o.oom) return luaL_error(L, "otlp_encode: not enough memory");
  lua_pushlstring(L, o.b->p != NULL ? o.b->p : "", o.b->len);
  if (o.b->cap > KEEP_BUFFER) {
    free(o.b->p);
    o.b->p = NULL;
    o.b->cap = 0;
  }
  o.b->len = 0;
  return 1;
}

void claude_open_otlp(lua_State *L) {
  int f;
  obuf *b = (obuf *)lua_newuserdatauv(L, sizeof(obuf), 0);
  memset(b, 0, sizeof *b);
  lua_newtable(L);
  lua_pushcfunction(L, obuf_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  for (f = 0; f < NFIELDS; f++) lua_pushstring(L, FIELDS[f]);
  lua_pushcclosure(L, l_otlp_encode, 1 + NFIELDS);
  lua_setfield(L, -2, "otlp_encode");
}
