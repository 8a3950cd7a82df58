/*
 * otlp_json.c -- OTLP/JSON's ExportTraceServiceRequest of a batch of spans (otlp.h): ids as
 * hex, times as decimal strings, enums as numbers, attribute values as AnyValue objects; the
 * strings through the JSON encoder's own writer (json.c).
 */
#include <math.h>
#include <string.h>

#include <lauxlib.h>

#include "json/json.h"
#include "trace/otlp.h"

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

/* before item k of a list: the list's member and "[" (the first), else "," */
static void j_item(writer *o, int k, const char *member) {
  if (k == 0) raw(o, member, strlen(member));
  else LIT(o, ",");
}

static void j_event(writer *o, int k, int e) {
  lua_State *L = o->L;
  size_t len;
  const char *name = text_field(L, e, NAME, &len);
  j_item(o, k, ",\"events\":[");
  LIT(o, "{\"timeUnixNano\":");
  jdigits(o, int_field(L, e, TIME), 1);
  jfield_text(o, ",\"name\":", name ? name : "", name ? len : 0);
  span_field(L, e, ATTRIBUTES);
  j_attributes(o, ",\"attributes\":", lua_gettop(L));
  lua_pop(L, 1);
  LIT(o, "}");
}

static void j_link(writer *o, int k, int l) {
  lua_State *L = o->L;
  size_t len;
  const char *s = text_field(L, l, TRACE_ID, &len);
  j_item(o, k, ",\"links\":[");
  LIT(o, "{\"traceId\":");
  jstr(o, s ? s : "", s ? len : 0);
  j_id(o, ",\"spanId\":", L, l, SPAN_ID);
  j_id(o, ",\"traceState\":", L, l, TRACESTATE);
  span_field(L, l, ATTRIBUTES);
  j_attributes(o, ",\"attributes\":", lua_gettop(L));
  lua_pop(L, 1);
  LIT(o, "}");
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
  jdigits(o, (lua_Integer)claude_otlp_flags(L, t), 0);
  s = text_field(L, t, NAME, &n);
  jfield_text(o, ",\"name\":", s ? s : "", s ? n : 0);
  LIT(o, ",\"kind\":");
  s = text_field(L, t, KIND, &n);
  jdigits(o, claude_otlp_kind(s, s ? n : 0), 0);
  LIT(o, ",\"startTimeUnixNano\":");
  jdigits(o, start, 1);
  LIT(o, ",\"endTimeUnixNano\":");
  jdigits(o, end < start ? start : end, 1);
  span_field(L, t, ATTRIBUTES);
  j_attributes(o, ",\"attributes\":", lua_gettop(L));
  lua_pop(L, 1);
  if (otlp_each(o, t, EVENTS, j_event) > 0) LIT(o, "]");
  if (otlp_each(o, t, LINKS, j_link) > 0) LIT(o, "]");
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

void claude_otlp_json(writer *o, const char *version, size_t vn) {
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
