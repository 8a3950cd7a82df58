/*
 * answer.c -- the "response" envelope reader: the answer to a request, read in
 * C (claude.mcp reading an MCP server's lines; mcp/envelope.c says what the
 * readers share), a tool call's usual result built here as the decoder would
 * build it; with a core.pending set bound, the answer goes straight to the
 * request waiting for it. And core.usual_call, the client's check of a
 * call_tool's arguments in one C call.
 */
#include <string.h>

#include "mcp/envelope.h"
#include "mcp/envelope_scan.h"

/* The first value of a line read here (light userdata: no JSON value). */
static const char RESULT_MARK = 'r';

/* A tool call's usual result, built here without the decoder's steps (its
 * string cache, its frames, an array's elements held until counted): an
 * object of "content" (one to USUAL_ITEMS items, each {"type":S,"text":S}),
 * "isError" (a boolean) and "resultType" (a string), each at most once, in
 * any order, strings without escapes. The tables are the decoder's (sized
 * for what they hold; a non-empty array has no metatable). Pushes the result,
 * or returns 0 with anything pushed left above (the caller decodes). */
#define USUAL_ITEMS 8
/* Its keys (and "text", the usual type, and "complete", the modern era's usual
 * resultType), made once per stream: a table the stream's state holds by a
 * registry ref (keys_ref), read by index. */
static const char *const usual_keys[] = {"content", "isError", "resultType", "type", "text",
                                         "complete"};
enum { K_CONTENT = 1, K_IS_ERROR, K_RESULT_TYPE, K_TYPE, K_TEXT, K_COMPLETE,
       K_COUNT = K_COMPLETE };

/* Pushes the table of keys; returns its slot. */
static int push_usual_keys(lua_State *L, claude_envelope_state *state) {
  int i;
  if (state != NULL && state->keys_ref != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, state->keys_ref);
    return lua_gettop(L);
  }
  lua_createtable(L, K_COUNT, 0);
  for (i = 0; i < K_COUNT; i++) {
    lua_pushstring(L, usual_keys[i]);
    lua_rawseti(L, -2, i + 1);
  }
  if (state != NULL) {
    lua_pushvalue(L, -1);
    state->keys_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  return lua_gettop(L);
}

/* An item's text (r->p at its string) and the item's end: pushes the item, its type's string
 * at the top (taken). */
static int usual_text(lua_State *L, reader *r, int keys) {
  const char *s;
  size_t n;
  if (!plain(r, &s, &n)) return 0;
  lua_createtable(L, 0, 2);
  lua_rawgeti(L, keys, K_TYPE);
  lua_rotate(L, -3, -1); /* item, "type", type */
  lua_rawset(L, -3);
  lua_rawgeti(L, keys, K_TEXT);
  lua_pushlstring(L, s, n);
  lua_rawset(L, -3);
  return eat(r, '}');
}

static int usual_item(lua_State *L, reader *r, int keys) {
  const char *s;
  size_t n;
  if (!eat(r, '{') || !key_start(r) || !KEY_IS(r, "type") || !eat(r, ':') || !plain(r, &s, &n))
    return 0;
  if (n == 4 && memcmp(s, "text", 4) == 0) lua_rawgeti(L, keys, K_TEXT);
  else lua_pushlstring(L, s, n);
  if (!eat(r, ',') || !key_start(r) || !KEY_IS(r, "text") || !eat(r, ':')) return 0;
  return usual_text(L, r, keys);
}

/* The content's items after its '[' (`items` of them pushed already) and its ']': pushes the
 * array in their place. */
static int usual_items(lua_State *L, reader *r, int keys, int items) {
  int i;
  for (;;) {
    if (items > 0) {
      if (eat(r, ']')) break;
      if (!eat(r, ',')) return 0;
    }
    if (items == USUAL_ITEMS || !usual_item(L, r, keys)) return 0;
    items++;
  }
  lua_createtable(L, items, 0);
  lua_rotate(L, -1 - items, 1); /* below its items */
  for (i = items; i >= 1; i--) lua_rawseti(L, -1 - i, i);
  return 1;
}

/* How a usual result begins, compact: compared at once, its text read next. */
static const char USUAL_START[] = "\"content\":[{\"type\":\"text\",\"text\":";
#define USUAL_START_LEN (sizeof USUAL_START - 1)
/* The modern era's usual member after the content, compact: compared at once. */
static const char USUAL_COMPLETE[] = "\"resultType\":\"complete\"";
#define USUAL_COMPLETE_LEN (sizeof USUAL_COMPLETE - 1)

/* "resultType":"complete" read: its pair pushed (members one more), or left out when the
 * answer's taker wants it so (r->drop_complete; *dropped set). */
static void usual_complete(lua_State *L, reader *r, int keys, int *members, int *dropped) {
  if (r->drop_complete) {
    *dropped = 1;
    return;
  }
  lua_rawgeti(L, keys, K_RESULT_TYPE);
  lua_rawgeti(L, keys, K_COMPLETE);
  (*members)++;
}

static int usual_result(lua_State *L, reader *r, claude_envelope_state *state) {
  const char *s;
  size_t n;
  unsigned seen = 0;
  int which, done = 0, i, members = 0, keys, dropped = 0;
  luaL_checkstack(L, 2 * 3 + USUAL_ITEMS + 6, "envelope");
  blanks(r);
  if (r->p >= r->end || *r->p != '{') return 0;
  r->p++;
  keys = push_usual_keys(L, state);
  if ((size_t)(r->end - r->p) > USUAL_START_LEN &&
      memcmp(r->p, USUAL_START, USUAL_START_LEN) == 0) {
    r->p += USUAL_START_LEN;
    lua_rawgeti(L, keys, K_CONTENT);
    lua_rawgeti(L, keys, K_TEXT); /* its type */
    if (!usual_text(L, r, keys) || !usual_items(L, r, keys, 1)) return 0;
    seen = members = 1;
    if (!next_member(r, &done)) return 0;
    if (!done && (size_t)(r->end - r->p) > USUAL_COMPLETE_LEN &&
        memcmp(r->p, USUAL_COMPLETE, USUAL_COMPLETE_LEN) == 0) {
      r->p += USUAL_COMPLETE_LEN;
      seen |= 1u << 2;
      usual_complete(L, r, keys, &members, &dropped);
      if (!next_member(r, &done)) return 0;
    }
  }
  while (!done) {
    if ((which = KEY3(r, "content", "isError", "resultType")) < 0 || (seen & (1u << which)))
      return 0;
    seen |= 1u << which;
    switch (which) {
      case 0:
        if (!eat(r, '[')) return 0;
        lua_rawgeti(L, keys, K_CONTENT);
        if (!usual_items(L, r, keys, 0)) return 0;
        break;
      case 1:
        blanks(r);
        lua_rawgeti(L, keys, K_IS_ERROR);
        if (PLAIN_WORD(r, "true")) lua_pushboolean(L, 1);
        else if (PLAIN_WORD(r, "false")) lua_pushboolean(L, 0);
        else return 0;
        break;
      default:
        if (!plain(r, &s, &n)) return 0;
        if (n == 8 && memcmp(s, "complete", 8) == 0) {
          usual_complete(L, r, keys, &members, &dropped);
          if (!next_member(r, &done)) return 0;
          continue;
        }
        lua_rawgeti(L, keys, K_RESULT_TYPE);
        lua_pushlstring(L, s, n);
    }
    members++;
    if (!next_member(r, &done)) return 0;
  }
  r->dropped = dropped;
  /* the members go in in the line's order, as the decoder's do */
  lua_createtable(L, 0, members);
  for (i = 2 * members; i >= 2; i -= 2) {
    lua_pushvalue(L, -1 - i);
    lua_pushvalue(L, -1 - i);
    lua_rawset(L, -3);
  }
  return 1;
}

/* The result at r->p into slot: the usual one built here, any other decoded. */
static int result_into(lua_State *L, reader *r, int slot) {
  const char *at = r->p;
  int top = lua_gettop(L);
  if (usual_result(L, r, r->state)) {
    lua_replace(L, slot);
    lua_settop(L, top);
    return 1;
  }
  lua_settop(L, top);
  r->p = at;
  return decode_into(L, r, 1, slot);
}

/* The result at idx, built without "resultType":"complete" for a taker that
 * does not take it so after all: the member put back. */
static void restore_complete(lua_State *L, int idx, claude_envelope_state *state) {
  int keys = push_usual_keys(L, state);
  lua_rawgeti(L, keys, K_RESULT_TYPE);
  lua_rawgeti(L, keys, K_COMPLETE);
  lua_rawset(L, idx);
  lua_pop(L, 1);
}

/* How an answer usually begins, compact: compared at once, its id read next. */
static const char ANSWER_START[] = "\"jsonrpc\":\"2.0\",\"id\":";
#define ANSWER_START_LEN (sizeof ANSWER_START - 1)

/* The answer to a request: jsonrpc, id, result (any value), each once. With a
 * set bound (core.pending), the answer to a request of it goes straight to
 * the request's callback: the set's callback and the result, -1; or, for a task
 * waiting in the set's coroutine, the task resumed here (claude_pending_wake):
 * nothing, CLAUDE_ENVELOPE_DONE. A request of the set marked usual (a modern
 * tools/call's: claude_pending_usual) whose answer is the usual result with
 * "resultType":"complete" gets it without that member, its wake-up saying so
 * (the client's check done here); any other way it goes, the member is put
 * back first, and the client checks the result whole. One marked "object" (a
 * legacy tools/call's) is woken saying whether its result is an object. */
int claude_envelope_read_response(lua_State *L, const char *line, size_t len, int bound,
                                  claude_envelope_state *state) {
  reader r = {line, line + len, state, NULL, 0, 0, 0};
  int base = lua_gettop(L), done = 0, which, ok;
  unsigned seen = 0;
  luaL_checkstack(L, 8, "envelope");
  lua_pushlightuserdata(L, (void *)&RESULT_MARK);
  lua_settop(L, base + 3);
  if (!eat(&r, '{')) return finish(L, &r, base, 0, 0);
  if ((size_t)(r.end - r.p) > ANSWER_START_LEN &&
      memcmp(r.p, ANSWER_START, ANSWER_START_LEN) == 0) {
    r.p += ANSWER_START_LEN; /* the usual start, compared at once */
    seen = 0x3;
    if (!id_into(L, &r, base + 2, bound) || !next_member(&r, &done))
      return finish(L, &r, base, 0, 0);
  }
  while (!done) {
    if ((which = KEY3(&r, "jsonrpc", "id", "result")) < 0 || (seen & (1u << which)))
      return finish(L, &r, base, 0, 0);
    seen |= 1u << which;
    switch (which) {
      case 0: ok = PLAIN_IS(&r, "2.0"); break;
      case 1: ok = id_into(L, &r, base + 2, bound); break;
      default: ok = result_into(L, &r, base + 3);
    }
    if (!ok || !next_member(&r, &done)) return finish(L, &r, base, 0, 0);
  }
  if (finish(L, &r, base, seen == 0x7, 3) == 0) return 0;
  if (bound) {
    lua_State *co;
    if (claude_pending_take(L, bound, base + 2, &co)) { /* mark, id, result, cb */
      int checked = r.dropped || (r.object && lua_type(L, base + 3) == LUA_TTABLE);
      if (co != NULL && claude_pending_wake(L, bound, co, base + 4, base + 3, checked)) {
        lua_settop(L, base);
        return CLAUDE_ENVELOPE_DONE;
      }
      if (r.dropped) restore_complete(L, base + 3, state);
      lua_replace(L, base + 1);
      lua_remove(L, base + 2); /* callback, result */
      return -1;
    }
  }
  if (r.dropped) restore_complete(L, base + 3, state);
  return 3;
}

/* core.usual_call(self, name, args) -> whether a tools/call's arguments have the usual types
 * (claude.mcp's call_tool: self a table, name a string, args nil or a table), told in one C
 * call, where three calls of Lua's type() would each make its answer a string first. */
static int l_usual_call(lua_State *L) {
  int args = lua_type(L, 3);
  lua_pushboolean(L, lua_type(L, 1) == LUA_TTABLE && lua_type(L, 2) == LUA_TSTRING &&
                         (args == LUA_TTABLE || args == LUA_TNIL));
  return 1;
}

void claude_open_answer(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&RESULT_MARK);
  lua_setfield(L, -2, "RPC_RESULT");
  lua_pushcfunction(L, l_usual_call);
  lua_setfield(L, -2, "usual_call");
}
