/*
 * core.h -- declarations shared by the C files of claude.core (private).
 */
#ifndef CLAUDE_CORE_H
#define CLAUDE_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <lua.h>
#include <lauxlib.h>
#include <uv.h>

#include "claude.h"

/* Every libuv handle the module owns starts with this header, so the
 * context can list, count and close its own handles even on a loop it
 * shares with the application. */
typedef struct claude_handle claude_handle;
typedef void (*claude_teardown_fn)(claude_handle *h);

struct claude_handle {
  struct claude_ctx *ctx;
  claude_handle *prev, *next;
  claude_teardown_fn teardown; /* closes the object's libuv handles */
  const char *kind;
};

/* Per-lua_State context, kept in the registry (no C globals). */
typedef struct claude_ctx {
  uv_loop_t *loop;
  uv_loop_t own_loop;
  int owns_loop;
  lua_State *L;        /* main thread */
  lua_State *run_L;    /* thread running uv_run through core.run, or NULL */
  int closing;         /* the state is going away: no more callbacks */
  int live_handles;    /* libuv handles not yet closed */
  int live_refs;       /* registry refs held for callbacks */
  int error_ref;       /* Lua error handler, or LUA_NOREF */
  claude_handle objects; /* list head of live objects */
  int pdeathsig;       /* setpriv is available for parent-death signals */
  int step_timer_init;
  uv_timer_t step_timer;
  int defer_init;         /* the check handle below exists */
  uv_check_t defer_check; /* runs deferred functions after this turn's I/O */
  uv_idle_t defer_idle;   /* while work is deferred, the loop must not block */
  int defer_ref;          /* Lua list of deferred functions, or LUA_NOREF */
  int wake_init;          /* the async handle below exists (wake.c) */
  uv_async_t wake;        /* makes the loop's descriptor readable */
} claude_ctx;

/* context.c */
claude_ctx *claude_ctx_get(lua_State *L);
void claude_object_link(claude_ctx *ctx, claude_handle *h, const char *kind,
                        claude_teardown_fn teardown);
void claude_object_unlink(claude_handle *h);
void claude_handle_opened(claude_ctx *ctx);
void claude_handle_closed(claude_ctx *ctx);
int claude_ref(claude_ctx *ctx, lua_State *L, int idx);
void claude_unref(claude_ctx *ctx, int *ref);
lua_State *claude_cb_state(claude_ctx *ctx);
int claude_pcall(claude_ctx *ctx, lua_State *L, int nargs);
int claude_push_uv_error(lua_State *L, int err);
void claude_new_class(lua_State *L, const char *name, const luaL_Reg *meta,
                      const luaL_Reg *methods);
void claude_open_context(lua_State *L);

/* timer.c, signal.c, os.c */
void claude_open_timer(lua_State *L);
void claude_open_signal(lua_State *L);
void claude_open_os(lua_State *L);

/* wake.c: keeps claude.pollfd() truthful for an application that polls it */
void claude_wake_open(claude_ctx *ctx);
void claude_wake(claude_ctx *ctx);
void claude_wake_close(claude_ctx *ctx);

/* process.c */
void claude_open_process(lua_State *L);

/* json.c (encoding, the module's entry points) and json_decode.c */
#define CLAUDE_JSON_ARRAY_MT "claude.json.array"
#define CLAUDE_JSON_OBJECT_MT "claude.json.object"
/* The decoder's nesting limit, counted from the outermost value (a message),
 * far above what a model sends; the encoder takes twice as much, so that a
 * decoded value still encodes inside envelopes. Neither uses the C stack
 * per level. */
#define CLAUDE_JSON_MAX_DEPTH 20000
void claude_open_json(lua_State *L);
/* Pushes the value and returns 1, or pushes nil and a message and returns 0;
 * raises only for memory errors. */
int claude_json_decode_push(lua_State *L, const char *s, size_t len);
/* core.json_peek_ids(line) -> request_id, id, type (json_decode.c) */
int claude_json_peek_ids(lua_State *L);
int claude_json_encode_buffer(lua_State *L, int idx, char **out, size_t *len);
int claude_json_encode_append(lua_State *L, int idx, char **buf, size_t *len, size_t *cap);

/* budget.c: running coroutines under limits (and knowing which run) */
void claude_open_budget(lua_State *L);
/* The per-state watch (below), made with the state's budgets. */
struct claude_watch *claude_budget_watch(lua_State *L);

/* watchdog.c: reaching Lua that holds the loop from outside it: a thread
 * that pokes the state when a budgeted resume's `run` deadline passed, and
 * signals that interrupt. A poke runs w->arm(w->ud, what) in a signal handler
 * on the state's thread. One per state, inside budget.c's state. */
enum { CLAUDE_POKE_BUDGET = 1, CLAUDE_POKE_INTERRUPT = 2 };
enum { CLAUDE_WATCH_IDLE = 0, CLAUDE_WATCH_RUNS = 1, CLAUDE_WATCH_NONE = -1 };

typedef struct claude_watch {
  _Atomic uint64_t deadline; /* uv_hrtime when the running resume's `run` ends; 0: none */
  _Atomic uint64_t wake_at;  /* when the thread looks next; UINT64_MAX: when told */
  _Atomic uint64_t resumes;  /* deadlines published: resumes come and go */
  _Atomic uint64_t period;   /* the `run` of the last one, in nanoseconds */
  void (*arm)(void *ud, int what);
  void *ud;
  int slot;    /* in the process-wide table of watched states, or -1 */
  int status; /* CLAUDE_WATCH_*: no thread yet, it runs, or NONE: no thread (none could
                * be made, or closed): budgets count instead */
  int stop;
  pthread_t owner; /* the thread the state runs on */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int interest[32]; /* interrupting watchers per signal number */
} claude_watch;

void claude_watch_init(claude_watch *w, void (*arm)(void *ud, int what), void *ud);
void claude_watch_close(claude_watch *w);
void claude_watch_wake(claude_watch *w);
void claude_watch_owner(claude_watch *w);
/* Publishes the deadline of the resume starting (`run` nanoseconds from now)
 * or ending (0: none runs; or the enclosing resume's again). On the state's
 * thread; the hot path of every budgeted resume: no lock, and no signal to
 * the thread while it wakes before the deadline (claude_watch_wake). */
static inline void claude_watch_deadline(claude_watch *w, uint64_t d, uint64_t run) {
  atomic_store(&w->deadline, d);
  if (d != 0) {
    uint64_t n = atomic_load_explicit(&w->resumes, memory_order_relaxed);
    atomic_store_explicit(&w->resumes, n + 1, memory_order_relaxed);
    if (run != 0 && atomic_load_explicit(&w->period, memory_order_relaxed) != run)
      atomic_store_explicit(&w->period, run, memory_order_relaxed);
    if (!pthread_equal(w->owner, pthread_self())) claude_watch_owner(w);
    if (d < atomic_load(&w->wake_at)) claude_watch_wake(w);
  }
}
/* Whether the published deadline has passed (for the handler's arm). */
int claude_watch_due(claude_watch *w);
/* A watcher of signal `sig` that interrupts comes (on) or goes; -1 if it
 * cannot (no slot left). */
int claude_watch_interest(claude_watch *w, int sig, int on);
/* The loop ran the watcher of `sig`: a next one is not a second in a row. */
void claude_watch_seen(claude_watch *w, int sig);
/* Whether signal `sig`, watched to interrupt, arrived. */
int claude_watch_received(claude_watch *w, int sig);

/* router.c */
void claude_open_router(lua_State *L);

/* http_server.c (with http_response.c): core.http_listen */
void claude_open_http(lua_State *L);

/* guard.c */
void claude_open_guard(lua_State *L);

/* sse_lua.c (the parser itself is sse.c/sse.h), http_client.c, crypto.c */
struct claude_sse_event;
void claude_sse_push(lua_State *L, const struct claude_sse_event *ev);
void claude_open_sse(lua_State *L);
void claude_open_http_client(lua_State *L);
void claude_open_crypto(lua_State *L);

/* fs.c */
void claude_open_fs(lua_State *L);

/* schema/regex.c: core.regex, ECMA-262 patterns on PCRE2 */
void claude_open_regex(lua_State *L);
/* Line framing over a growing buffer (lines.c). */
typedef struct claude_lines {
  char *data;
  size_t len;       /* bytes held */
  size_t cap;
  size_t start;     /* first byte not handed out yet */
  size_t scanned;   /* bytes already searched for '\n' */
  size_t max_line;  /* ceiling for one line */
  int discarding;   /* skipping the rest of an oversized line */
} claude_lines;

enum { CLAUDE_LINE_NONE, CLAUDE_LINE, CLAUDE_LINE_OVERFLOW };

void claude_lines_init(claude_lines *lb, size_t max_line);
void claude_lines_free(claude_lines *lb);
void claude_lines_space(claude_lines *lb, size_t want, char **buf, size_t *len);
/* After a read of `nread` bytes into the space claude_lines_space gave. */
void claude_lines_feed(claude_lines *lb, size_t nread);
/* The next complete line (CLAUDE_LINE, *line and *len set), a line past the
 * ceiling (CLAUDE_LINE_OVERFLOW, *len = its size so far), or CLAUDE_LINE_NONE. */
int claude_lines_next(claude_lines *lb, const char **line, size_t *len);
/* At EOF: the last line when it had no '\n'; 1 once, then 0. */
int claude_lines_rest(claude_lines *lb, const char **line, size_t *len);

#define CLAUDE_DEFAULT_MAX_LINE ((size_t)64 * 1024 * 1024)

/* stream.c: one byte stream over libuv, whatever carries it (a child's
 * pipe, a socket, the host's own stdin/stdout, a regular file): framed
 * reading into Lua callbacks and coalesced writing. It is embedded in the
 * object that owns it (a claude.core.Process holds three, a
 * claude.core.Stream one), which is told when each of its handles closed. */
typedef union claude_uv_stream {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_pipe_t pipe;
  uv_tcp_t tcp;
  uv_tty_t tty;
  uv_idle_t idle; /* reads a regular file: there is no readiness to wait for */
} claude_uv_stream;

enum { CLAUDE_READ_LINES = 1, CLAUDE_READ_JSON };

typedef struct claude_stream claude_stream;
typedef void (*claude_stream_fn)(claude_stream *s);

struct claude_stream {
  claude_ctx *ctx;
  void *owner;
  claude_stream_fn on_closed; /* one of its handles closed (may free the owner) */
  claude_stream_fn on_ended;  /* reading ended, after the EOF callback */
  const char *name;           /* for messages: "stdin", "stream" */
  int handles;                /* handles of this stream not yet closed */
  /* reading */
  claude_uv_stream rh; /* read handle (also the write handle unless wh says) */
  int r_open;          /* rh initialised and not yet closed */
  int r_file;          /* rh is an idle handle reading r_fd with read(2) */
  int r_fd;
  int mode;            /* CLAUDE_READ_LINES or _JSON; 0: not reading */
  int eof;             /* no more data will come (also: never read) */
  int cb_ref;
  claude_lines lines;
  /* writing */
  uv_stream_t *wh;     /* &rh.stream, &wh_own.stream, or NULL (w_fd, or none) */
  claude_uv_stream wh_own;
  int w_open;          /* wh_own initialised and not yet closed */
  int w_fd;            /* >= 0: a regular file, written with write(2) */
  int writable;        /* accepts writes */
  int wdone;           /* writing ended (shut down, or never wrote) */
  char *wbuf;          /* coalesced bytes, flushed before the loop waits */
  size_t wlen, wcap;
  uv_prepare_t flush;
  int flush_open;
  uv_shutdown_t shutdown;
};

void claude_stream_init(claude_stream *s, claude_ctx *ctx, void *owner, const char *name,
                        claude_stream_fn on_closed, claude_stream_fn on_ended);
/* The pipe a child's stdio is created on (rh); counts the handle. */
uv_pipe_t *claude_stream_pipe(claude_stream *s);
/* Opens fd (pipe, socket, tty or regular file) as rh (which 0) or wh_own
 * (which 1); returns 0, and the stream owns fd from then on, or a libuv
 * error, and fd is still the caller's. */
int claude_stream_open_fd(claude_stream *s, int fd, int which);
/* Makes the stream writable on its write handle (wh_own if open, else rh). */
void claude_stream_writer(claude_stream *s);
/* Starts reading rh: every line (or JSON value) goes to the function cb_ref. */
void claude_stream_read_start(claude_stream *s, int mode, int cb_ref, size_t max_line);
/* Reading ends here: what is held is delivered, then EOF (idempotent). */
void claude_stream_end(claude_stream *s);
/* Ends writing once the queued bytes are gone (uv_shutdown). */
void claude_stream_close_write(claude_stream *s);
/* Closes every handle now (queued writes are dropped) and drops the callback. */
void claude_stream_close(claude_stream *s);
/* Frees the buffers once the handles are closed. */
void claude_stream_free(claude_stream *s);
size_t claude_stream_queue_size(claude_stream *s);
/* The writing methods' bodies: each returns its Lua results (true, or the
 * fail triple). */
int claude_stream_write(lua_State *L, claude_stream *s, int idx);
int claude_stream_write_json(lua_State *L, claude_stream *s, int idx);
int claude_stream_write_pieces(lua_State *L, claude_stream *s, int first);
void claude_open_stream(lua_State *L);

#endif
