/*
 * repl.c -- the line reader of `claudelua -i` (the loop of prompts is
 * lua/claude/repl.lua). A line is read while the claude loop runs: stdin is
 * watched with a uv_poll_t, and a line that is complete is handed to a Lua
 * callback from the loop, so tasks, servers and sessions go on at the
 * prompt. On a terminal, GNU readline (editing, history) does the reading
 * through its callback interface when libreadline.so.8 can be loaded; it is
 * opened with dlopen on the first -i, so that no other start of claudelua
 * maps it (and it is not needed to build). Elsewhere (a pipe, a file, no
 * readline) lines are read as they come, and a prompt is shown only on a
 * terminal. Standard input that cannot be polled (a regular file) is read
 * with blocking reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "dynlib.h"
#include "host/repl.h"

#define MT_REPL "claudelua.Repl"

/* The few readline functions used, by their C types (no header needed). */
typedef struct rl_table {
  void (*handler_install)(const char *prompt, void (*handler)(char *));
  void (*read_char)(void);
  void (*handler_remove)(void);
  void (*add_history)(const char *line);
  void (*sigcleanup)(void);
  void (*free_line_state)(void);
  int (*crlf)(void);
} rl_table;

static const char *const rl_names[] = {
  "rl_callback_handler_install", "rl_callback_read_char", "rl_callback_handler_remove",
  "add_history", "rl_callback_sigcleanup", "rl_free_line_state", "rl_crlf"};
static rl_table rl;
static claude_dynlib rl_lib = CLAUDE_DYNLIB_INIT("libreadline.so.8", rl_names, rl);
static void rl_open_once(void) { claude_dynlib_open(&rl_lib); }

typedef struct repl {
  claude_handle hdr;
  struct repl **box;
  uv_poll_t poll;
  int poll_ok;     /* stdin can be polled (not a regular file) */
  int polling;     /* a line is being read */
  int use_rl;      /* readline reads (a terminal, and the library loaded) */
  int tty;
  int eof;
  int cb_ref;      /* the Lua callback waiting for the line */
  char *buf;       /* plain reading: bytes read, not yet handed out */
  size_t len, cap;
} repl;

/* readline's line handler takes no argument: the one reader with readline
 * active. Readline's own state is per process, too. */
static repl *rl_reader;

static void repl_stop(repl *r) {
  if (r->polling && r->poll_ok) uv_poll_stop(&r->poll);
  if (r->polling && r->use_rl) rl.handler_remove();
  r->polling = 0;
}

/* Hands the line (NULL: end of input) to the waiting callback, once. */
static void deliver(repl *r, const char *line, size_t len) {
  claude_ctx *ctx = r->hdr.ctx;
  lua_State *L;
  int ref = r->cb_ref;
  repl_stop(r);
  r->cb_ref = LUA_NOREF;
  if (ref == LUA_NOREF || ctx->closing) return claude_unref(ctx, &ref);
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  claude_unref(ctx, &ref);
  if (line != NULL) lua_pushlstring(L, line, len);
  else lua_pushnil(L);
  claude_pcall(ctx, L, 1);
}

static void rl_line(char *line) {
  repl *r = rl_reader;
  if (r == NULL) {
    free(line);
    return;
  }
  deliver(r, line, line ? strlen(line) : 0);
  free(line);
}

/* A whole line from the buffer (without its newline), or at end of input
 * what is left; returns 0 when there is none yet. */
static int take_line(repl *r, const char **line, size_t *len, size_t *used) {
  char *nl = r->len ? memchr(r->buf, '\n', r->len) : NULL;
  if (nl != NULL) {
    *line = r->buf;
    *len = (size_t)(nl - r->buf);
    *used = *len + 1;
    return 1;
  }
  if (r->eof && r->len > 0) {
    *line = r->buf;
    *len = *used = r->len;
    return 1;
  }
  return 0;
}

/* Reads what stdin has (blocking once when it cannot be polled). */
static void fill(repl *r) {
  ssize_t n;
  if (r->cap - r->len < 4096) {
    size_t cap = r->cap ? r->cap * 2 : 8192;
    char *buf = realloc(r->buf, cap);
    if (buf == NULL) {
      r->eof = 1;
      return;
    }
    r->buf = buf;
    r->cap = cap;
  }
  do n = read(0, r->buf + r->len, r->cap - r->len);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) r->eof = 1;
  else r->len += (size_t)n;
}

/* Delivers a buffered line if there is one; returns whether it did. */
static int deliver_buffered(repl *r) {
  const char *line;
  size_t len, used;
  if (take_line(r, &line, &len, &used)) {
    char *copy = malloc(len + 1);
    if (copy != NULL) memcpy(copy, line, len);
    memmove(r->buf, r->buf + used, r->len - used);
    r->len -= used;
    deliver(r, copy, copy ? len : 0);
    free(copy);
    return 1;
  }
  if (r->eof) {
    deliver(r, NULL, 0);
    return 1;
  }
  return 0;
}

static void on_readable(uv_poll_t *h, int status, int events) {
  repl *r = (repl *)h->data;
  (void)events;
  if (status < 0) r->eof = 1;
  if (r->use_rl && !r->eof) {
    rl.read_char();
    return;
  }
  if (!r->eof) fill(r);
  deliver_buffered(r);
}

static void repl_closed(uv_handle_t *h) {
  repl *r = (repl *)h->data;
  claude_handle_closed(r->hdr.ctx);
  free(r->buf);
  free(r);
}

static void repl_teardown(claude_handle *h) {
  repl *r = (repl *)h;
  repl_stop(r);
  claude_unref(h->ctx, &r->cb_ref);
  if (rl_reader == r) rl_reader = NULL;
  if (r->box != NULL) {
    *r->box = NULL;
    r->box = NULL;
  }
  if (r->poll_ok) {
    uv_close((uv_handle_t *)&r->poll, repl_closed);
  } else {
    claude_handle_closed(h->ctx);
    free(r->buf);
    free(r);
  }
}

static repl *check_repl(lua_State *L) {
  repl *r = *(repl **)luaL_checkudata(L, 1, MT_REPL);
  if (r == NULL) luaL_error(L, "attempt to use a closed reader");
  return r;
}

/* reader:read(prompt, fn): reads a line while the loop runs, then calls
 * fn(line), or fn(nil) at the end of input. */
static int repl_read(lua_State *L) {
  repl *r = check_repl(L);
  const char *prompt = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  if (r->polling) return luaL_error(L, "a line is already being read");
  claude_unref(r->hdr.ctx, &r->cb_ref);
  r->cb_ref = claude_ref(r->hdr.ctx, L, 3);
  r->polling = 1;
  if (r->use_rl) {
    rl_reader = r;
    rl.handler_install(prompt, rl_line);
  } else {
    if (r->tty) {
      fputs(prompt, stdout);
      fflush(stdout);
    }
    if (deliver_buffered(r)) return 0;
    while (!r->poll_ok) { /* a regular file: it never blocks for long */
      fill(r);
      if (deliver_buffered(r)) return 0;
    }
  }
  if (r->poll_ok) uv_poll_start(&r->poll, UV_READABLE, on_readable);
  claude_wake(r->hdr.ctx);
  return 0;
}

/* reader:add_history(line) */
static int repl_add_history(lua_State *L) {
  repl *r = check_repl(L);
  const char *line = luaL_checkstring(L, 2);
  if (r->use_rl) rl.add_history(line);
  return 0;
}

/* reader:interrupt(): Ctrl-C at the prompt: the line typed so far is
 * dropped, and the next read starts on a new line. */
static int repl_interrupt(lua_State *L) {
  repl *r = check_repl(L);
  if (r->use_rl && r->polling) {
    rl.free_line_state();
    rl.sigcleanup();
    rl.crlf();
    rl.handler_remove();
  } else if (r->tty) {
    fputs("\n", stdout);
  }
  if (r->polling && r->poll_ok) uv_poll_stop(&r->poll);
  r->polling = 0;
  claude_unref(r->hdr.ctx, &r->cb_ref);
  return 0;
}

static int repl_close(lua_State *L) {
  repl **box = (repl **)luaL_checkudata(L, 1, MT_REPL);
  repl *r = *box;
  if (r == NULL) return 0;
  r->box = NULL;
  *box = NULL;
  claude_object_unlink(&r->hdr);
  repl_teardown(&r->hdr);
  return 0;
}

static int repl_index(lua_State *L) {
  repl *r = check_repl(L);
  const char *key = luaL_checkstring(L, 2);
  if (strcmp(key, "readline") == 0) lua_pushboolean(L, r->use_rl);
  else if (strcmp(key, "tty") == 0) lua_pushboolean(L, r->tty);
  else if (luaL_getmetafield(L, 1, "methods") == LUA_TTABLE) lua_getfield(L, -1, key);
  else lua_pushnil(L);
  return 1;
}

/* Pushes a reader of stdin (claudelua.Repl). */
void claudelua_repl_push(lua_State *L) {
  static const luaL_Reg methods[] = {{"read", repl_read}, {"add_history", repl_add_history},
                                     {"interrupt", repl_interrupt}, {"close", repl_close},
                                     {NULL, NULL}};
  claude_ctx *ctx = claude_ctx_get(L);
  repl **box = (repl **)lua_newuserdatauv(L, sizeof(*box), 0);
  repl *r;
  char why[256];
  int flags;
  *box = NULL;
  if (luaL_newmetatable(L, MT_REPL)) {
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pushcfunction(L, repl_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, repl_close);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, repl_close);
    lua_setfield(L, -2, "__close");
  }
  lua_setmetatable(L, -2);
  r = (repl *)calloc(1, sizeof(*r));
  if (r == NULL) luaL_error(L, "out of memory");
  r->cb_ref = LUA_NOREF;
  r->tty = isatty(0);
  /* uv_poll_init makes stdin non-blocking, and with it a terminal's stdout
   * (one file description): printing could then fail with EAGAIN. Reads
   * happen only once poll said readable, so blocking mode is kept. */
  flags = fcntl(0, F_GETFL);
  r->poll_ok = uv_poll_init(ctx->loop, &r->poll, 0) == 0;
  if (flags >= 0) fcntl(0, F_SETFL, flags);
  r->poll.data = r;
  r->use_rl = r->tty && r->poll_ok && getenv("CLAUDELUA_NO_READLINE") == NULL &&
              claude_dynlib_load(&rl_lib, rl_open_once, why, sizeof why) == 0;
  claude_handle_opened(ctx);
  claude_object_link(ctx, &r->hdr, "repl", repl_teardown);
  r->box = box;
  *box = r;
}
