/*
 * otlp.c -- core.otlp_encode(spans, resource, version[, protobuf]) -> the body of one
 * OTLP/HTTP export: the ExportTraceServiceRequest of a batch of finished spans (claude.trace's
 * tables) under one resource and the `claudelua` scope, as protobuf (otlp_protobuf.c) or
 * OTLP/JSON (otlp_json.c), written straight into one buffer (kept between exports: they come
 * one at a time, from the loop).
 *
 * A span's fields: name, kind ("internal", "server", "client", "producer", "consumer"),
 * trace_id, span_id, parent_id (hex), tracestate, sampled, remote (its parent came from
 * another process), start_time and end_time (integers, ns), status ("error", "ok" or nil),
 * status_message, attributes (key -> a string, boolean, number, or a list of them), events
 * ({ name, time, attributes }) and links ({ trace_id, span_id, tracestate, attributes }).
 * Nothing here runs Lua code: a value of another type is written as its type's name.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "trace/otlp.h"
#include "trace/trace.h"

/* past this, an export's buffer is freed after it rather than kept */
#define KEEP_BUFFER ((size_t)1 << 20)

/* the field names, in otlp.h's order: interned once, as the entry's upvalues */
static const char *const FIELDS[] = {"name", "kind", "trace_id", "span_id", "parent_id",
  "tracestate", "sampled", "remote", "start_time", "end_time", "status", "status_message",
  "attributes", "events", "links", "time"};

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
  if (protobuf) claude_otlp_protobuf(&o, version, vn);
  else claude_otlp_json(&o, version, vn);
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
