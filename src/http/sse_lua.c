/*
 * sse_lua.c -- core.sse_parser: the SSE parser of sse.c for Lua, and the
 * event tables both it and the HTTP client hand to Lua.
 */
#include "context.h"
#include "http/sse.h"

#define MT_SSE "claude.SSEParser"

/* Pushes { event = type, data = data, id = last event ID or nil,
 * retry = ms or nil }. */
void claude_sse_push(lua_State *L, const claude_sse_event *ev) {
  lua_createtable(L, 0, 4);
  lua_pushlstring(L, ev->type, ev->type_len);
  lua_setfield(L, -2, "event");
  lua_pushlstring(L, ev->data, ev->data_len);
  lua_setfield(L, -2, "data");
  if (ev->id_len > 0) {
    lua_pushlstring(L, ev->id, ev->id_len);
    lua_setfield(L, -2, "id");
  }
  if (ev->retry >= 0) {
    lua_pushinteger(L, (lua_Integer)ev->retry);
    lua_setfield(L, -2, "retry");
  }
}

typedef struct sse_obj {
  claude_sse sse;
  int open;
} sse_obj;

static sse_obj *check_parser(lua_State *L) {
  sse_obj *o = (sse_obj *)luaL_checkudata(L, 1, MT_SSE);
  if (!o->open) luaL_error(L, "attempt to use a closed SSE parser");
  return o;
}

/* core.sse_parser([max_event]) -> a claude.SSEParser; max_event (bytes,
 * default 64 MiB, 0 for none) bounds what one event may hold. */
static int l_sse_parser(lua_State *L) {
  lua_Integer max = luaL_optinteger(L, 1, (lua_Integer)CLAUDE_DEFAULT_MAX_LINE);
  sse_obj *o;
  luaL_argcheck(L, max >= 0, 1, "non-negative size expected");
  o = (sse_obj *)lua_newuserdatauv(L, sizeof(*o), 0);
  claude_sse_init(&o->sse, (size_t)max);
  o->open = 1;
  luaL_setmetatable(L, MT_SSE);
  return 1;
}

typedef struct feed_state {
  lua_State *L;
  int list;
  lua_Integer n;
  int overflows;
} feed_state;

static int feed_emit(void *ud, const claude_sse_event *ev) {
  feed_state *st = (feed_state *)ud;
  if (ev->overflow) {
    st->overflows++;
    return 0;
  }
  claude_sse_push(st->L, ev);
  lua_rawseti(st->L, st->list, ++st->n);
  return 0;
}

/* parser:feed(chunk) -> events[, err]: the events completed by this chunk,
 * in order; err says how many events were dropped for being over the
 * ceiling (the events around them are kept). */
static int sse_feed(lua_State *L) {
  sse_obj *o = check_parser(L);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  feed_state st;
  lua_newtable(L);
  st.L = L;
  st.list = lua_gettop(L);
  st.n = 0;
  st.overflows = 0;
  if (claude_sse_feed(&o->sse, s, len, feed_emit, &st) < 0)
    return luaL_error(L, "not enough memory");
  if (st.overflows == 0) return 1;
  lua_pushfstring(L, "%d SSE event(s) dropped: an event exceeds the limit of %I bytes",
                  st.overflows, (lua_Integer)o->sse.max_event);
  return 2;
}

/* parser:last_event_id() -> the stream's last event ID, or nil */
static int sse_last_event_id(lua_State *L) {
  sse_obj *o = check_parser(L);
  if (o->sse.id.len == 0) lua_pushnil(L);
  else lua_pushlstring(L, o->sse.id.p, o->sse.id.len);
  return 1;
}

/* parser:retry() -> the reconnection time in ms the stream set, or nil */
static int sse_retry(lua_State *L) {
  sse_obj *o = check_parser(L);
  if (o->sse.retry < 0) lua_pushnil(L);
  else lua_pushinteger(L, (lua_Integer)o->sse.retry);
  return 1;
}

static int sse_close(lua_State *L) {
  sse_obj *o = (sse_obj *)luaL_checkudata(L, 1, MT_SSE);
  if (o->open) {
    o->open = 0;
    claude_sse_free(&o->sse);
  }
  return 0;
}

static int sse_tostring(lua_State *L) {
  sse_obj *o = (sse_obj *)luaL_checkudata(L, 1, MT_SSE);
  lua_pushstring(L, o->open ? "claude.SSEParser" : "claude.SSEParser (closed)");
  return 1;
}

static const luaL_Reg sse_methods[] = {
  {"feed", sse_feed}, {"last_event_id", sse_last_event_id}, {"retry", sse_retry},
  {"close", sse_close}, {NULL, NULL}};
static const luaL_Reg sse_metamethods[] = {
  {"__gc", sse_close}, {"__close", sse_close}, {"__tostring", sse_tostring},
  {"__index", NULL}, {NULL, NULL}};

/* Adds sse_parser to the module table on top of the stack. */
void claude_open_sse(lua_State *L) {
  luaL_newmetatable(L, MT_SSE);
  luaL_setfuncs(L, sse_metamethods, 0);
  luaL_newlib(L, sse_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_sse_parser);
  lua_setfield(L, -2, "sse_parser");
}
