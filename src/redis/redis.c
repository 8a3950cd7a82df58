/*
 * redis.c -- claude.core.Redis: one connection to a Redis server through
 * hiredis's asynchronous API on the state's libuv loop (libhiredis is loaded
 * on first use, see dynlib.h). What waits, reconnects, authenticates and
 * resubscribes is Lua's (claude.mcp.server.redis); this file resolves the
 * name (uv_getaddrinfo: hiredis would block the loop on it), connects to the
 * address under a timeout of its own, sends commands, subscribes and closes,
 * never blocking the loop.
 *
 *   local c, err = core.redis_connect(host, port, on_event [, timeout [, max_reply]])
 *     -- on_event("connected"), then at most once on_event("closed", why)
 *   c:command({ "SET", key, value }, function(reply, err, kind) end)
 *   c:subscribe(channel, function(kind, channel, payload) end)  -- each message
 *   c:close()
 *
 * Ownership: the connection (redis_conn) is freed when its Lua box let go of
 * it (close, __gc) and every libuv handle and request of it ended: the name's
 * resolution, the connect timer, the poll handle (closed by hiredis's cleanup
 * hook when it frees its context). hiredis owns each command's redis_cmd
 * until it calls the command's callback for the last time (a reply, or NULL
 * when the context goes).
 */
#include <stdio.h>
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

enum { RESOLVING, CONNECTING, UP, DOWN };

typedef struct redis_conn {
  claude_handle hdr;
  redisAsyncContext *ac; /* NULL before the connect and once hiredis freed it */
  uv_getaddrinfo_t resolve;
  uv_timer_t timer; /* the connect timeout */
  uv_poll_t poll;
  char host[256];
  int port;
  int phase;        /* RESOLVING, CONNECTING, UP, DOWN */
  size_t max_reply; /* bytes a reply may hold back in hiredis's buffer */
  int handles;      /* libuv handles and requests of ours not closed yet */
  int timer_open;
  int events;       /* what the poll watches */
  int event_ref;    /* on_event, until close or the "closed" event */
  int closed;       /* closed by Lua (or the state): no more calls into Lua */
  int dying;        /* hiredis is freeing the context: no command, no free */
  int in_handler;   /* inside redisAsyncHandleRead/Write: a free waits for its end */
  int free_pending; /* to free after the handler (closed, or a reply too large) */
  int released;     /* the Lua box let go */
  char why[160];    /* why we ended the connection (a timeout, a reply too large) */
} redis_conn;

typedef struct redis_cmd {
  redis_conn *conn;
  int ref;        /* the Lua callback */
  int persistent; /* a subscription: called for each message, NULL at the end */
} redis_cmd;

/* The struct outlives its handles and its request, and the Lua box. */
static void maybe_free(redis_conn *c) {
  if (c->released && c->handles == 0) free(c);
}

static void opened(redis_conn *c) {
  c->handles++;
  claude_handle_opened(c->hdr.ctx);
}

static void gone(redis_conn *c) {
  claude_ctx *ctx = c->hdr.ctx;
  c->handles--;
  maybe_free(c); /* (the context after: it may go with its last handle) */
  claude_handle_closed(ctx);
}

static void handle_closed(uv_handle_t *h) {
  gone((redis_conn *)h->data);
}

static void close_timer(redis_conn *c) {
  if (!c->timer_open) return;
  c->timer_open = 0;
  uv_close((uv_handle_t *)&c->timer, handle_closed);
}

/* ------------------------------------------------------------------------
 * hiredis's event hooks, on one uv_poll_t the connection owns
 * ------------------------------------------------------------------------ */

static void poll_ready(uv_poll_t *h, int status, int events) {
  redis_conn *c = (redis_conn *)h->data;
  if (status < 0) events = UV_READABLE; /* a read finds the socket's error */
  c->in_handler = 1;
  if (c->ac != NULL && (events & UV_READABLE)) {
    hi.redisAsyncHandleRead(c->ac);
    /* what hiredis holds back is the part of a reply not complete yet: past the bound,
     * the connection goes rather than the memory */
    if (c->ac != NULL && !c->dying && c->ac->c.reader->len > c->max_reply && !c->why[0]) {
      snprintf(c->why, sizeof c->why, "a reply larger than %zu bytes (max_reply)",
               c->max_reply);
      c->free_pending = 1;
    }
  }
  if (c->ac != NULL && (events & UV_WRITABLE)) hi.redisAsyncHandleWrite(c->ac);
  c->in_handler = 0;
  if (c->free_pending && c->ac != NULL && !c->dying) {
    c->free_pending = 0;
    hi.redisAsyncFree(c->ac);
  }
}

static void watch(redis_conn *c, int add, int del) {
  c->events = (c->events | add) & ~del;
  if (uv_is_closing((uv_handle_t *)&c->poll)) return;
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
  uv_close((uv_handle_t *)&c->poll, handle_closed);
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

/* The connection will not come up (the name, the timeout, the connect): said once. */
static void give_up(redis_conn *c, const char *why) {
  int phase = c->phase;
  c->phase = DOWN;
  close_timer(c);
  if (!c->why[0]) snprintf(c->why, sizeof c->why, "%s", why);
  if (phase == RESOLVING) uv_cancel((uv_req_t *)&c->resolve); /* (else it ends by itself) */
  if (c->ac != NULL && !c->dying) {
    if (c->in_handler) c->free_pending = 1;
    else hi.redisAsyncFree(c->ac); /* (not connected: no disconnect callback) */
  }
  report(c, "closed", c->why);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  redis_conn *c = (redis_conn *)ac->data;
  close_timer(c);
  if (status != REDIS_OK) {
    c->dying = 1; /* hiredis frees the context when this returns */
    c->phase = DOWN;
    report(c, "closed", ac->errstr[0] ? ac->errstr : "could not connect");
    return;
  }
  c->phase = UP;
  report(c, "connected", NULL); /* (inside poll_ready: a close waits for hiredis) */
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  redis_conn *c = (redis_conn *)ac->data;
  c->phase = DOWN;
  report(c, "closed", c->why[0] ? c->why : status == REDIS_OK ? "closed"
                      : (ac->errstr[0] ? ac->errstr : "lost"));
}

static void on_timeout(uv_timer_t *t) {
  redis_conn *c = (redis_conn *)t->data;
  char why[64];
  if (c->phase != RESOLVING && c->phase != CONNECTING) return;
  snprintf(why, sizeof why, "no connection within %g s",
           (double)uv_timer_get_repeat(t) / 1000.0);
  give_up(c, why);
}

/* The name resolved (on libuv's threads, not blocking the loop): connect to its address. */
static void connect_to(redis_conn *c, const char *ip) {
  claude_ctx *ctx = c->hdr.ctx;
  redisAsyncContext *ac;
  c->phase = CONNECTING; /* (the resolve's callback is running: nothing to cancel) */
  ac = hi.redisAsyncConnect(ip, c->port);
  if (ac == NULL || ac->err) {
    char why[160];
    snprintf(why, sizeof why, "%s", ac ? ac->errstr : "out of memory");
    if (ac) hi.redisAsyncFree(ac);
    give_up(c, why);
    return;
  }
  if (uv_poll_init(ctx->loop, &c->poll, ac->c.fd) != 0) {
    hi.redisAsyncFree(ac);
    give_up(c, "the socket cannot be watched");
    return;
  }
  c->poll.data = c;
  opened(c);
  c->ac = ac;
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
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  redis_conn *c = (redis_conn *)req->data;
  struct addrinfo *ai, *pick = NULL;
  char ip[INET6_ADDRSTRLEN], why[sizeof c->host + 64];
  /* IPv4 first, as hiredis does with a name */
  for (ai = status == 0 ? res : NULL; ai != NULL && pick == NULL; ai = ai->ai_next)
    if (ai->ai_family == AF_INET) pick = ai;
  for (ai = status == 0 ? res : NULL; ai != NULL && pick == NULL; ai = ai->ai_next)
    if (ai->ai_family == AF_INET6) pick = ai;
  if (c->phase == RESOLVING && !c->closed) {
    if (pick == NULL) {
      snprintf(why, sizeof why, "cannot resolve '%s': %s", c->host,
               status < 0 ? uv_strerror(status) : "no address");
      give_up(c, why);
    } else {
      if (pick->ai_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)pick->ai_addr, ip, sizeof ip);
      else
        uv_ip6_name((const struct sockaddr_in6 *)pick->ai_addr, ip, sizeof ip);
      connect_to(c, ip);
    }
  }
  if (res != NULL) uv_freeaddrinfo(res);
  gone(c); /* last: a close from Lua above leaves the struct to this */
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
      if (c->why[0]) lua_pushfstring(L, "the connection to Redis was dropped: %s", c->why);
      else lua_pushstring(L, "the connection to Redis was lost");
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
  close_timer(c);
  if (c->phase == RESOLVING) uv_cancel((uv_req_t *)&c->resolve); /* (its callback frees) */
  c->phase = DOWN;
  if (c->ac == NULL || c->dying) return;
  if (c->in_handler) c->free_pending = 1;
  else hi.redisAsyncFree(c->ac);
}

static void conn_teardown(claude_handle *h) {
  shut((redis_conn *)h);
}

/* core.redis_connect(host, port, on_event [, timeout [, max_reply]]) -> claude.core.Redis, or
 * nil, err, kind. The name is resolved on libuv's threads, then its address connected;
 * timeout (seconds, 0 or none: no bound) bounds both, max_reply (bytes, 512 MiB: Redis's own
 * bound) the part of a reply hiredis holds back. */
static int l_connect(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  size_t host_len;
  const char *host = luaL_checklstring(L, 1, &host_len);
  lua_Integer port = luaL_checkinteger(L, 2);
  double timeout = luaL_optnumber(L, 4, 0);
  lua_Integer max_reply = luaL_optinteger(L, 5, (lua_Integer)512 * 1024 * 1024);
  struct addrinfo hints;
  char why[256];
  redis_conn **box, *c;
  int rc, box_idx;
  luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_argcheck(L, host_len > 0 && host_len < sizeof c->host, 1, "a host name expected");
  luaL_argcheck(L, port > 0 && port < 65536, 2, "a port number expected");
  luaL_argcheck(L, timeout >= 0 && timeout < 1e9, 4, "seconds expected");
  luaL_argcheck(L, max_reply > 0, 5, "a number of bytes expected");
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libhiredis could not be loaded: %s", why);
    lua_pushliteral(L, "ENOSYS");
    return 3;
  }
  box = (redis_conn **)lua_newuserdatauv(L, sizeof(*box), 0);
  box_idx = lua_gettop(L);
  *box = NULL;
  luaL_setmetatable(L, MT_REDIS);
  c = (redis_conn *)calloc(1, sizeof(*c));
  if (c == NULL) return luaL_error(L, "out of memory");
  memcpy(c->host, host, host_len + 1);
  c->port = (int)port;
  c->max_reply = (size_t)max_reply;
  c->hdr.ctx = ctx;
  c->phase = RESOLVING;
  c->resolve.data = c;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  rc = uv_getaddrinfo(ctx->loop, &c->resolve, on_resolved, c->host, NULL, &hints);
  if (rc != 0) {
    free(c);
    return claude_push_uv_error(L, rc);
  }
  opened(c);
  if (timeout > 0) {
    uv_timer_init(ctx->loop, &c->timer);
    c->timer.data = c;
    c->timer_open = 1;
    opened(c);
    /* (the repeat holds the timeout for the message; the callback stops it) */
    uv_timer_start(&c->timer, on_timeout, (uint64_t)(timeout * 1000 + 0.5),
                   (uint64_t)(timeout * 1000 + 0.5));
    uv_unref((uv_handle_t *)&c->timer); /* (the resolve and the socket hold the loop) */
  }
  c->event_ref = claude_ref(ctx, L, 3);
  claude_object_link(ctx, &c->hdr, "redis", conn_teardown);
  *box = c;
  claude_wake(ctx);
  lua_pushvalue(L, box_idx);
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
    if (c->phase == RESOLVING) lua_pushliteral(L, "the connection to Redis is not up yet");
    else lua_pushliteral(L, "the connection to Redis was lost");
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
                  : c->phase == RESOLVING || c->phase == CONNECTING ? "connecting"
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
