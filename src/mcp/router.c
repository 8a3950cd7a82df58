/*
 * router.c -- the protocol half of the in-process MCP router.
 * (Over ~600 lines: the whole MCP server protocol, every method and error,
 * in one place, which is the point of this file.)
 *
 * core.mcp_dispatch(server, message) reads one JSON-RPC message the CLI sent
 * to a claude.Server (claude.mcp.tool) and says what to do with it:
 *
 *   "reply", response                     answer at once (results, errors)
 *   "ack"                                 a notification, or a response from
 *                                         the client: nothing to answer
 *   "call", tool, arguments, meta, id     run a tool (tools/call)
 *   "read", resource, uri, params, id     read a resource or template
 *   "prompt", prompt, arguments, id       get a prompt
 *   "cancel", request_id, reason          notifications/cancelled
 *   "complete", completion, argument,     completion/complete for a ref the
 *     context, id                         server has a claude.completion for
 *
 * The router says what to do; the transport decides how. The CLI's control
 * channel wants an answer to every mcp_message, so its user acknowledges
 * "ack" and "cancel" (claude.mcp.router); a plain MCP peer over stdio or
 * HTTP must get nothing for a notification.
 *
 * The protocol's constants live here once and are exported to Lua:
 * core.MCP_PROTOCOL_VERSIONS (oldest first), core.MCP_PROTOCOL_VERSION (the
 * newest), core.LOG_LEVELS; core.jsonrpc_error builds an error response.
 *
 * It keeps no state: answers depend on the message and the server only, so
 * the CLI's two connections to one server (with the same JSON-RPC ids) are
 * served independently. The Lua half (claude.mcp.router) runs the calls.
 * Empty objects and arrays made here carry the claude.json markers; ids are
 * echoed as they came (strings or integers).
 */
#include <stdarg.h>
#include <string.h>

#include "context.h"
#include "json/json.h"
#include "mcp/router.h"

/* Upvalues of mcp_dispatch. */
#define UV_OBJECT lua_upvalueindex(1) /* the claude.json.object metatable */
#define UV_ARRAY lua_upvalueindex(2)  /* the claude.json.array metatable */
#define UV_KEYS lua_upvalueindex(3)   /* the strings below, made once */

/* Strings the hot path (tools/call) looks up or returns: pushed from a table
 * of ready strings, not made from C strings on every message. */
enum key { K_ID = 1, K_METHOD, K_PARAMS, K_JSONRPC, K_NAME, K_TOOLS, K_ARGUMENTS, K_META, K_CALL,
           K_END };
static const char *const KEY_NAMES[K_END] = {
  [K_ID] = "id", [K_METHOD] = "method", [K_PARAMS] = "params", [K_JSONRPC] = "jsonrpc",
  [K_NAME] = "name", [K_TOOLS] = "tools", [K_ARGUMENTS] = "arguments", [K_META] = "_meta",
  [K_CALL] = "call"};

static void push_key(lua_State *L, enum key k) { lua_rawgeti(L, UV_KEYS, k); }

/* t[key] for the table at idx, metamethods included (like lua_getfield). */
static int get_key(lua_State *L, int idx, enum key k) {
  idx = lua_absindex(L, idx);
  push_key(L, k);
  return lua_gettable(L, idx);
}

/* Stack slots of mcp_dispatch. */
#define SERVER 1
#define MESSAGE 2
#define ID 3
#define METHOD 4
#define PARAMS 5

#define PAGE_SIZE 100

/* Protocol versions we speak, oldest first; the last is the newest. */
static const char *const VERSIONS[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
#define NVERSIONS (sizeof VERSIONS / sizeof VERSIONS[0])

/* MCP log levels (RFC 5424 severities), least severe first, for
 * logging/setLevel and the Lua side's ctx.log. */
static const char *const LOG_LEVELS[] = {"debug", "info", "notice", "warning", "error",
                                         "critical", "alert", "emergency", NULL};
#define LOG_LEVEL_LIST "debug, info, notice, warning, error, critical, alert, emergency"

/* The requests we serve; notifications are told apart by their missing id. */
enum method {
  M_INITIALIZE, M_PING, M_TOOLS_LIST, M_TOOLS_CALL, M_RESOURCES_LIST, M_TEMPLATES_LIST,
  M_RESOURCES_READ, M_PROMPTS_LIST, M_PROMPTS_GET, M_SET_LEVEL, M_COMPLETE, M_UNKNOWN
};

static const struct {
  const char *name;
  size_t len;
  enum method m;
} METHODS[] = {
#define METHOD_ROW(s, m) {s, sizeof(s) - 1, m}
  METHOD_ROW("tools/call", M_TOOLS_CALL),
  METHOD_ROW("tools/list", M_TOOLS_LIST),
  METHOD_ROW("initialize", M_INITIALIZE),
  METHOD_ROW("ping", M_PING),
  METHOD_ROW("resources/list", M_RESOURCES_LIST),
  METHOD_ROW("resources/templates/list", M_TEMPLATES_LIST),
  METHOD_ROW("resources/read", M_RESOURCES_READ),
  METHOD_ROW("prompts/list", M_PROMPTS_LIST),
  METHOD_ROW("prompts/get", M_PROMPTS_GET),
  METHOD_ROW("logging/setLevel", M_SET_LEVEL),
  METHOD_ROW("completion/complete", M_COMPLETE),
#undef METHOD_ROW
};

/* The method named by s (M_UNKNOWN for the rest); tools/call is tried first. */
static enum method method_of(const char *s, size_t len) {
  size_t i;
  for (i = 0; i < sizeof METHODS / sizeof METHODS[0]; i++)
    if (METHODS[i].len == len && memcmp(METHODS[i].name, s, len) == 0) return METHODS[i].m;
  return M_UNKNOWN;
}

/* ---- building answers ---------------------------------------------------- */

/* Pushes a new table marked as a JSON object (encodes as {} when empty). */
static void new_object(lua_State *L, int nrec) {
  lua_createtable(L, 0, nrec);
  lua_pushvalue(L, UV_OBJECT);
  lua_setmetatable(L, -2);
}

/* Pushes a new table marked as a JSON array (encodes as [] when empty). */
static void new_array(lua_State *L, int narr) {
  lua_createtable(L, narr, 0);
  lua_pushvalue(L, UV_ARRAY);
  lua_setmetatable(L, -2);
}

/* Pushes JSON null (json.null, a NULL light userdata). */
static void push_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

/* Is the value at idx usable as a JSON-RPC id: a string or an integer? A
 * fraction, or 1e400 (infinity), could not be echoed exactly. */
static int is_id(lua_State *L, int idx) {
  return lua_type(L, idx) == LUA_TSTRING || lua_isinteger(L, idx);
}

/* Pushes "reply" and {jsonrpc = "2.0", id = <id at slot ID, or null>}, the
 * response under construction on top. */
static void push_response(lua_State *L, int has_id) {
  lua_pushliteral(L, "reply");
  lua_createtable(L, 0, 3);
  lua_pushliteral(L, "2.0");
  lua_setfield(L, -2, "jsonrpc");
  if (has_id) lua_pushvalue(L, ID);
  else push_null(L);
  lua_setfield(L, -2, "id");
}

/* Pushes the error object {code = code, message = <message on top>} in
 * place of the message. The one builder of JSON-RPC errors. */
static void push_error_object(lua_State *L, lua_Integer code) {
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, code);
  lua_setfield(L, -2, "code");
  lua_rotate(L, -2, 1); /* error, message */
  lua_setfield(L, -2, "message");
}

/* Pushes "reply" and an error response with a formatted message; returns 2
 * (the number of results). The id is the request's when it has a valid one. */
static int reply_error(lua_State *L, int has_id, int code, const char *fmt, ...) {
  va_list ap;
  push_response(L, has_id);
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  push_error_object(L, code);
  lua_setfield(L, -2, "error");
  return 2;
}

/* core.jsonrpc_error(id, code, message [, data]) -> {jsonrpc = "2.0", id = id
 * (json.null when nil), error = {code, message, data}} */
static int l_jsonrpc_error(lua_State *L) {
  lua_Integer code = luaL_checkinteger(L, 2);
  luaL_checkstring(L, 3);
  lua_settop(L, 4);
  lua_createtable(L, 0, 3);
  lua_pushliteral(L, "2.0");
  lua_setfield(L, -2, "jsonrpc");
  if (lua_isnil(L, 1)) push_null(L);
  else lua_pushvalue(L, 1);
  lua_setfield(L, -2, "id");
  lua_pushvalue(L, 3);
  push_error_object(L, code);
  lua_pushvalue(L, 4);
  lua_setfield(L, -2, "data");
  lua_setfield(L, -2, "error");
  return 1;
}

/* Pops the result on top and returns "reply", {jsonrpc, id, result}. */
static int reply_result(lua_State *L) {
  push_response(L, 1);
  lua_rotate(L, -3, -1); /* "reply", response, result */
  lua_setfield(L, -2, "result");
  return 2;
}

/* Returns "ack": nothing to answer (the transport decides whether its peer
 * wants an acknowledgement anyway). */
static int reply_ack(lua_State *L) {
  lua_pushliteral(L, "ack");
  return 1;
}

/* Length of the list server[field] (0 when it is missing). Stack unchanged. */
static lua_Integer list_len(lua_State *L, const char *field) {
  lua_Integer n = 0;
  if (lua_getfield(L, SERVER, field) == LUA_TTABLE) n = (lua_Integer)lua_rawlen(L, -1);
  lua_pop(L, 1);
  return n;
}

/* Does the server hold resources or resource templates? Stack unchanged. */
static int has_resources(lua_State *L) {
  return list_len(L, "resource_list") > 0 || list_len(L, "resource_template_list") > 0;
}

/* Does the server hold prompts? Stack unchanged. */
static int has_prompts(lua_State *L) { return list_len(L, "prompt_list") > 0; }

/* Does the server hold completions? Stack unchanged. */
static int has_completions(lua_State *L) { return list_len(L, "completion_list") > 0; }

/* Is server[field] true? Stack unchanged. */
static int server_flag(lua_State *L, const char *field) {
  int on;
  lua_getfield(L, SERVER, field);
  on = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return on;
}

/* Pushes a capability object: {listChanged = true} unless the server was
 * made with list_changed = false, plus subscribe = true when asked. */
static void push_capability(lua_State *L, int subscribe) {
  int announce;
  new_object(L, 2);
  lua_getfield(L, SERVER, "list_changed");
  announce = !(lua_isboolean(L, -1) && !lua_toboolean(L, -1));
  lua_pop(L, 1);
  if (announce) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "listChanged");
  }
  if (subscribe) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "subscribe");
  }
}

/* Pushes params[field] (nil when params is not a table). */
static int get_param(lua_State *L, const char *field) {
  if (lua_type(L, PARAMS) != LUA_TTABLE) {
    lua_pushnil(L);
    return LUA_TNIL;
  }
  return lua_getfield(L, PARAMS, field);
}

/* Is the value at idx absent (nil or json.null)? */
static int is_absent(lua_State *L, int idx) {
  return lua_isnil(L, idx) || (lua_islightuserdata(L, idx) && lua_touserdata(L, idx) == NULL);
}

/* ---- methods ------------------------------------------------------------- */

/* initialize: the requested protocol version when we speak it, else the
 * newest; capabilities for what the server holds. Returns "reply", response. */
static int do_initialize(lua_State *L) {
  size_t i, len = 0;
  const char *want;
  int found = 0;
  new_object(L, 4); /* result */
  get_param(L, "protocolVersion");
  want = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
  for (i = 0; want != NULL && i < NVERSIONS; i++)
    if (strlen(VERSIONS[i]) == len && memcmp(VERSIONS[i], want, len) == 0) found = 1;
  if (!found) {
    lua_pop(L, 1);
    lua_pushstring(L, VERSIONS[NVERSIONS - 1]);
  }
  lua_setfield(L, -2, "protocolVersion");

  new_object(L, 5); /* capabilities; listChanged: server:add/remove notify the clients */
  push_capability(L, 0);
  lua_setfield(L, -2, "tools");
  if (has_resources(L) || server_flag(L, "subscribe")) {
    push_capability(L, server_flag(L, "subscribe"));
    lua_setfield(L, -2, "resources");
  }
  if (has_prompts(L)) {
    push_capability(L, 0);
    lua_setfield(L, -2, "prompts");
  }
  if (has_completions(L)) {
    new_object(L, 0);
    lua_setfield(L, -2, "completions");
  }
  new_object(L, 0);
  lua_setfield(L, -2, "logging");
  lua_setfield(L, -2, "capabilities");

  /* serverInfo: the server's own when it says more than its name and version (title,
   * description, websiteUrl, icons: claude.mcp.metadata) */
  if (lua_getfield(L, SERVER, "server_info") != LUA_TTABLE) {
    lua_pop(L, 1);
    new_object(L, 2);
    lua_getfield(L, SERVER, "name");
    lua_setfield(L, -2, "name");
    if (lua_getfield(L, SERVER, "version") != LUA_TSTRING) {
      lua_pop(L, 1);
      lua_pushliteral(L, "1.0.0");
    }
    lua_setfield(L, -2, "version");
  }
  lua_setfield(L, -2, "serverInfo");

  if (lua_getfield(L, SERVER, "instructions") == LUA_TSTRING) lua_setfield(L, -2, "instructions");
  else lua_pop(L, 1);
  return reply_result(L);
}

/* Parses a cursor "<what>:<offset>" made by reply_list; returns the offset,
 * or -1 when the cursor is not one of ours for this list. */
static lua_Integer parse_cursor(const char *s, size_t len, const char *what, lua_Integer n) {
  size_t wlen = strlen(what), i;
  lua_Integer off = 0;
  if (len <= wlen + 1 || len > wlen + 19 || memcmp(s, what, wlen) != 0 || s[wlen] != ':')
    return -1;
  for (i = wlen + 1; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    off = off * 10 + (s[i] - '0');
  }
  return off > 0 && off <= n ? off : -1;
}

/* tools/list, resources/list, resources/templates/list, prompts/list: one
 * page of server:list(what) under `key`, with nextCursor when more follow.
 * Returns "reply", response. */
static int reply_list(lua_State *L, const char *what, const char *key) {
  lua_Integer n, off = 0, page = PAGE_SIZE, i, last;
  int full;
  if (lua_getfield(L, SERVER, "page_size") == LUA_TNUMBER && lua_isinteger(L, -1) &&
      lua_tointeger(L, -1) > 0)
    page = lua_tointeger(L, -1);
  lua_pop(L, 1);

  lua_getfield(L, SERVER, "list");
  lua_pushvalue(L, SERVER);
  lua_pushstring(L, what);
  lua_call(L, 2, 1);
  full = lua_gettop(L);
  n = (lua_Integer)lua_rawlen(L, full);

  get_param(L, "cursor");
  if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    off = parse_cursor(s, len, what, n);
    if (off < 0) return reply_error(L, 1, -32602, "Invalid params: invalid cursor '%s'", s);
  } else if (!is_absent(L, -1)) {
    return reply_error(L, 1, -32602, "Invalid params: 'cursor' must be a string");
  }
  lua_pop(L, 1);

  new_object(L, 2); /* result */
  last = n - off > page ? off + page : n;
  if (off == 0 && last == n) {
    lua_pushvalue(L, full);
  } else {
    new_array(L, (int)(last - off));
    for (i = off + 1; i <= last; i++) {
      lua_rawgeti(L, full, i);
      lua_rawseti(L, -2, i - off);
    }
  }
  lua_setfield(L, -2, key);
  if (last < n) {
    lua_pushfstring(L, "%s:%I", what, (lua_Integer)last);
    lua_setfield(L, -2, "nextCursor");
  }
  return reply_result(L);
}

/* tools/call -> "call", tool, arguments, meta, id (or an error reply). */
static int do_call(lua_State *L) {
  int name;
  if (lua_type(L, PARAMS) != LUA_TTABLE)
    return reply_error(L, 1, -32602, "Invalid params: tools/call needs params with a tool name");
  if (get_key(L, PARAMS, K_NAME) != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'name' must be a string");
  name = lua_gettop(L);
  if (get_key(L, SERVER, K_TOOLS) != LUA_TTABLE)
    return reply_error(L, 1, -32602, "Unknown tool: '%s'", lua_tostring(L, name));
  lua_pushvalue(L, name);
  if (lua_rawget(L, -2) == LUA_TNIL)
    return reply_error(L, 1, -32602, "Unknown tool: '%s'", lua_tostring(L, name));
  push_key(L, K_CALL);
  lua_rotate(L, -2, 1); /* ..., "call", tool */
  get_key(L, PARAMS, K_ARGUMENTS);
  if (is_absent(L, -1)) {
    lua_pop(L, 1);
    lua_pushnil(L);
  } else if (!lua_istable(L, -1)) {
    return reply_error(L, 1, -32602, "Invalid params: 'arguments' must be an object");
  }
  if (get_key(L, PARAMS, K_META) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
  lua_pushvalue(L, ID);
  return 5;
}

/* resources/read -> "read", resource, uri, params, id: the resource with
 * that uri (params {}), else the first template matching it (params from
 * match), else a -32602 "Resource not found" reply carrying data.uri. */
static int do_read(lua_State *L) {
  int uri, list;
  lua_Integer i, n;
  if (get_param(L, "uri") != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'uri' must be a string");
  uri = lua_gettop(L);
  if (lua_getfield(L, SERVER, "resources") == LUA_TTABLE) {
    lua_pushvalue(L, uri);
    if (lua_rawget(L, -2) != LUA_TNIL) {
      lua_pushliteral(L, "read");
      lua_rotate(L, -2, 1);
      lua_pushvalue(L, uri);
      lua_createtable(L, 0, 0);
      lua_pushvalue(L, ID);
      return 5;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (lua_getfield(L, SERVER, "resource_template_list") == LUA_TTABLE) {
    list = lua_gettop(L);
    n = (lua_Integer)lua_rawlen(L, list);
    for (i = 1; i <= n; i++) {
      lua_rawgeti(L, list, i); /* template */
      lua_getfield(L, -1, "match");
      lua_pushvalue(L, uri);
      lua_call(L, 1, 1);
      if (lua_istable(L, -1)) {
        lua_pushliteral(L, "read");
        lua_rotate(L, -3, 1); /* "read", template, params */
        lua_pushvalue(L, uri);
        lua_rotate(L, -2, 1); /* "read", template, uri, params */
        lua_pushvalue(L, ID);
        return 5;
      }
      lua_pop(L, 2);
    }
  }
  reply_error(L, 1, -32602, "Resource not found: '%s'", lua_tostring(L, uri));
  lua_getfield(L, -1, "error");
  lua_createtable(L, 0, 1);
  lua_pushvalue(L, uri);
  lua_setfield(L, -2, "uri");
  lua_setfield(L, -2, "data");
  lua_pop(L, 1);
  return 2;
}

/* prompts/get -> "prompt", prompt, arguments, id once prompt.validate
 * accepts the arguments, else a -32602 reply. */
static int do_prompt(lua_State *L) {
  int name, args;
  if (get_param(L, "name") != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'name' must be a string");
  name = lua_gettop(L);
  if (lua_getfield(L, SERVER, "prompts") != LUA_TTABLE)
    return reply_error(L, 1, -32602, "Unknown prompt: '%s'", lua_tostring(L, name));
  lua_pushvalue(L, name);
  if (lua_rawget(L, -2) == LUA_TNIL)
    return reply_error(L, 1, -32602, "Unknown prompt: '%s'", lua_tostring(L, name));
  lua_getfield(L, PARAMS, "arguments");
  args = lua_gettop(L);
  if (is_absent(L, args)) {
    lua_pushnil(L);
    lua_replace(L, args);
  } else if (!lua_istable(L, args)) {
    return reply_error(L, 1, -32602, "Invalid params: 'arguments' must be an object");
  }
  lua_getfield(L, args - 1, "validate");
  lua_pushvalue(L, args);
  lua_call(L, 1, 2);
  if (!lua_toboolean(L, -2))
    return reply_error(L, 1, -32602, "Invalid arguments for prompt '%s': %s",
                       lua_tostring(L, name), luaL_optstring(L, -1, "invalid arguments"));
  lua_pop(L, 2);
  lua_pushliteral(L, "prompt");
  lua_pushvalue(L, args - 1);
  lua_pushvalue(L, args);
  lua_pushvalue(L, ID);
  return 4;
}

/* completion/complete -> "complete", completion, argument, context, id for
 * a ref the server has a completion for (server.completions["<type>
 * <name or uri>"]); a valid request for any other ref gets no values. */
static int do_complete(lua_State *L) {
  int ref, arg;
  const char *type, *key_field;
  if (get_param(L, "ref") != LUA_TTABLE)
    return reply_error(L, 1, -32602, "Invalid params: 'ref' must be an object");
  ref = lua_gettop(L);
  if (lua_getfield(L, ref, "type") != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'ref.type' must be a string");
  type = lua_tostring(L, -1);
  if (strcmp(type, "ref/prompt") == 0) key_field = "name";
  else if (strcmp(type, "ref/resource") == 0) key_field = "uri";
  else return reply_error(L, 1, -32602, "Invalid params: unknown ref type '%s'", type);
  if (lua_getfield(L, ref, key_field) != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'ref.%s' must be a string", key_field);
  if (get_param(L, "argument") != LUA_TTABLE)
    return reply_error(L, 1, -32602, "Invalid params: 'argument' must be an object");
  arg = lua_gettop(L);
  if (lua_getfield(L, arg, "name") != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'argument.name' must be a string");
  if (lua_getfield(L, arg, "value") != LUA_TSTRING)
    return reply_error(L, 1, -32602, "Invalid params: 'argument.value' must be a string");
  lua_pop(L, 2);
  if (lua_getfield(L, SERVER, "completions") == LUA_TTABLE) {
    lua_pushfstring(L, "%s %s", type, lua_tostring(L, ref + 2));
    if (lua_rawget(L, -2) != LUA_TNIL) {
      lua_pushliteral(L, "complete");
      lua_rotate(L, -2, 1); /* "complete", completion */
      lua_pushvalue(L, arg);
      get_param(L, "context");
      if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_pushnil(L);
      }
      lua_pushvalue(L, ID);
      return 5;
    }
  }
  new_object(L, 1); /* result */
  new_object(L, 2);
  new_array(L, 0);
  lua_setfield(L, -2, "values");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "hasMore");
  lua_setfield(L, -2, "completion");
  return reply_result(L);
}

/* logging/setLevel: checks the level and answers {}. */
static int do_set_level(lua_State *L) {
  int i;
  const char *level = get_param(L, "level") == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  for (i = 0; level != NULL && LOG_LEVELS[i] != NULL; i++) {
    if (strcmp(LOG_LEVELS[i], level) == 0) {
      new_object(L, 0);
      return reply_result(L);
    }
  }
  return reply_error(L, 1, -32602, "Invalid params: 'level' must be one of %s", LOG_LEVEL_LIST);
}

/* A notification: notifications/cancelled with a request id gives
 * "cancel", request_id, reason; every other one (and a malformed cancel)
 * gives "ack". */
static int do_notification(lua_State *L, const char *method, size_t len) {
  static const char CANCELLED[] = "notifications/cancelled";
  if (len == sizeof CANCELLED - 1 && memcmp(method, CANCELLED, len) == 0 &&
      lua_type(L, PARAMS) == LUA_TTABLE) {
    lua_pushliteral(L, "cancel");
    lua_getfield(L, PARAMS, "requestId");
    if (is_id(L, -1)) {
      if (lua_getfield(L, PARAMS, "reason") != LUA_TSTRING) {
        lua_pop(L, 1);
        lua_pushnil(L);
      }
      return 3;
    }
  }
  return reply_ack(L);
}

/* Whether the string at idx is "2.0": its length, then three bytes. (glibc's
 * strcmp takes a slower path when either string lies near the end of a page,
 * so with it the cost of every message moved with the layout of the binary.) */
static int is_jsonrpc_2(lua_State *L, int idx) {
  size_t n;
  const char *s = lua_tolstring(L, idx, &n);
  return n == 3 && memcmp(s, "2.0", 3) == 0;
}

/* core.mcp_dispatch(server, message) -> op, ... (see the top of this file).
 * `message` is the decoded JSON-RPC object, or its JSON text; anything else
 * is an invalid request. Raises only when `server` is not a table. */
static int l_mcp_dispatch(lua_State *L) {
  size_t len;
  const char *method;
  int has_id, t;
  luaL_checktype(L, SERVER, LUA_TTABLE);
  lua_settop(L, MESSAGE);
  if (lua_type(L, MESSAGE) == LUA_TSTRING) {
    const char *text = lua_tolstring(L, MESSAGE, &len);
    if (!claude_json_decode_push(L, text, len))
      return reply_error(L, 0, -32700, "Parse error: %s", lua_tostring(L, -1));
    lua_replace(L, MESSAGE);
  }
  if (!lua_istable(L, MESSAGE))
    return reply_error(L, 0, -32600, "Invalid Request: a JSON-RPC message must be an "
                       "object, got %s", luaL_typename(L, MESSAGE));
  t = get_key(L, MESSAGE, K_ID);                        /* ID */
  has_id = t != LUA_TNIL;
  if (has_id && !is_id(L, ID))
    return reply_error(L, 0, -32600, "Invalid Request: 'id' must be a string or an integer");
  t = get_key(L, MESSAGE, K_METHOD);                    /* METHOD */
  get_key(L, MESSAGE, K_PARAMS);                        /* PARAMS */
  if (get_key(L, MESSAGE, K_JSONRPC) != LUA_TSTRING || !is_jsonrpc_2(L, -1))
    return reply_error(L, has_id, -32600, "Invalid Request: 'jsonrpc' must be \"2.0\"");
  lua_pop(L, 1);
  if (t != LUA_TSTRING) {
    /* A response from the client: nothing to answer. */
    if (t == LUA_TNIL && has_id) {
      lua_getfield(L, MESSAGE, "result");
      lua_getfield(L, MESSAGE, "error");
      if (!lua_isnil(L, -1) || !lua_isnil(L, -2)) return reply_ack(L);
    }
    return reply_error(L, has_id, -32600, "Invalid Request: 'method' must be a string");
  }
  method = lua_tolstring(L, METHOD, &len);
  if (!has_id) return do_notification(L, method, len);
  if (!is_absent(L, PARAMS) && !lua_istable(L, PARAMS))
    return reply_error(L, 1, -32602, "Invalid params: 'params' must be an object");
  switch (method_of(method, len)) {
    case M_TOOLS_CALL: return do_call(L);
    case M_TOOLS_LIST: return reply_list(L, "tools", "tools");
    case M_INITIALIZE: return do_initialize(L);
    case M_PING: new_object(L, 0); return reply_result(L);
    case M_SET_LEVEL: return do_set_level(L);
    case M_RESOURCES_LIST:
      if (has_resources(L)) return reply_list(L, "resources", "resources");
      break;
    case M_TEMPLATES_LIST:
      if (has_resources(L)) return reply_list(L, "resource_templates", "resourceTemplates");
      break;
    case M_RESOURCES_READ:
      if (has_resources(L)) return do_read(L);
      break;
    case M_PROMPTS_LIST:
      if (has_prompts(L)) return reply_list(L, "prompts", "prompts");
      break;
    case M_PROMPTS_GET:
      if (has_prompts(L)) return do_prompt(L);
      break;
    case M_COMPLETE:
      if (has_completions(L)) return do_complete(L);
      break;
    case M_UNKNOWN: break;
  }
  return reply_error(L, 1, -32601, "Method not found: '%s'", method);
}

/* Adds mcp_dispatch, jsonrpc_error and the protocol's constants to the
 * module table on top of the stack; needs the JSON marker metatables
 * (claude_open_json first). */
void claude_open_router(lua_State *L) {
  int i;
  luaL_getmetatable(L, "claude.json.object");
  luaL_getmetatable(L, "claude.json.array");
  if (!lua_istable(L, -1) || !lua_istable(L, -2))
    luaL_error(L, "claude_open_router: claude_open_json must run first");
  lua_createtable(L, K_END - 1, 0);
  for (i = K_ID; i < K_END; i++) {
    lua_pushstring(L, KEY_NAMES[i]);
    lua_rawseti(L, -2, (lua_Integer)i);
  }
  lua_pushcclosure(L, l_mcp_dispatch, 3);
  lua_setfield(L, -2, "mcp_dispatch");
  lua_pushcfunction(L, l_jsonrpc_error);
  lua_setfield(L, -2, "jsonrpc_error");
  lua_createtable(L, (int)NVERSIONS, 0);
  for (i = 0; i < (int)NVERSIONS; i++) {
    lua_pushstring(L, VERSIONS[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "MCP_PROTOCOL_VERSIONS");
  lua_pushstring(L, VERSIONS[NVERSIONS - 1]);
  lua_setfield(L, -2, "MCP_PROTOCOL_VERSION");
  lua_createtable(L, 8, 0);
  for (i = 0; LOG_LEVELS[i] != NULL; i++) {
    lua_pushstring(L, LOG_LEVELS[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "LOG_LEVELS");
}
