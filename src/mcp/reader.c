/*
 * mcp/reader.c -- the envelope readers (envelope.c) as line readers a stream
 * takes (io/io.h: claude_line_reader): core.envelope_reader(kind [, bound])
 * makes one, and a stream or a process reads its lines with it
 * (s:read_with(reader)). The stream knows no protocol; the reader keeps
 * what it needs from line to line (the last modern envelope, the value bound
 * to it) and holds a control request's ids in the frame the stream gives it
 * for the line.
 */
#include <string.h>

#include "io/io.h"
#include "mcp/envelope.h"
#include "mcp/pending.h"
#include "mcp/record.h"

_Static_assert(sizeof(claude_call_ids) <= CLAUDE_LINE_FRAME, "the ids fit a line's frame");

typedef struct envelope_reader {
  claude_line_reader base; /* first: the stream sees this */
  claude_envelope_fn read;
  /* the value bound to the reader, or LUA_NOREF: a core.pending set (the reader
   * of answers), or the call record a reader of tool calls fills */
  int bound_ref;
  int fills;       /* the bound value is a call record */
  int target_ref;  /* what a filled record goes to instead of the stream's callback, or LUA_NOREF */
  unsigned filled; /* its slots that hold a value (claude_call_record_fill) */
  claude_envelope_state state;
} envelope_reader;

static int reader_read(claude_line_reader *lr, lua_State *L, const char *line, size_t len,
                       void *frame) {
  envelope_reader *r = (envelope_reader *)lr;
  claude_call_ids *ids = (claude_call_ids *)frame;
  int bound, n;
  if (ids != NULL) ids->rid_len = ids->tuid_len = (size_t)-1;
  r->state.ids = ids;
  if (r->bound_ref == LUA_NOREF) { /* nothing bound */
    n = r->read(L, line, len, 0, &r->state);
    r->state.ids = NULL;
    return n == CLAUDE_ENVELOPE_DONE ? CLAUDE_READER_DONE : n;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->bound_ref);
  bound = lua_gettop(L);
  n = r->read(L, line, len, bound, &r->state);
  r->state.ids = NULL;
  if (n == CLAUDE_ENVELOPE_DONE) return CLAUDE_READER_DONE; /* (the bound value goes too) */
  if (n > 0 && r->fills) {
    n = claude_call_record_fill(L, bound, n, &r->filled); /* bound, mark, record */
    if (r->target_ref != LUA_NOREF) { /* the target and the record, called instead */
      lua_rawgeti(L, LUA_REGISTRYINDEX, r->target_ref);
      lua_replace(L, -3);
      n = -1;
    }
  }
  lua_remove(L, bound);
  return n;
}

static void reader_release(claude_line_reader *lr, lua_State *L) {
  envelope_reader *r = (envelope_reader *)lr;
  luaL_unref(L, LUA_REGISTRYINDEX, r->bound_ref);
  r->bound_ref = LUA_NOREF;
  luaL_unref(L, LUA_REGISTRYINDEX, r->target_ref);
  r->target_ref = LUA_NOREF;
  claude_envelope_state_release(L, &r->state);
}

static int reader_gc(lua_State *L) {
  reader_release((claude_line_reader *)luaL_checkudata(L, 1, CLAUDE_LINE_READER), L);
  return 0;
}

/* core.envelope_reader(kind [, bound]) -> a claude.core.LineReader: the lines of the usual
 * shape of one kind ("request", "control", "response") reach a stream's callback as the
 * few values their receiver reads; `bound`: a core.pending set the "response" reader hands
 * the answers of its requests to, or the call record (a table: claude.mcp.call) the
 * "request" and "control" readers fill, handing the callback core.MCP_CALL and the record.
 * One reader per stream: it keeps the stream's last envelope. */
static int l_envelope_reader(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  claude_envelope_fn fn = claude_envelope_of(kind);
  int answers = strcmp(kind, "response") == 0;
  envelope_reader *r;
  if (fn == NULL) return luaL_argerror(L, 1, "\"request\", \"control\" or \"response\" expected");
  if (!lua_isnoneornil(L, 2) && answers && !claude_is_pending(L, 2))
    return luaL_typeerror(L, 2, "claude.core.Pending");
  if (!lua_isnoneornil(L, 2) && !answers && !lua_istable(L, 2))
    return luaL_typeerror(L, 2, "table (a call record)");
  claude_ctx_get(L)->held_piece = claude_call_id; /* the stream's writes spell the held ids */
  r = (envelope_reader *)lua_newuserdatauv(L, sizeof *r, 0);
  r->base.read = reader_read;
  r->base.release = reader_release;
  r->read = fn;
  r->bound_ref = LUA_NOREF;
  r->fills = !answers && !lua_isnoneornil(L, 2);
  r->filled = ~0u; /* (what the record held: unknown) */
  r->target_ref = LUA_NOREF;
  claude_envelope_state_init(&r->state);
  luaL_setmetatable(L, CLAUDE_LINE_READER);
  if (!lua_isnoneornil(L, 2)) {
    lua_pushvalue(L, 2);
    r->bound_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return 1;
}

/* reader:target([fn]): a reader that fills a call record calls fn(record) with each tool
 * call instead of the stream's callback (the router's entry, the transport's era), or,
 * without fn, hands the callback core.MCP_CALL and the record again. */
static int reader_target(lua_State *L) {
  envelope_reader *r = (envelope_reader *)luaL_checkudata(L, 1, CLAUDE_LINE_READER);
  luaL_argcheck(L, r->fills, 1, "a reader that fills a call record expected");
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
  luaL_unref(L, LUA_REGISTRYINDEX, r->target_ref);
  r->target_ref = LUA_NOREF;
  if (!lua_isnoneornil(L, 2)) {
    lua_pushvalue(L, 2);
    r->target_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return 0;
}

void claude_open_reader(lua_State *L) {
  static const luaL_Reg meta[] = {{"__gc", reader_gc}, {NULL, NULL}};
  static const luaL_Reg methods[] = {{"target", reader_target}, {NULL, NULL}};
  luaL_newmetatable(L, CLAUDE_LINE_READER);
  luaL_setfuncs(L, meta, 0);
  luaL_newlib(L, methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_envelope_reader);
  lua_setfield(L, -2, "envelope_reader");
}
