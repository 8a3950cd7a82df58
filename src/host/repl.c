/*
 * repl.c -- the line reader of `claudelua -i` (the loop of prompts is
 * lua/claude/repl.lua). A line is read while the claude loop runs: stdin is
 * watched with a uv_poll_t, and a line that is complete is handed to a Lua
 * callback from the loop, so tasks, servers and sessions go on at the
 * prompt. On a terminal, GNU readline (editing, history) does the reading
 * through its callback interface when libreadline.so.8 can be loaded; it is
 * opened with dlopen on the first -i, so that no other start of claudelua
 * maps it (and it is not needed to build). There Tab asks a Lua function for
 * the names that complete the word, the history is kept in a file across
 * sessions, and what a task prints while the prompt waits is written above
 * the prompt line, which is then drawn again with what was typed. Elsewhere
 * (a pipe, a file, no readline) lines are read as they come, and a prompt is
 * shown only on a terminal. Standard input that cannot be polled (a regular
 * file) is read with blocking reads.
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

/* The few readline functions used, by their C types (no header needed), and
 * the addresses of the few variables set (as the loader fills the table with
 * what dlsym returns: read through rl_var). */
typedef char *(*rl_entry_fn)(const char *text, int state);
typedef void (*rl_any)(void);
typedef struct rl_table {
  void (*handler_install)(const char *prompt, void (*handler)(char *));
  void (*read_char)(void);
  void (*handler_remove)(void);
  void (*add_history)(const char *line);
  void (*sigcleanup)(void);
  void (*free_line_state)(void);
  int (*crlf)(void);
  int (*read_history)(const char *path);
  int (*append_history)(int n, const char *path);
  int (*history_truncate_file)(const char *path, int lines);
  void (*clear_visible_line)(void);
  void (*forced_update_display)(void);
  rl_any completion_entry_function, completion_append_character, basic_word_break_characters;
} rl_table;

static const char *const rl_names[] = {
  "rl_callback_handler_install", "rl_callback_read_char", "rl_callback_handler_remove",
  "add_history", "rl_callback_sigcleanup", "rl_free_line_state", "rl_crlf",
  "read_history", "append_history", "history_truncate_file", "rl_clear_visible_line",
  "rl_forced_update_display", "rl_completion_entry_function",
  "rl_completion_append_character", "rl_basic_word_break_characters"};
static rl_table rl;
static claude_dynlib rl_lib = CLAUDE_DYNLIB_INIT("libreadline.so.8", rl_names, rl);
static void rl_open_once(void) { claude_dynlib_open(&rl_lib); }

/* The address of a readline variable, from its table entry. */
static void *rl_var(rl_any sym) {
  void *p;
  memcpy(&p, &sym, sizeof p);
  return p;
}

#define HISTORY_LINES 1000

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
  int complete_ref; /* Lua: word -> { names that complete it } (Tab) */
  char *buf;       /* plain reading: bytes read, not yet handed out */
  size_t len, cap;
  char *prompt;    /* the prompt shown (plain reading on a terminal) */
  char *history;   /* the history file, or NULL */
  char **matches;  /* the completions of the word, handed out one by one */
  int nmatches, nextmatch;
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

static void free_matches(repl *r) {
  int i;
  for (i = 0; i < r->nmatches; i++) free(r->matches[i]);
  free(r->matches);
  r->matches = NULL;
  r->nmatches = r->nextmatch = 0;
}

static void repl_free(repl *r) {
  free_matches(r);
  free(r->buf);
  free(r->prompt);
  free(r->history);
  free(r);
}

static void repl_closed(uv_handle_t *h) {
  repl *r = (repl *)h->data;
  claude_handle_closed(r->hdr.ctx);
  repl_free(r);
}

/* Asks the Lua completer for the names that complete `text` (a list of
 * strings); keeps them in r->matches. */
static void fetch_matches(repl *r, const char *text) {
  claude_ctx *ctx = r->hdr.ctx;
  lua_State *L;
  int n, i;
  free_matches(r);
  if (r->complete_ref == LUA_NOREF || ctx->closing) return;
  L = claude_cb_state(ctx);
  lua_rawgeti(L, LUA_REGISTRYINDEX, r->complete_ref);
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
    lua_pop(L, 1); /* a completer that fails completes nothing */
    return;
  }
  n = (int)lua_rawlen(L, -1);
  r->matches = n > 0 ? calloc((size_t)n, sizeof(char *)) : NULL;
  for (i = 1; r->matches != NULL && i <= n; i++) {
    const char *m;
    lua_rawgeti(L, -1, i);
    m = lua_tostring(L, -1);
    if (m != NULL && (r->matches[r->nmatches] = strdup(m)) != NULL) r->nmatches++;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* readline's completion entry: the matches of `text`, one per call (state 0
 * starts over); readline frees each. Nothing falls back to file names. */
static char *complete_entry(const char *text, int state) {
  repl *r = rl_reader;
  if (r == NULL) return NULL;
  if (state == 0) {
    fetch_matches(r, text);
    /* `claude.mcp` may go on with `.`: no space after a name */
    *(int *)rl_var(rl.completion_append_character) = '\0';
  }
  if (r->nextmatch >= r->nmatches) return NULL;
  return strdup(r->matches[r->nextmatch++]);
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
  claude_unref(h->ctx, &r->complete_ref);
  if (r->poll_ok) {
    uv_close((uv_handle_t *)&r->poll, repl_closed);
  } else {
    claude_handle_closed(h->ctx);
    repl_free(r);
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
      char *copy = strdup(prompt);
      if (copy != NULL) {
        free(r->prompt);
        r->prompt = copy;
      }
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

/* reader:add_history(line): to the history, and to its file when there is
 * one (at once: a session that ends badly keeps its lines). */
static int repl_add_history(lua_State *L) {
  repl *r = check_repl(L);
  const char *line = luaL_checkstring(L, 2);
  if (!r->use_rl) return 0;
  rl.add_history(line);
  if (r->history != NULL && rl.append_history(1, r->history) == 0)
    rl.history_truncate_file(r->history, HISTORY_LINES);
  return 0;
}

/* reader:history_file(path): the lines of earlier sessions from path, and
 * this session's added to it. Created 0600: a line may hold a secret.
 * Returns whether readline keeps a history (false: nothing done). */
static int repl_history_file(lua_State *L) {
  repl *r = check_repl(L);
  const char *path = luaL_checkstring(L, 2);
  int fd;
  char *copy;
  if (!r->use_rl) {
    lua_pushboolean(L, 0);
    return 1;
  }
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return luaL_fileresult(L, 0, path);
  close(fd);
  copy = strdup(path);
  if (copy == NULL) return luaL_error(L, "out of memory");
  free(r->history);
  r->history = copy;
  rl.read_history(path);
  lua_pushboolean(L, 1);
  return 1;
}

/* reader:complete(fn): Tab asks fn(word) for the list of names that
 * complete the word at the cursor. */
static int repl_complete(lua_State *L) {
  repl *r = check_repl(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  claude_unref(r->hdr.ctx, &r->complete_ref);
  r->complete_ref = claude_ref(r->hdr.ctx, L, 2);
  return 0;
}

/* reader:above(text[, to_stderr]): writes text as printed while a prompt
 * waits: above the prompt line, which is drawn again after it with what was
 * typed (readline's way: clear the line, print, redraw). A text that does not
 * end a line gets its newline, or the prompt would follow it. */
static int repl_above(lua_State *L) {
  repl *r = check_repl(L);
  size_t len;
  const char *text = luaL_checklstring(L, 2, &len);
  FILE *out = lua_toboolean(L, 3) ? stderr : stdout;
  int redraw = r->polling && r->tty;
  if (redraw && r->use_rl) {
    rl.clear_visible_line();
  } else if (redraw) { /* no readline: the prompt's line from its start */
    fputs("\r\033[K", stdout);
    fflush(stdout);
  }
  fwrite(text, 1, len, out);
  if (redraw && (len == 0 || text[len - 1] != '\n')) fputc('\n', out);
  fflush(out);
  if (redraw && r->use_rl) {
    rl.forced_update_display();
  } else if (redraw && r->prompt != NULL) {
    fputs(r->prompt, stdout);
    fflush(stdout);
  }
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
  static const luaL_Reg methods[] = {
    {"read", repl_read}, {"add_history", repl_add_history},
    {"history_file", repl_history_file}, {"complete", repl_complete}, {"above", repl_above},
    {"interrupt", repl_interrupt}, {"close", repl_close}, {NULL, NULL}};
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
  r->cb_ref = r->complete_ref = LUA_NOREF;
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
  if (r->use_rl) {
    /* Lua's words: '.' and ':' stay inside a name (claude.mcp, s:upper) */
    static const char breaks[] = " \t\n\"\\'`@$><=;|&{(}),[]+-*/%^~#";
    *(rl_entry_fn *)rl_var(rl.completion_entry_function) = complete_entry;
    *(const char **)rl_var(rl.basic_word_break_characters) = breaks;
  }
  claude_handle_opened(ctx);
  claude_object_link(ctx, &r->hdr, "repl", repl_teardown);
  r->box = box;
  *box = r;
}
