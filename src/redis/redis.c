/*
 * redis.c -- claude.core.Redis: one connection to a Redis server through
 * hiredis's asynchronous API on the state's libuv loop (libhiredis is loaded
 * on first use, see dynlib.h). What waits, reconnects and resubscribes is
 * Lua's (claude.mcp.server.redis); this file connects, sends commands,
 * subscribes and closes, never blocking the loop.
 *
 *   local c, err = core.redis_connect(host, port, on_event)
 *     -- on_event("connected"), then at most once on_event("closed", why)
 *   c:command({ "SET", key, value }, function(reply, err, kind) end)
 *   c:subscribe(channel, function(kind, channel, payload) end)  -- each message
 *   c:close()
 *
 * Ownership: the connection (redis_conn) is freed when both its Lua box let
 * go of it (close, __gc) and its poll handle closed (after hiredis freed its
 * context, whose cleanup hook closes the handle). hiredis owns each command's
 * redis_cmd until it calls the command's callback for the last time (a reply,
 * or NULL when the context goes).
 */
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "context.h"
#include "dynlib.h"
#include "redis/redis.h"

#ifndef CLAUDE_HIREDIS_SONAME
#define CLAUDE_HIREDIS_SONAME "libhiredis.so.0.14"
#endif

#define MT_REDIS "claude.core.Redis"
#define MAX_ARGS 1024

#define HIREDIS_FUNCTIONS(X)                                                                \
  X(redisAsyncConnect) X(redisAsyncSetConnectCallback) X(redisAsyncSetDisconnectCallback) \
  X(redisAsyncCommandArgv) X(redisAsyncFree) X(redisAsyncHandleRead) X(redisAsyncHandleWrite)

static struct {
#define HIREDIS_MEMBER(name) __typeof__(name) *name;
  HIREDIS_FUNCTIONS(HIREDIS_MEMBER)
#undef HIREDIS_MEMBER
} hi;

static const char *const names[] = {
#define HIREDIS_NAME(name) #name,
  HIREDIS_FUNCTIONS(HIREDIS_NAME)
#undef HIREDIS_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_HIREDIS_SONAME, names, hi);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

typedef struct redis_conn {
  claude_handle hdr;
  redisAsyncContext *ac; /* NULL once hiredis freed it */
  uv_poll_t poll;
  int events;       /* what the poll watches */
  int event_ref;    /* on_event, until close or the "closed" event */
  int closed;       /* closed by Lua (or the state): no more calls into Lua */
  int dying;        /* hiredis is freeing the context: no command, no free */
  int in_handler;   /* inside redisAsyncHandleRead/Write: a free waits for its end */
  int free_pending; /* closed inside a handler: free the context after it */
  int released;     /* the Lua box let go */
  int poll_closed;
} redis_conn;

typedef struct redis_cmd {
  redis_conn *conn;
  int ref;        /* the Lua callback */
  int persistent; /* a subscription: called for each message, NULL at the end */
} redis_cmd;

static void maybe_free(redis_conn *c) {
  if (c->released && c->poll_closed) free(c);
}

static void poll_closed(uv_handle_t *h) {
  redis_conn *c = (redis_conn *)h->data;
  claude_handle_closed(c->hdr.ctx);
  c->poll_closed = 1;
  maybe_free(c);
}

/* ------------------------------------------------------------------------
 * hiredis's event hooks, on one uv_poll_t the connection owns
 * ------------------------------------------------------------------------ */

static void poll_ready(uv_poll_t *h, int status, int events) {
  redis_conn *c = (redis_conn *)h->data;
  if (status < 0) events = UV_READABLE; /* a read finds the socket's error */
  c->in_handler = 1;
  if (c->ac != NULL && (events & UV_READABLE)) hi.redisAsyncHandleRead(c->ac);
  if (c->ac != NULL && (events & UV_WRITABLE)) hi.redisAsyncHandleWrite(c->ac);
  c->in_handler = 0;
  if (c->free_pending && c->ac != NULL && !c->dying) {
    c->free_pending = 0;
    hi.redisAsyncFree(c->ac);
  }
}

static void watch(redis_conn *c, int add, int del) {
  c->events = (c->events | add) & ~del;
  if (c->poll_closed || uv_is_closing((uv_handle_t *)&c->poll)) return;
  if (c->events) uv_poll_start(&c->poll, c->events, poll_ready);
  else uv_poll_stop(&c->poll);
}

static void add_read(void *p) { watch((redis_conn *)p, UV_READABLE, 0); }
static void del_read(void *p) { watch((redis_conn *)p, 0, UV_READABLE); }
static void add_write(void *p) { watch((redis_conn *)p, UV_WRITABLE, 0); }
static void del_write(void *p) { watch((redis_conn *)p, 0, UV_WRITABLE); }

/* hiredis frees the context (closed, dropped or never connected) */
static void cleanup(void *p) {
  redis_conn *c = (redis_conn *)p;
  c->ac = NULL;
  c->dying = 1;
  uv_close((uv_handle_t *)&c->poll, poll_closed);
}

/* ------------------------------------------------------------------------
 * Calls into Lua
 * ------------------------------------------------------------------------ */

static int live(redis_conn *c) {
  return !c->closed && !c->hdr.ctx->closing;
}

/* on_event(what [, why]); "closed" is the last one */
static void report(redis_conn *c, const char *what, const char *why) {
  claude_ctx *ctx = c->hdr.ctx;
  lua_State *L;
  int ref = c->event_ref;
  if (!live(c) || ref == LUA_NOREF) return;
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  if (why != NULL) c->event_ref = LUA_NOREF; /* (the "closed" event: the last) */
  lua_pushstring(L, what);
  if (why != NULL) lua_pushstring(L, why);
  else lua_pushnil(L);
  if (why != NULL) claude_unref(ctx, &ref);
  claude_pcall(ctx, L, 2);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  redis_conn *c = (redis_conn *)ac->data;
  if (status != REDIS_OK) {
    c->dying = 1; /* hiredis frees the context when this returns */
    report(c, "closed", ac->errstr[0] ? ac->errstr : "could not connect");
    return;
  }
  report(c, "connected", NULL); /* (inside poll_ready: a close waits for hiredis) */
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  redis_conn *c = (redis_conn *)ac->data;
  report(c, "closed", status == REDIS_OK ? "closed" : (ac->errstr[0] ? ac->errstr : "lost"));
}

static void push_reply(lua_State *L, redisReply *r, int top) {
  size_t i;
  luaL_checkstack(L, 4, "redis reply too deep");
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR: lua_pushlstring(L, r->str, (size_t)r->len); break;
    case REDIS_REPLY_INTEGER: lua_pushinteger(L, (lua_Integer)r->integer); break;
    case REDIS_REPLY_ARRAY:
      lua_createtable(L, (int)r->elements, 0);
      for (i = 0; i < r->elements; i++) {
        push_reply(L, r->element[i], 0);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
      }
      break;
    default: /* nil: false inside an array (a hole would cut it) */
      if (top) lua_pushnil(L);
      else lua_pushboolean(L, 0);
  }
}

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata) {
  redis_cmd *cmd = (redis_cmd *)privdata;
  redis_conn *c = cmd->conn;
  claude_ctx *ctx = c->hdr.ctx;
  redisReply *r = (redisReply *)reply;
  int last = r == NULL || !cmd->persistent;
  (void)ac;
  if (r == NULL) c->dying = 1; /* the context is being freed */
  if (live(c) && cmd->ref != LUA_NOREF) {
    lua_State *L = claude_cb_state(ctx);
    int n = 1;
    lua_rawgeti(L, LUA_REGISTRYINDEX, cmd->ref);
    if (r == NULL) {
      lua_pushnil(L);
      lua_pushstring(L, "the connection to Redis was lost");
      lua_pushliteral(L, "closed");
      n = 3;
    } else if (r->type == REDIS_REPLY_ERROR) {
      lua_pushnil(L);
      push_reply(L, r, 1);
      lua_pushliteral(L, "redis");
      n = 3;
    } else if (cmd->persistent && r->type == REDIS_REPLY_ARRAY) {
      /* a subscription's message: kind, channel, payload */
      size_t i;
      n = 0;
      for (i = 0; i < 3; i++, n++) {
        if (i < r->elements) push_reply(L, r->element[i], 1);
        else lua_pushnil(L);
      }
    } else {
      push_reply(L, r, 1);
    }
    claude_pcall(ctx, L, n);
  }
  if (last) {
    claude_unref(ctx, &cmd->ref);
    free(cmd);
  }
}

/* ------------------------------------------------------------------------
 * The Lua side
 * ------------------------------------------------------------------------ */

static redis_conn **check_box(lua_State *L) {
  return (redis_conn **)claude_check_object(L, 1, MT_REDIS);
}

/* Closes the context (its commands' callbacks get NULL, not called into
 * Lua); the poll handle closes in hiredis's cleanup hook. */
static void shut(redis_conn *c) {
  c->closed = 1;
  claude_unref(c->hdr.ctx, &c->event_ref);
  if (c->ac == NULL || c->dying) return;
  if (c->in_handler) c->free_pending = 1;
  else hi.redisAsyncFree(c->ac);
}

static void conn_teardown(claude_handle *h) {
  shut((redis_conn *)h);
}

/* core.redis_connect(host, port, on_event) -> claude.core.Redis, or nil, err, kind */
static int l_connect(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  const char *host = luaL_checkstring(L, 1);
  lua_Integer port = luaL_checkinteger(L, 2);
  char why[256];
  redis_conn **box, *c;
  redisAsyncContext *ac;
  luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_argcheck(L, port > 0 && port < 65536, 2, "a port number expected");
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libhiredis could not be loaded: %s", why);
    lua_pushliteral(L, "ENOSYS");
    return 3;
  }
  box = (redis_conn **)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  luaL_setmetatable(L, MT_REDIS);
  c = (redis_conn *)calloc(1, sizeof(*c));
  if (c == NULL) return luaL_error(L, "out of memory");
  ac = hi.redisAsyncConnect(host, (int)port);
  if (ac == NULL || ac->err) {
    luaL_pushfail(L);
    lua_pushfstring(L, "Redis at %s:%d: %s", host, (int)port,
                    ac ? ac->errstr : "out of memory");
    lua_pushliteral(L, "connection");
    if (ac) hi.redisAsyncFree(ac);
    free(c);
    return 3;
  }
  if (uv_poll_init(ctx->loop, &c->poll, ac->c.fd) != 0) {
    hi.redisAsyncFree(ac);
    free(c);
    luaL_pushfail(L);
    lua_pushliteral(L, "Redis: the socket cannot be watched");
    lua_pushliteral(L, "connection");
    return 3;
  }
  c->poll.data = c;
  claude_handle_opened(ctx);
  c->ac = ac;
  c->hdr.ctx = ctx;
  ac->data = c;
  ac->ev.data = c;
  ac->ev.addRead = add_read;
  ac->ev.delRead = del_read;
  ac->ev.addWrite = add_write;
  ac->ev.delWrite = del_write;
  ac->ev.cleanup = cleanup;
  hi.redisAsyncSetConnectCallback(ac, on_connect);
  hi.redisAsyncSetDisconnectCallback(ac, on_disconnect);
  add_write(c); /* the connect completes when the socket is writable */
  c->event_ref = claude_ref(ctx, L, 3);
  claude_object_link(ctx, &c->hdr, "redis", conn_teardown);
  *box = c;
  claude_wake(ctx);
  lua_settop(L, 4);
  return 1;
}

static redis_conn *usable(lua_State *L) {
  redis_conn *c = *check_box(L);
  if (c == NULL || c->closed) luaL_error(L, "attempt to use a closed Redis connection");
  return c;
}

/* Sends argv (strings) with callback at fn_idx; pushes true, or nil, err, kind */
static int send_command(lua_State *L, redis_conn *c, int argc, const char **argv, size_t *lens,
                int fn_idx, int persistent) {
  redis_cmd *cmd;
  if (c->ac == NULL || c->dying) {
    luaL_pushfail(L);
    lua_pushliteral(L, "the connection to Redis was lost");
    lua_pushliteral(L, "closed");
    return 3;
  }
  cmd = (redis_cmd *)malloc(sizeof(*cmd));
  if (cmd == NULL) return luaL_error(L, "out of memory");
  cmd->conn = c;
  cmd->persistent = persistent;
  cmd->ref = claude_ref(c->hdr.ctx, L, fn_idx);
  if (hi.redisAsyncCommandArgv(c->ac, on_reply, cmd, argc, argv, lens) != REDIS_OK) {
    claude_unref(c->hdr.ctx, &cmd->ref);
    free(cmd);
    luaL_pushfail(L);
    lua_pushliteral(L, "the connection to Redis is closing");
    lua_pushliteral(L, "closed");
    return 3;
  }
  claude_wake(c->hdr.ctx);
  lua_pushboolean(L, 1);
  return 1;
}

/* c:command({arg, ...}, fn) -> true, or nil, err, kind; fn(reply) or fn(nil, err, kind) */
static int conn_command(lua_State *L) {
  redis_conn *c = usable(L);
  const char *argv[MAX_ARGS];
  size_t lens[MAX_ARGS];
  lua_Integer i, n;
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  n = (lua_Integer)lua_rawlen(L, 2);
  luaL_argcheck(L, n > 0 && n <= MAX_ARGS, 2, "1 to 1024 arguments expected");
  luaL_checkstack(L, (int)n, "too many arguments");
  for (i = 1; i <= n; i++) { /* (left on the stack: a number's string lives there) */
    lua_rawgeti(L, 2, i);
    argv[i - 1] = lua_tolstring(L, -1, &lens[i - 1]);
    if (argv[i - 1] == NULL) return luaL_argerror(L, 2, "strings or numbers expected");
  }
  return send_command(L, c, (int)n, argv, lens, 3, 0);
}

/* c:subscribe(channel, fn) -> true, or nil, err, kind; fn(kind, channel, payload) per message,
 * fn(nil, err, "closed") at the end */
static int conn_subscribe(lua_State *L) {
  redis_conn *c = usable(L);
  const char *argv[2];
  size_t lens[2];
  argv[0] = "SUBSCRIBE";
  lens[0] = 9;
  argv[1] = luaL_checklstring(L, 2, &lens[1]);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  return send_command(L, c, 2, argv, lens, 3, 1);
}

static int conn_close(lua_State *L) {
  redis_conn **box = check_box(L);
  redis_conn *c = *box;
  if (c == NULL) return 0;
  *box = NULL;
  if (!c->closed) {
    claude_object_unlink(&c->hdr);
    shut(c);
  }
  c->released = 1;
  maybe_free(c);
  return 0;
}

static int conn_tostring(lua_State *L) {
  redis_conn *c = *check_box(L);
  lua_pushfstring(L, "claude.core.Redis (%s)", c == NULL || c->closed ? "closed"
                                              : c->ac == NULL || c->dying ? "lost" : "open");
  return 1;
}

static const luaL_Reg conn_methods[] = {
  {"command", conn_command}, {"subscribe", conn_subscribe}, {"close", conn_close},
  {NULL, NULL}};
static const luaL_Reg conn_metamethods[] = {
  {"__gc", conn_close}, {"__close", conn_close}, {"__tostring", conn_tostring},
  {"__index", NULL}, {NULL, NULL}};

void claude_open_redis(lua_State *L) {
  claude_new_class(L, MT_REDIS, conn_metamethods, conn_methods);
  lua_pushcfunction(L, l_connect);
  lua_setfield(L, -2, "redis_connect");
}
