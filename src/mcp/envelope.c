/*
 * envelope.c -- the JSON-RPC envelope of a tool call, read in C: the lines of
 * the hot paths decoded only as far as routing needs. This file reads a
 * tools/call ("request", "control"), its _meta and the modern envelope's cache;
 * mcp/answer.c reads the answer to a request ("response"); both read with the
 * scanner of mcp/envelope_scan.h.
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

#include "mcp/envelope.h"
#include "mcp/envelope_scan.h"
#include "mcp/record.h"

/* The first value of a line read here (light userdata: no JSON value); the
 * ids the control reader held back (claude_call_ids). The answer's is answer.c's. */
static const char CALL_MARK = 'c', REQUEST_ID_MARK = 'i', TOOL_USE_MARK = 't';

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

/* The control channel's two wrappers around a tools/call, one shape: an
 * object of three members, each once, in any order: the first a string that
 * must be `want` (the type), the second a string into `slot` (held back as
 * the request id when `hold`), the third the message inside, read by
 * `inner`. */
typedef struct wrapper {
  struct {
    const char *s;
    size_t n;
  } key[3], want;
  int slot, hold;
  int (*inner)(lua_State *L, reader *r, int outer, int base);
} wrapper;
#define LIT(s) {s, sizeof(s) - 1}

#ifdef __GNUC__
__attribute__((always_inline)) /* (a constant `w`: its keys compared as literals) */
#endif
static inline int read_wrapper(lua_State *L, reader *r, int outer, int base, const wrapper *w) {
  unsigned seen = 0;
  int done = 0, which, ok;
  const char *s;
  size_t n;
  if (!eat(r, '{')) return 0;
  while (!done) {
    which = !key_start(r)                         ? -1
            : key_is(r, w->key[0].s, w->key[0].n) ? 0
            : key_is(r, w->key[1].s, w->key[1].n) ? 1
            : key_is(r, w->key[2].s, w->key[2].n) ? 2
                                                  : -1;
    if ((which = colon(r, which)) < 0 || (seen & (1u << which))) return 0;
    seen |= 1u << which;
    switch (which) {
      case 0: ok = plain_is(r, w->want.s, w->want.n); break;
      case 1:
        ok = plain(r, &s, &n);
        if (ok) {
          if (!(w->hold && hold_id(L, r->ids, 0, s, n))) lua_pushlstring(L, s, n);
          lua_replace(L, base + w->slot);
        }
        break;
      default: ok = w->inner(L, r, outer + 1, base);
    }
    if (!ok || !next_member(r, &done)) return 0;
  }
  return seen == 0x7;
}

/* The control channel's request: subtype, server_name, message (a tools/call). */
static const wrapper MCP_MESSAGE = {{LIT("subtype"), LIT("server_name"), LIT("message")},
                                    LIT("mcp_message"), S_SERVER, 0, read_call};

static int read_request(lua_State *L, reader *r, int outer, int base) {
  return read_wrapper(L, r, outer, base, &MCP_MESSAGE);
}

/* A control_request line: type, request_id, request. */
static const wrapper CONTROL_REQUEST = {{LIT("type"), LIT("request_id"), LIT("request")},
                                        LIT("control_request"), S_REQUEST_ID, 1, read_request};

static int read_control(lua_State *L, reader *r, int base) {
  return read_wrapper(L, r, 0, base, &CONTROL_REQUEST);
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
  if (n > 0 && record && (fn == read_request_line || fn == read_control_line))
    return claude_call_record_fill(L, 3, n, NULL);
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

claude_envelope_fn claude_envelope_of(const char *kind) {
  if (strcmp(kind, "request") == 0) return read_request_line;
  if (strcmp(kind, "control") == 0) return read_control_line;
  if (strcmp(kind, "response") == 0) return claude_envelope_read_response;
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
  lua_pushlightuserdata(L, (void *)&REQUEST_ID_MARK);
  lua_setfield(L, -2, "MCP_REQUEST_ID");
  lua_pushlightuserdata(L, (void *)&TOOL_USE_MARK);
  lua_setfield(L, -2, "MCP_TOOL_USE_ID");
  lua_pushcfunction(L, l_call_id);
  lua_setfield(L, -2, "call_id");
  claude_open_answer(L);
}
