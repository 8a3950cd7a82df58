/*
 * envelope.c -- the JSON-RPC envelope of a tool call, read in C: the lines of
 * the hot paths decoded only as far as routing needs. (Over 600 lines: the
 * three readers share one scanner and a tool call's parts, a control request
 * wraps the request, and the modern envelope's cache is part of reading its
 * _meta.)
 *
 * A `tools/call` costs little to run and much to decode: its envelope is
 * four tables (the message, params, arguments, _meta) and, on the claude
 * CLI's control channel, two more (the control request and its request),
 * a third of a call's instructions. A stream given an envelope reader
 * (stream:envelope(kind), process:envelope(kind)) hands its callback, for a
 * line of the usual shape, only the values the receiver reads:
 *
 *   "request"  (claudelua mcp)       core.MCP_CALL, id, name, arguments, _meta,
 *                                    progress token, tool use id, protocol version
 *   "control"  (the CLI's stdout)    the same, then request_id, server_name
 *   "response" (an MCP client)       core.RPC_RESULT, id, result; or, with a set
 *                                    bound (core.pending), the answer to a request
 *                                    of it straight to its callback
 *
 * where arguments, _meta and result are decoded (nil when absent; a tool
 * call's usual result, text content, is built here as the decoder would
 * build it: usual_result), and the rest is checked here: "jsonrpc" is "2.0", the method "tools/call", the
 * subtype "mcp_message", the type "control_request". A _meta of the claude
 * CLI's shape (a progress token and the tool use's id, nothing else) is not
 * decoded: _meta is then core.MCP_CALL, and its two values follow (nil when
 * absent). Nor is the envelope of the modern era (the protocol version, the
 * client's capabilities, an object, its info, no log level, beside those
 * two but not between its members): _meta is then the JSON text of the
 * envelope alone (an object of its members; with the token and the tool use
 * id it makes the _meta: claude.mcp.router.envelope_meta), and the version
 * follows the two. A client sends the same envelope every time: the text of
 * the last one is kept, and a line that spells it again is compared, not
 * read. Else they are nil and _meta is what the decoder gives.
 *
 * In a stream's callback (claude_call_ids), the control reader hands the
 * request id and the tool use id as core.MCP_REQUEST_ID and
 * core.MCP_TOOL_USE_ID, their bytes copied aside, not made Lua strings: the
 * request id is only echoed in the answer (write_pieces writes it), and the
 * tool use id is read only when the call waits or its tool sees its ctx
 * (core.call_id makes them strings then).
 *
 * The usual shape is strict: objects whose keys are exactly the ones the
 * receiver reads (some optional), each once and spelled without escapes;
 * strings without escapes; an id an integer of up to 18 digits or a string.
 * Anything else, and anything that is not JSON, returns 0 and the stream
 * decodes the line whole, as without a reader: a line read here is one the
 * decoder takes, its values are the ones the decoder gives, and the
 * receiver can rebuild the message it would have had exactly.
 */
#include <string.h>

#include "json/json.h"
#include "json/scan.h"
#include "json/utf8.h"
#include "mcp/envelope.h"
#include "mcp/pending.h"
#include "mcp/record.h"

/* The first value of a line read here (light userdata: no JSON value); the
 * ids the control reader held back (claude_call_ids). */
static const char CALL_MARK = 'c', RESULT_MARK = 'r', REQUEST_ID_MARK = 'i', TOOL_USE_MARK = 't';

typedef struct reader {
  const char *p, *end;
  claude_envelope_state *state; /* the stream's, or NULL */
  claude_call_ids *ids;         /* where the ids are held back, or NULL */
  /* the answer's request takes its usual complete result without "resultType"
   * (claude_pending_usual); and whether the result was built so */
  int drop_complete, dropped;
  int object; /* the answer's request is told whether its result is an object */
} reader;

/* The id [s, s + n) held back in `ids` (the request id, or the tool use id)
 * and its mark pushed; 0 when there is nowhere to hold it. */
static int hold_id(lua_State *L, claude_call_ids *ids, int tool_use, const char *s, size_t n) {
  if (ids == NULL || n > CLAUDE_CALL_ID_MAX) return 0;
  if (tool_use) {
    memcpy(ids->tuid, s, n);
    ids->tuid_len = n;
    lua_pushlightuserdata(L, (void *)&TOOL_USE_MARK);
  } else {
    memcpy(ids->rid, s, n);
    ids->rid_len = n;
    lua_pushlightuserdata(L, (void *)&REQUEST_ID_MARK);
  }
  return 1;
}

int claude_call_id(claude_ctx *ctx, lua_State *L, int idx, const char **s, size_t *n) {
  const void *p = lua_touserdata(L, idx);
  claude_call_ids *ids = ctx != NULL ? (claude_call_ids *)ctx->line_frame : NULL;
  if (p == (const void *)&REQUEST_ID_MARK) {
    if (ids == NULL || ids->rid_len == (size_t)-1) return -1;
    *s = ids->rid;
    *n = ids->rid_len;
    return 1;
  }
  if (p == (const void *)&TOOL_USE_MARK) {
    if (ids == NULL || ids->tuid_len == (size_t)-1) return -1;
    *s = ids->tuid;
    *n = ids->tuid_len;
    return 1;
  }
  return 0;
}

static inline void blanks(reader *r) {
  if (r->p < r->end && (unsigned char)*r->p > ' ') return; /* compact JSON: no blanks */
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
    r->p++;
}

/* The character c, after blanks. */
static inline int eat(reader *r, char c) {
  blanks(r);
  if (r->p < r->end && *r->p == c) {
    r->p++;
    return 1;
  }
  return 0;
}

/* A string without escapes or control characters, well-formed UTF-8 (the
 * decoder refuses the rest): its bytes are [*s, *s + *n). */
static int plain(reader *r, const char **s, size_t *n) {
  const char *q, *e;
  unsigned high = 0;
  blanks(r);
  if (r->p >= r->end || *r->p != '"') return 0;
  q = r->p + 1;
  e = find_special(q, r->end, &high);
  if (e >= r->end || *e != '"') return 0;
  if (high && claude_utf8_invalid(q, e) != NULL) return 0;
  *s = q;
  *n = (size_t)(e - q);
  r->p = e + 1;
  return 1;
}

/* The string `want` (plain ASCII without quotes), compared as a key is. */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int plain_is(reader *r, const char *want, size_t len) {
  const char *k;
  blanks(r);
  if (r->p >= r->end || *r->p != '"') return 0;
  k = r->p + 1;
  if ((size_t)(r->end - k) <= len || k[len] != '"' || memcmp(k, want, len) != 0) return 0;
  r->p = k + len + 1;
  return 1;
}
#define PLAIN_IS(r, lit) plain_is(r, lit, sizeof(lit) - 1)

/* The literal `word` (true, false, null) at r->p. */
static int plain_word(reader *r, const char *word, size_t n) {
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return 0;
  r->p += n;
  return 1;
}
#define PLAIN_WORD(r, lit) plain_word(r, lit, sizeof(lit) - 1)

/* An integer as the decoder reads it exactly: an optional minus, no leading
 * zero, up to 18 digits, no fraction or exponent. */
static int integer(reader *r, lua_Integer *v) {
  const char *p;
  lua_Unsigned u = 0;
  int neg = 0, digits = 0;
  blanks(r);
  p = r->p;
  if (p < r->end && *p == '-') {
    neg = 1;
    p++;
  }
  if (p >= r->end || *p < '0' || *p > '9') return 0;
  if (*p == '0') {
    p++;
    digits = 1;
    if (p < r->end && *p >= '0' && *p <= '9') return 0;
  } else {
    while (p < r->end && *p >= '0' && *p <= '9') {
      u = u * 10 + (lua_Unsigned)(*p++ - '0');
      if (++digits > 18) return 0;
    }
  }
  if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
  *v = neg ? -(lua_Integer)u : (lua_Integer)u;
  r->p = p;
  return 1;
}

/* The key `lit` (plain ASCII without quotes) at r->p, the opening quote:
 * its bytes and a closing quote follow. A key is compared, not scanned: with
 * `lit` a literal, the compare is a few loads. Moves past the quote. */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int key_is(reader *r, const char *lit, size_t n) {
  const char *k = r->p + 1;
  if ((size_t)(r->end - k) <= n || k[n] != '"' || memcmp(k, lit, n) != 0) return 0;
  r->p = k + n + 1;
  return 1;
}
#define KEY_IS(r, lit) key_is(r, lit, sizeof(lit) - 1)

/* Before a key: its opening quote, after blanks. */
static inline int key_start(reader *r) {
  blanks(r);
  return r->p < r->end && *r->p == '"';
}

/* The ':' after key number `which`: `which`, or -1. */
static inline int colon(reader *r, int which) { return which >= 0 && eat(r, ':') ? which : -1; }

/* Which of the keys named is at r->p, then ':': its index, or -1 (a key the
 * reader does not know, or no key: the line is not of the usual shape). */
#define KEY2(r, a, b) colon(r, !key_start(r) ? -1 : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : -1)
#define KEY3(r, a, b, c)                                                                    \
  colon(r, !key_start(r) ? -1 : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : -1)
#define KEY5(r, a, b, c, d, e)                                                              \
  colon(r, !key_start(r) ? -1                                                               \
           : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : KEY_IS(r, d) ? 3      \
           : KEY_IS(r, e) ? 4 : -1)
#define KEY4(r, a, b, c, d)                                                                 \
  colon(r, !key_start(r) ? -1                                                               \
           : KEY_IS(r, a) ? 0 : KEY_IS(r, b) ? 1 : KEY_IS(r, c) ? 2 : KEY_IS(r, d) ? 3 : -1)

/* After a member: ',' (returns 1, more follow) or '}' (sets *done). */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int next_member(reader *r, int *done) {
  blanks(r);
  if (r->p < r->end && *r->p == ',') {
    r->p++;
    return 1;
  }
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    *done = 1;
    return 1;
  }
  return 0;
}

/* Decodes the value at r->p, `outer` containers deep, into stack slot
 * `slot`. */
static int decode_into(lua_State *L, reader *r, int outer, int slot) {
  const char *after;
  if (!claude_json_decode_at(L, r->p, r->end, outer, &after)) return 0;
  r->p = after;
  lua_replace(L, slot);
  return 1;
}

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

/* An id (an integer, or a string) into slot. With a set bound at `bound`, an
 * integer's request is looked at: whether it takes its usual complete result
 * checked here (claude_pending_usual). */
#ifdef __GNUC__
__attribute__((always_inline)) /* (the request readers' bound is 0: no look) */
#endif
static inline int id_into(lua_State *L, reader *r, int slot, int bound) {
  lua_Integer v;
  const char *s;
  size_t n;
  if (integer(r, &v)) {
    lua_pushinteger(L, v);
    if (bound) {
      int checks = claude_pending_usual(L, bound, v);
      r->drop_complete = checks == CLAUDE_PENDING_USUAL;
      r->object = checks == CLAUDE_PENDING_OBJECT;
    }
  } else if (plain(r, &s, &n)) {
    lua_pushlstring(L, s, n);
  } else {
    return 0;
  }
  lua_replace(L, slot);
  return 1;
}

/* The stack slots of a call, above the mark. */
enum { S_ID = 1, S_NAME, S_ARGS, S_META, S_TOKEN, S_TOOL_USE, S_VERSION, S_REQUEST_ID, S_SERVER,
       S_END };

/* Skips one value the decoder surely takes, as far as a look can tell: strings
 * without escapes, integers, literals, objects and arrays of them a few levels
 * deep (the line is far from the decoder's depth limit). Anything else is 0:
 * the caller decodes. */
#define SKIP_DEPTH 16
static int skip_value(reader *r, int depth) {
  const char *s;
  size_t n;
  lua_Integer v;
  blanks(r);
  if (r->p >= r->end) return 0;
  switch (*r->p) {
    case '"': return plain(r, &s, &n);
    case 't': return PLAIN_WORD(r, "true");
    case 'f': return PLAIN_WORD(r, "false");
    case 'n': return PLAIN_WORD(r, "null");
    case '{':
    case '[': {
      char close = *r->p == '{' ? '}' : ']';
      int object = close == '}';
      if (depth >= SKIP_DEPTH) return 0;
      r->p++;
      blanks(r);
      if (r->p < r->end && *r->p == close) {
        r->p++;
        return 1;
      }
      for (;;) {
        if (object && (!plain(r, &s, &n) || !eat(r, ':'))) return 0;
        if (!skip_value(r, depth + 1)) return 0;
        blanks(r);
        if (r->p < r->end && *r->p == ',') {
          r->p++;
          continue;
        }
        if (r->p < r->end && *r->p == close) {
          r->p++;
          return 1;
        }
        return 0;
      }
    }
    default: return integer(r, &v);
  }
}

/* The envelope of the modern era a stream read last (claude_envelope_state):
 * its members as the line spelled them (the bytes of its text after the
 * '{'; the text, an object of them alone, and its protocol version are held
 * by registry refs) and the bits of read_meta's keys among them. A client
 * sends the same envelope with every request: the next one is compared, not
 * read again, and its text and version are the strings already made. */
void claude_envelope_state_init(claude_envelope_state *st) {
  st->members = NULL;
  st->len = 0;
  st->bits = 0;
  st->text_ref = st->version_ref = st->keys_ref = LUA_NOREF;
  st->ids = NULL;
}

void claude_envelope_state_release(lua_State *L, claude_envelope_state *st) {
  claude_call_ids *ids = st->ids; /* (the frame's, not the kept envelope's) */
  luaL_unref(L, LUA_REGISTRYINDEX, st->text_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, st->version_ref);
  luaL_unref(L, LUA_REGISTRYINDEX, st->keys_ref);
  claude_envelope_state_init(st);
  st->ids = ids;
}

enum { M_TOKEN = 0, M_TOOL_USE, M_VERSION, M_CAPS, M_INFO }; /* read_meta's keys */
#define M_ENVELOPE (1u << M_VERSION | 1u << M_CAPS | 1u << M_INFO)

/* At a key, `at`: the kept envelope when the line spells its members there
 * (its text into the meta slot, its version into its slot, r past them,
 * their length in *len): its key bits, else 0. */
static unsigned cached_envelope(lua_State *L, reader *r, const char *at, int base,
                                size_t *len) {
  claude_envelope_state *st = r->state;
  if (st == NULL || st->len == 0 || (size_t)(r->end - at) < st->len ||
      memcmp(at, st->members, st->len) != 0)
    return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->text_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, st->version_ref);
  lua_copy(L, -2, base + S_META);
  lua_copy(L, -1, base + S_VERSION);
  lua_pop(L, 2);
  r->p = at + st->len;
  *len = st->len;
  return st->bits;
}

/* The text of the envelope whose members are [start, end) into the meta
 * slot, and kept with its version and key bits. */
static void new_envelope(lua_State *L, reader *r, const char *start, const char *end, int base,
                         unsigned bits) {
  luaL_Buffer b;
  claude_envelope_state *st = r->state;
  luaL_checkstack(L, 4, "envelope");
  luaL_buffinit(L, &b);
  luaL_addchar(&b, '{');
  luaL_addlstring(&b, start, (size_t)(end - start));
  luaL_addchar(&b, '}');
  luaL_pushresult(&b);
  lua_copy(L, -1, base + S_META);
  if (st == NULL) {
    lua_pop(L, 1);
    return;
  }
  claude_envelope_state_release(L, st);
  st->members = lua_tostring(L, -1) + 1; /* held by the ref */
  st->len = (size_t)(end - start);
  st->bits = bits;
  st->text_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushvalue(L, base + S_VERSION);
  st->version_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* _meta of the usual shapes, the claude CLI's (a progress token, an integer
 * or a string, and the id of the tool use, each optional) and a client's of
 * the modern era (its envelope: protocol version, client capabilities, an
 * object, client info; no log level; the CLI's keys beside, but not between
 * the envelope's members): its token and tool use id go to their slots, and
 * the meta slot gets the mark (the CLI's) or the text of the envelope, an
 * object of its members alone (with the version in its slot: decoded only if
 * something reads it). Any other _meta is decoded whole into the meta slot. */
static int read_meta(lua_State *L, reader *r, int outer, int base) {
  reader at = *r;
  unsigned seen = 0, cached = 0;
  int done = 0, which, env_closed = 0;
  lua_Integer v;
  const char *s, *key, *env_start = NULL, *env_end = NULL;
  size_t n, span = 0;
  if (!eat(r, '{')) goto whole;
  while (!done) {
    blanks(r);
    key = r->p;
    /* the envelope's first member ("io.modelcontextprotocol/..."): the cached one? */
    if (env_start == NULL && r->end - key > 2 && key[1] == 'i' &&
        (cached = cached_envelope(L, r, key, base, &span)) != 0) {
      env_start = key;
      seen |= cached;
      env_end = r->p;
      if (!next_member(r, &done)) goto whole;
      continue;
    }
    if ((which = KEY5(r, "progressToken", "claudecode/toolUseId",
                      "io.modelcontextprotocol/protocolVersion",
                      "io.modelcontextprotocol/clientCapabilities",
                      "io.modelcontextprotocol/clientInfo")) < 0 ||
        (seen & (1u << which)))
      goto whole;
    if (which >= M_VERSION) {
      if (env_start == NULL) env_start = key; /* the envelope's first member */
      else if (env_closed) goto whole; /* the CLI's keys between the envelope's members */
    } else if (env_start != NULL) {
      env_closed = 1;
    }
    seen |= 1u << which;
    switch (which) {
      case M_TOKEN:
      case M_TOOL_USE:
        if (which == M_TOKEN && integer(r, &v)) lua_pushinteger(L, v);
        else if (!plain(r, &s, &n)) goto whole;
        else if (which == M_TOKEN || !hold_id(L, r->ids, 1, s, n)) lua_pushlstring(L, s, n);
        lua_replace(L, base + (which == M_TOKEN ? S_TOKEN : S_TOOL_USE));
        break;
      case M_VERSION:
        if (!plain(r, &s, &n)) goto whole;
        lua_pushlstring(L, s, n);
        lua_replace(L, base + S_VERSION);
        break;
      case M_CAPS:
        blanks(r);
        if (r->p >= r->end || *r->p != '{' || !skip_value(r, 0)) goto whole;
        break;
      default:
        if (!skip_value(r, 0)) goto whole;
    }
    if (which >= M_VERSION) env_end = r->p;
    if (!next_member(r, &done)) goto whole;
  }
  if ((seen & M_ENVELOPE) == 0) { /* the claude CLI's: no table */
    lua_pushlightuserdata(L, (void *)&CALL_MARK);
    lua_replace(L, base + S_META);
  } else if ((seen & (1u << M_VERSION | 1u << M_CAPS)) == (1u << M_VERSION | 1u << M_CAPS)) {
    /* the modern envelope: its text (the cached one when the line spelled it) */
    if (!(cached && (size_t)(env_end - env_start) == span))
      new_envelope(L, r, env_start, env_end, base, seen & M_ENVELOPE);
  } else {
    goto whole;
  }
  return 1;
whole:
  *r = at;
  lua_pushnil(L);
  lua_replace(L, base + S_TOKEN);
  lua_pushnil(L);
  lua_replace(L, base + S_TOOL_USE);
  lua_pushnil(L);
  lua_replace(L, base + S_VERSION);
  return decode_into(L, r, outer, base + S_META);
}

/* params of tools/call: name, arguments, _meta. */
static int read_params(lua_State *L, reader *r, int outer, int base) {
  unsigned seen = 0;
  int done = 0, which;
  const char *s;
  size_t n;
  if (!eat(r, '{')) return 0;
  while (!done) {
    if ((which = KEY3(r, "name", "arguments", "_meta")) < 0 || (seen & (1u << which))) return 0;
    seen |= 1u << which;
    blanks(r);
    switch (which) {
      case 0:
        if (!plain(r, &s, &n)) return 0;
        lua_pushlstring(L, s, n);
        lua_replace(L, base + S_NAME);
        break;
      case 1:
        if (!decode_into(L, r, outer + 1, base + S_ARGS)) return 0;
        break;
      default:
        if (!read_meta(L, r, outer + 1, base)) return 0;
    }
    if (!next_member(r, &done)) return 0;
  }
  return (seen & 1u) != 0;
}

/* A tools/call request: jsonrpc, id, method, params, each once. */
static int read_call(lua_State *L, reader *r, int outer, int base) {
  unsigned seen = 0;
  int done = 0, which, ok;
  if (!eat(r, '{')) return 0;
  while (!done) {
    if ((which = KEY4(r, "jsonrpc", "id", "method", "params")) < 0 || (seen & (1u << which))) return 0;
    seen |= 1u << which;
    switch (which) {
      case 0: ok = PLAIN_IS(r, "2.0"); break;
      case 1: ok = id_into(L, r, base + S_ID, 0); break;
      case 2: ok = PLAIN_IS(r, "tools/call"); break;
      default: ok = read_params(L, r, outer + 1, base);
    }
    if (!ok || !next_member(r, &done)) return 0;
  }
  return seen == 0xF;
}

/* The control channel's request: subtype, server_name, message. */
static int read_request(lua_State *L, reader *r, int outer, int base) {
  unsigned seen = 0;
  int done = 0, which, ok;
  const char *s;
  size_t n;
  if (!eat(r, '{')) return 0;
  while (!done) {
    if ((which = KEY3(r, "subtype", "server_name", "message")) < 0 || (seen & (1u << which))) return 0;
    seen |= 1u << which;
    switch (which) {
      case 0: ok = PLAIN_IS(r, "mcp_message"); break;
      case 1:
        ok = plain(r, &s, &n);
        if (ok) {
          lua_pushlstring(L, s, n);
          lua_replace(L, base + S_SERVER);
        }
        break;
      default: ok = read_call(L, r, outer + 1, base);
    }
    if (!ok || !next_member(r, &done)) return 0;
  }
  return seen == 0x7;
}

/* A control_request line: type, request_id, request. */
static int read_control(lua_State *L, reader *r, int base) {
  unsigned seen = 0;
  int done = 0, which, ok;
  const char *s;
  size_t n;
  if (!eat(r, '{')) return 0;
  while (!done) {
    if ((which = KEY3(r, "type", "request_id", "request")) < 0 || (seen & (1u << which))) return 0;
    seen |= 1u << which;
    switch (which) {
      case 0: ok = PLAIN_IS(r, "control_request"); break;
      case 1:
        ok = plain(r, &s, &n);
        if (ok) {
          if (!hold_id(L, r->ids, 0, s, n)) lua_pushlstring(L, s, n);
          lua_replace(L, base + S_REQUEST_ID);
        }
        break;
      default: ok = read_request(L, r, 1, base);
    }
    if (!ok || !next_member(r, &done)) return 0;
  }
  return seen == 0x7;
}

/* The end of a line read (ok) into the mark and count - 1 slots above base:
 * only blanks may follow. Returns count, or 0 with the stack back at base. */
static int finish(lua_State *L, reader *r, int base, int ok, int count) {
  blanks(r);
  if (ok && r->p == r->end) {
    lua_settop(L, base + count);
    return count;
  }
  lua_settop(L, base);
  return 0;
}

static int read_request_line(lua_State *L, const char *line, size_t len, int bound,
                             claude_envelope_state *state) {
  reader r = {line, line + len, state, NULL, 0, 0, 0};
  (void)bound;
  int base = lua_gettop(L);
  luaL_checkstack(L, S_END + 4, "envelope");
  lua_pushlightuserdata(L, (void *)&CALL_MARK);
  lua_settop(L, base + S_VERSION + 1);
  return finish(L, &r, base, read_call(L, &r, 0, base + 1), S_VERSION + 1);
}

static int read_control_line(lua_State *L, const char *line, size_t len, int bound,
                             claude_envelope_state *state) {
  reader r = {line, line + len, state, state != NULL ? state->ids : NULL, 0, 0, 0};
  (void)bound;
  int base = lua_gettop(L);
  luaL_checkstack(L, S_END + 4, "envelope");
  lua_pushlightuserdata(L, (void *)&CALL_MARK);
  lua_settop(L, base + S_SERVER + 1);
  return finish(L, &r, base, read_control(L, &r, base + 1), S_SERVER + 1);
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
static int read_response_line(lua_State *L, const char *line, size_t len, int bound,
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

/* core.envelope_read(kind, line [, record]) -> what the reader of `kind` hands a stream's
 * callback for `line` (the mark first), or nothing when the line is not of
 * its usual shape: for the Streamable HTTP transport (a POST's body: one
 * state for every client, which the reader compares byte for byte), and for
 * the specs and the fuzz target, which compare it with the decoder's. With a
 * call record (a table: claude.mcp.call), a tool call fills it: the mark and
 * the record. */
static int l_envelope_read(lua_State *L) {
  size_t len;
  claude_envelope_fn fn = claude_envelope_of(luaL_checkstring(L, 1));
  const char *line = luaL_checklstring(L, 2, &len);
  int record = lua_istable(L, 3), n;
  luaL_argcheck(L, fn != NULL, 1, "\"request\", \"control\" or \"response\" expected");
  luaL_argcheck(L, record || lua_isnoneornil(L, 3), 3, "a call record (table) expected");
  lua_settop(L, 3);
  n = fn(L, line, len, 0, (claude_envelope_state *)lua_touserdata(L, lua_upvalueindex(1)));
  if (n > 0 && record && fn != read_response_line) return claude_call_record_fill(L, 3, n, NULL);
  return n;
}

/* core.call_id(v) -> v, or the string of the id v stands for (core.MCP_REQUEST_ID,
 * core.MCP_TOOL_USE_ID) while its line is being handled; raises after. */
static int l_call_id(lua_State *L) {
  const char *s;
  size_t n;
  int held;
  luaL_checkany(L, 1);
  held = claude_call_id(claude_ctx_find(L), L, 1, &s, &n);
  if (held < 0) return luaL_error(L, "an id of a control request read earlier, not held now");
  if (held > 0) lua_pushlstring(L, s, n);
  else lua_settop(L, 1);
  return 1;
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

claude_envelope_fn claude_envelope_of(const char *kind) {
  if (strcmp(kind, "request") == 0) return read_request_line;
  if (strcmp(kind, "control") == 0) return read_control_line;
  if (strcmp(kind, "response") == 0) return read_response_line;
  return NULL;
}

void claude_open_envelope(lua_State *L) {
  /* the state of core.envelope_read's readers, kept as a stream keeps its own
   * (its refs go with the registry) */
  claude_envelope_state_init(
    (claude_envelope_state *)lua_newuserdatauv(L, sizeof(claude_envelope_state), 0));
  lua_pushcclosure(L, l_envelope_read, 1);
  lua_setfield(L, -2, "envelope_read");
  lua_pushlightuserdata(L, (void *)&CALL_MARK);
  lua_setfield(L, -2, "MCP_CALL");
  lua_pushlightuserdata(L, (void *)&RESULT_MARK);
  lua_setfield(L, -2, "RPC_RESULT");
  lua_pushlightuserdata(L, (void *)&REQUEST_ID_MARK);
  lua_setfield(L, -2, "MCP_REQUEST_ID");
  lua_pushlightuserdata(L, (void *)&TOOL_USE_MARK);
  lua_setfield(L, -2, "MCP_TOOL_USE_ID");
  lua_pushcfunction(L, l_call_id);
  lua_setfield(L, -2, "call_id");
  lua_pushcfunction(L, l_usual_call);
  lua_setfield(L, -2, "usual_call");
}
