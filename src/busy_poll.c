/*
 * busy_poll.c -- a short wait with the CPU held, just before the loop would
 * sleep, while its turns come back fast.
 *
 * One request at a time to a peer on another CPU is a ping-pong: each answer
 * wakes a CPU that went idle, and in a virtual machine that wake costs more
 * than either side's work (a pipe round trip between two processes on two
 * vCPUs: about 13 us when both sleep, 9 us when the waiting side polls). A
 * prepare handle runs just before libuv blocks; when the last turn of the
 * loop (its sleep and its work together) took at most the window and handed
 * a peer something to answer (a request, a response on a kept-alive
 * connection), it polls the loop's descriptor without blocking until
 * something is ready or the window has passed. A window that passed in vain
 * makes the next turn longer than the window, so the wait after it sleeps at
 * once: a loop that goes quiet polls one window, then sleeps as before. A
 * loop that only reads (a stream of messages) never polls: sleeping lets the
 * writer fill the pipe, and one read takes many messages. The guest kernel's
 * haltpoll and KVM's halt polling do the same for an idle CPU.
 *
 * Off where it cannot help: with one CPU (the poll would hold the CPU the
 * peer needs), on a loop the application owns (its policy) unless it sets a
 * window, and in a turn that must not sleep (claude.step(0)'s).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <sched.h>
#include <stdlib.h>

#include "context.h"

/* The window by default, in microseconds: a round trip to a local peer that
 * answers at once fits, a peer that thinks does not. */
#define DEFAULT_WINDOW_US 50
#define MAX_WINDOW_US 1000

typedef struct claude_busy_poll {
  claude_handle hdr;
  uv_prepare_t prepare; /* just before the loop sleeps */
  uv_idle_t flush;      /* a turn that does not sleep, so that the poll sees every descriptor */
  int flushing;         /* flush is started */
  int handles;          /* open libuv handles: the object goes with the last */
  uint64_t window_ns;   /* how long a poll lasts; 0: off */
  uint64_t last;        /* when the last turn began its poll (uv_hrtime) */
  unsigned writes;      /* the context's writes then */
  /* claude.busy_poll_stats(): the turns the poll is for (fast, after a
   * write), the polls, those that saw work come, and their time */
  uint64_t fast, spins, hits, spun_ns;
} claude_busy_poll;

static void flush_turn(uv_idle_t *h) { (void)h; }

static void before_sleep(uv_prepare_t *h) {
  claude_busy_poll *bp = (claude_busy_poll *)h->data;
  claude_ctx *ctx = bp->hdr.ctx;
  uint64_t now = uv_hrtime(), deadline;
  uint64_t turn = now - bp->last;
  int flushed = bp->flushing, wrote = ctx->writes != bp->writes;
  struct pollfd pfd;
  bp->last = now;
  bp->writes = ctx->writes;
  if (flushed) {
    uv_idle_stop(&bp->flush);
    bp->flushing = 0;
  }
  if (turn > bp->window_ns || !(wrote || flushed) || ctx->run_nowait) return;
  bp->fast++; /* every poll follows one of these: a spec's measure of what the load allowed */
  if (uv_backend_timeout(ctx->loop) == 0) {
    /* The loop will not sleep, or it has descriptors to add to its epoll set
     * first (a stream that reads again): a poll of the set would not see
     * them. One turn that does not sleep adds them; the next one polls. */
    if (!flushed) {
      uv_idle_start(&bp->flush, flush_turn);
      bp->flushing = 1;
    }
    return;
  }
  pfd.fd = uv_backend_fd(ctx->loop);
  pfd.events = POLLIN;
  deadline = now + bp->window_ns;
  bp->spins++;
  do {
    if (poll(&pfd, 1, 0) > 0) {
      bp->hits++;
      break;
    }
    sched_yield(); /* a task waiting for this CPU runs first */
  } while ((now = uv_hrtime()) < deadline);
  bp->spun_ns += now - bp->last;
  bp->last = now;
}

static void handle_closed(uv_handle_t *h) {
  claude_busy_poll *bp = (claude_busy_poll *)h->data;
  claude_handle_closed(bp->hdr.ctx);
  if (--bp->handles == 0) free(bp);
}

static void busy_teardown(claude_handle *h) {
  claude_busy_poll *bp = (claude_busy_poll *)h;
  bp->hdr.ctx->busy_poll = NULL;
  uv_close((uv_handle_t *)&bp->prepare, handle_closed);
  uv_close((uv_handle_t *)&bp->flush, handle_closed);
}

/* The context's busy poll, made on first use: its handles unreferenced (they
 * never keep the loop alive), closed with the context's objects. */
static claude_busy_poll *busy_poll_of(lua_State *L, claude_ctx *ctx) {
  claude_busy_poll *bp = ctx->busy_poll;
  if (bp != NULL) return bp;
  bp = (claude_busy_poll *)calloc(1, sizeof(*bp));
  if (bp == NULL) luaL_error(L, "out of memory");
  uv_prepare_init(ctx->loop, &bp->prepare);
  uv_idle_init(ctx->loop, &bp->flush);
  bp->prepare.data = bp->flush.data = bp;
  uv_unref((uv_handle_t *)&bp->prepare);
  uv_unref((uv_handle_t *)&bp->flush);
  bp->handles = 2;
  claude_handle_opened(ctx);
  claude_handle_opened(ctx);
  claude_object_link(ctx, &bp->hdr, "busy_poll", busy_teardown);
  ctx->busy_poll = bp;
  return bp;
}

static void set_window(claude_busy_poll *bp, uint64_t us) {
  bp->window_ns = us * 1000;
  if (us == 0) {
    uv_prepare_stop(&bp->prepare);
    uv_idle_stop(&bp->flush);
    bp->flushing = 0;
    return;
  }
  bp->last = 0; /* the first turn is a long one: no poll before a fast turn is seen */
  uv_prepare_start(&bp->prepare, before_sleep);
}

static int cpus_available(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

/* core.busy_poll_start(): the window of a new state: CLAUDELUA_BUSY_POLL_US
 * (a deployment's say, before any script's), else the default where it can
 * help: a loop the context owns, and more than one CPU. */
static int l_busy_poll_start(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  const char *env = getenv("CLAUDELUA_BUSY_POLL_US");
  if (ctx->busy_poll != NULL) return 0; /* set already */
  if (env != NULL && *env != '\0') {
    char *end;
    unsigned long us = strtoul(env, &end, 10);
    if (*end == '\0' && us <= MAX_WINDOW_US) set_window(busy_poll_of(L, ctx), us);
  } else if (ctx->owns_loop && cpus_available() > 1) {
    set_window(busy_poll_of(L, ctx), DEFAULT_WINDOW_US);
  }
  return 0;
}

/* core.busy_poll([microseconds]) -> the window before (0: off) */
static int l_busy_poll(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  lua_Integer us;
  lua_pushinteger(L, ctx->busy_poll ? (lua_Integer)(ctx->busy_poll->window_ns / 1000) : 0);
  if (lua_isnoneornil(L, 1)) return 1;
  us = luaL_checkinteger(L, 1);
  luaL_argcheck(L, us >= 0 && us <= MAX_WINDOW_US, 1, "microseconds from 0 to 1000 expected");
  set_window(busy_poll_of(L, ctx), (uint64_t)us);
  return 1;
}

/* core.busy_poll_stats() -> {fast=, spins=, hits=, seconds=}: the fast
 * turns after a write so far, the polls, those that saw work come, and the
 * time they took */
static int l_busy_poll_stats(lua_State *L) {
  claude_busy_poll *bp = claude_ctx_get(L)->busy_poll;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, bp ? (lua_Integer)bp->fast : 0);
  lua_setfield(L, -2, "fast");
  lua_pushinteger(L, bp ? (lua_Integer)bp->spins : 0);
  lua_setfield(L, -2, "spins");
  lua_pushinteger(L, bp ? (lua_Integer)bp->hits : 0);
  lua_setfield(L, -2, "hits");
  lua_pushnumber(L, bp ? (double)bp->spun_ns / 1e9 : 0.0);
  lua_setfield(L, -2, "seconds");
  return 1;
}

static const luaL_Reg functions[] = {{"busy_poll", l_busy_poll},
                                     {"busy_poll_start", l_busy_poll_start},
                                     {"busy_poll_stats", l_busy_poll_stats},
                                     {NULL, NULL}};

void claude_open_busy_poll(lua_State *L) { luaL_setfuncs(L, functions, 0); }
