/*
 * process.c -- child processes with piped stdio.
 *
 * A claude.Process owns a uv_process_t and up to three pipes. Output is framed
 * into lines (or decoded JSON values) in C and handed to Lua callbacks; the
 * exit callback runs only after the child has exited *and* every output pipe
 * has reached EOF, so no output is ever lost to the exit race. Children run in
 * their own process group and, where util-linux's setpriv exists, get a
 * parent-death signal, so they never outlive the host.
 */
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define MT_PROCESS "claude.core.Process"

enum { OUT_LINES, OUT_JSON, OUT_INHERIT, OUT_IGNORE };

typedef struct proc_obj proc_obj;

typedef struct out_stream {
  uv_pipe_t pipe;
  proc_obj *proc;
  claude_lines lines;
  int cb_ref;
  int mode;
  int open; /* pipe handle initialised and not yet closed */
  int eof;  /* no more data will come */
} out_stream;

struct proc_obj {
  claude_handle hdr;
  proc_obj **box; /* the userdata pointing here, or NULL once collected */
  uv_process_t handle;
  uv_pipe_t in;
  out_stream out, err;
  int in_open, proc_open, handles;
  int exited, finished;
  int64_t exit_status;
  int term_signal;
  int exit_ref;
  int pid;
  int group; /* the child leads its own process group */
  uint64_t eof_grace_ms; /* after exit, how long to wait for EOF (0: forever) */
  uv_timer_t grace_timer;
  int grace_open;
  /* Writes are coalesced: bytes wait here and go out in one write when the
   * loop is about to wait for I/O (a prepare handle), so 64 answers written
   * in one turn of the loop cost one system call, not 64. */
  char *wbuf;
  size_t wlen, wcap;
  uv_prepare_t flush;
  int flush_open;
  int in_writable;         /* stdin accepts writes (not closed or closing) */
  uv_shutdown_t shutdown;  /* stdin's EOF, after the queued writes */
};

typedef struct write_req {
  uv_write_t req;
  char data[];
} write_req;

#define DIRECT_WRITE ((size_t)64 * 1024) /* larger writes skip the buffer */

/* ------------------------------------------------------------------------- */

static void proc_free_if_done(proc_obj *p) {
  if (p->handles == 0 && p->box == NULL) {
    claude_lines_free(&p->out.lines);
    claude_lines_free(&p->err.lines);
    free(p->wbuf);
    free(p);
  }
}

static void handle_closed(uv_handle_t *h) {
  proc_obj *p = (proc_obj *)h->data;
  p->handles--;
  claude_handle_closed(p->hdr.ctx);
  proc_free_if_done(p);
}

static void close_handle(proc_obj *p, uv_handle_t *h, int *open) {
  if (!*open) return;
  *open = 0;
  uv_close(h, handle_closed);
}

static void release_refs(proc_obj *p) {
  claude_ctx *ctx = p->hdr.ctx;
  claude_unref(ctx, &p->out.cb_ref);
  claude_unref(ctx, &p->err.cb_ref);
  claude_unref(ctx, &p->exit_ref);
}

/* Runs the exit callback once the child exited and its output ended. */
static void maybe_finish(proc_obj *p) {
  claude_ctx *ctx = p->hdr.ctx;
  if (p->finished || !p->exited || !p->out.eof || !p->err.eof) return;
  p->finished = 1;
  p->in_writable = 0;
  close_handle(p, (uv_handle_t *)&p->in, &p->in_open);
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
  close_handle(p, (uv_handle_t *)&p->flush, &p->flush_open);
  claude_object_unlink(&p->hdr);
  if (p->exit_ref != LUA_NOREF && !ctx->closing) {
    lua_State *L = claude_cb_state(ctx);
    int ref = p->exit_ref;
    p->exit_ref = LUA_NOREF;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    luaL_unref(L, LUA_REGISTRYINDEX, ref);
    ctx->live_refs--;
    lua_pushinteger(L, (lua_Integer)p->exit_status);
    lua_pushinteger(L, p->term_signal);
    claude_pcall(ctx, L, 2);
  }
  release_refs(p);
}

static void stream_eof(out_stream *s);

/* The grace after exit ran out: a grandchild still holds a pipe open. What
 * was written so far has been read; end the streams there. */
static void grace_expired(uv_timer_t *t) {
  proc_obj *p = (proc_obj *)t->data;
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
  if (!p->out.eof) stream_eof(&p->out);
  if (!p->err.eof) stream_eof(&p->err);
}

static void on_exit_cb(uv_process_t *h, int64_t status, int term_signal) {
  proc_obj *p = (proc_obj *)h->data;
  p->exited = 1;
  p->exit_status = status;
  p->term_signal = term_signal;
  close_handle(p, (uv_handle_t *)&p->handle, &p->proc_open);
  if (p->eof_grace_ms > 0 && (!p->out.eof || !p->err.eof) && !p->finished) {
    uv_timer_init(p->hdr.ctx->loop, &p->grace_timer);
    p->grace_timer.data = p;
    p->grace_open = 1;
    p->handles++;
    claude_handle_opened(p->hdr.ctx);
    uv_timer_start(&p->grace_timer, grace_expired, p->eof_grace_ms, 0);
  }
  maybe_finish(p);
}

/* ---- output ------------------------------------------------------------- */

typedef struct deliver_args {
  out_stream *s;
  const char *data;
  size_t len;
  const char *err;
  const char *code;
} deliver_args;

/* Pushes the callback's arguments for one line: the line, or its decoded
 * value, or nil, message, line, "json" when it is not JSON. Returns how many. */
static int push_line(lua_State *L, out_stream *s, const char *line, size_t len) {
  if (s->mode != OUT_JSON) {
    lua_pushlstring(L, line, len);
    return 1;
  }
  if (claude_json_decode_push(L, line, len)) return 1;
  lua_pushlstring(L, line, len); /* after nil, message */
  lua_pushliteral(L, "json");
  return 4;
}

/* Protected: pushes a line, an error or EOF and calls the callback. */
static int deliver_p(lua_State *L) {
  deliver_args *a = (deliver_args *)lua_touserdata(L, 1);
  lua_rawgeti(L, LUA_REGISTRYINDEX, a->s->cb_ref);
  if (a->err != NULL) {
    luaL_pushfail(L);
    lua_pushstring(L, a->err);
    lua_pushnil(L);
    lua_pushstring(L, a->code);
    lua_call(L, 4, 0);
  } else if (a->data == NULL) {
    lua_call(L, 0, 0); /* EOF */
  } else {
    lua_call(L, push_line(L, a->s, a->data, a->len), 0);
  }
  return 0;
}

static void deliver(out_stream *s, const char *data, size_t len, const char *err,
                    const char *code) {
  claude_ctx *ctx = s->proc->hdr.ctx;
  lua_State *L;
  deliver_args a;
  if (s->cb_ref == LUA_NOREF || ctx->closing) return;
  a.s = s;
  a.data = data;
  a.len = len;
  a.err = err;
  a.code = code;
  L = claude_cb_state(ctx);
  lua_pushcfunction(L, deliver_p);
  lua_pushlightuserdata(L, &a);
  claude_pcall(ctx, L, 1);
}

/* Pushes the callback's arguments for a line too long: nil, message, nil,
 * "overflow". */
static int push_overflow(lua_State *L, out_stream *s, size_t seen) {
  luaL_pushfail(L);
  lua_pushfstring(L, "line exceeds the limit of %I bytes (%I bytes so far)",
                  (lua_Integer)s->lines.max_line, (lua_Integer)seen);
  lua_pushnil(L);
  lua_pushliteral(L, "overflow");
  return 4;
}

/* Protected: hands every complete line held to the callback, one call each,
 * in one protected call for the whole read. Stops when the callback closed
 * the stream. */
static int deliver_lines_p(lua_State *L) {
  out_stream *s = (out_stream *)lua_touserdata(L, 1);
  claude_ctx *ctx = s->proc->hdr.ctx;
  const char *line = NULL;
  size_t len;
  int kind;
  while (s->open && !ctx->closing &&
         (kind = claude_lines_next(&s->lines, &line, &len)) != CLAUDE_LINE_NONE) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_ref);
    lua_call(L, kind == CLAUDE_LINE_OVERFLOW ? push_overflow(L, s, len)
                                             : push_line(L, s, line, len), 0);
  }
  return 0;
}

/* Delivers the complete lines held; an error in one callback is reported
 * (claude_pcall) and the lines after it are still delivered. */
static void deliver_lines(out_stream *s) {
  claude_ctx *ctx = s->proc->hdr.ctx;
  if (s->cb_ref == LUA_NOREF || ctx->closing) { /* nobody listens: drop them */
    const char *line;
    size_t len;
    while (claude_lines_next(&s->lines, &line, &len) != CLAUDE_LINE_NONE) {
    }
    return;
  }
  for (;;) {
    lua_State *L = claude_cb_state(ctx);
    lua_pushcfunction(L, deliver_lines_p);
    lua_pushlightuserdata(L, s);
    if (claude_pcall(ctx, L, 1) == LUA_OK || !s->open || ctx->closing) return;
  }
}

/* Every handle's data is its proc_obj; the pipe tells which stream. */
static out_stream *stream_of(uv_handle_t *h) {
  proc_obj *p = (proc_obj *)h->data;
  return h == (uv_handle_t *)&p->out.pipe ? &p->out : &p->err;
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  out_stream *s = stream_of(h);
  char *base;
  size_t len;
  claude_lines_space(&s->lines, suggested, &base, &len);
  *buf = uv_buf_init(base, (unsigned int)(len > 0x40000000u ? 0x40000000u : len));
}

static void stream_eof(out_stream *s) {
  proc_obj *p = s->proc;
  if (s->eof) return;
  s->eof = 1;
  if (s->open) {
    const char *rest;
    size_t len;
    uv_read_stop((uv_stream_t *)&s->pipe);
    deliver_lines(s);
    if (claude_lines_rest(&s->lines, &rest, &len)) deliver(s, rest, len, NULL, NULL);
    claude_lines_free(&s->lines);
    deliver(s, NULL, 0, NULL, NULL);
    close_handle(p, (uv_handle_t *)&s->pipe, &s->open);
  }
  maybe_finish(p);
}

static void read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  out_stream *s = stream_of((uv_handle_t *)stream);
  (void)buf;
  if (nread > 0) {
    claude_lines_feed(&s->lines, (size_t)nread);
    deliver_lines(s);
  } else if (nread == UV_ENOBUFS) {
    deliver(s, NULL, 0, "out of memory for the line buffer", "read");
    stream_eof(s);
  } else if (nread < 0) {
    if (nread != UV_EOF) deliver(s, NULL, 0, uv_strerror((int)nread), "read");
    stream_eof(s);
  }
}

/* ---- spawning ----------------------------------------------------------- */

static char **string_array(lua_State *L, int idx, int extra_front, const char *const *front,
                           const char *first) {
  int n = idx ? (int)luaL_len(L, idx) : 0, i, k = 0;
  char **argv = (char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + extra_front + 2), 0);
  for (i = 0; i < extra_front; i++) argv[k++] = (char *)front[i];
  if (first != NULL) argv[k++] = (char *)first;
  for (i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER)
      luaL_error(L, "bad element #%d in 'args' (string expected, got %s)", i, luaL_typename(L, -1));
    argv[k++] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1); /* the string stays alive in the table */
  }
  argv[k] = NULL;
  return argv;
}

/* env: a map { NAME = value } -> NULL-terminated "NAME=value" array, kept
 * alive on the stack (strings in a helper table). */
static char **env_array(lua_State *L, int idx) {
  int n = 0, k = 0;
  char **envp;
  lua_newtable(L); /* holds the joined strings */
  int holder = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_error(L, "bad key in 'env' (string expected, got %s)", luaL_typename(L, -2));
    if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
      lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
      lua_rawseti(L, holder, ++n);
    } else if (lua_toboolean(L, -1)) {
      luaL_error(L, "bad value for '%s' in 'env' (string expected, got %s)",
                 lua_tostring(L, -2), luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  envp = (char **)lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (k = 0; k < n; k++) {
    lua_rawgeti(L, holder, k + 1);
    envp[k] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  envp[n] = NULL;
  return envp;
}

static int opt_field_bool(lua_State *L, int idx, const char *name, int dflt) {
  int v;
  lua_getfield(L, idx, name);
  v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static int opt_mode(lua_State *L, int idx, const char *name, const char *dflt) {
  static const char *const modes[] = {"lines", "json", "inherit", "ignore", NULL};
  int mode;
  lua_getfield(L, idx, name);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_pushstring(L, dflt);
  }
  mode = luaL_checkoption(L, -1, NULL, modes);
  lua_pop(L, 1);
  return mode;
}

static int opt_callback(claude_ctx *ctx, lua_State *L, int idx, const char *name) {
  int ref = LUA_NOREF;
  lua_getfield(L, idx, name);
  if (!lua_isnil(L, -1)) {
    if (!lua_isfunction(L, -1))
      luaL_error(L, "bad field '%s' (function expected, got %s)", name, luaL_typename(L, -1));
    ref = claude_ref(ctx, L, -1);
  }
  lua_pop(L, 1);
  return ref;
}

static void proc_teardown(claude_handle *h) {
  proc_obj *p = (proc_obj *)h;
  if (p->box != NULL) { /* the context goes first: detach the userdata */
    *p->box = NULL;
    p->box = NULL;
  }
  /* The group too, after the child exited: its own children (a server it
   * started, a background job) must not outlive it. The group id cannot have
   * been reused while any member lives. */
  if (p->pid > 0 && p->group) uv_kill(-p->pid, SIGKILL);
  else if (!p->exited && p->pid > 0) uv_kill(p->pid, SIGKILL);
  release_refs(p);
  p->finished = 1;
  p->in_writable = 0;
  close_handle(p, (uv_handle_t *)&p->flush, &p->flush_open);
  close_handle(p, (uv_handle_t *)&p->in, &p->in_open);
  close_handle(p, (uv_handle_t *)&p->out.pipe, &p->out.open);
  close_handle(p, (uv_handle_t *)&p->err.pipe, &p->err.open);
  close_handle(p, (uv_handle_t *)&p->handle, &p->proc_open);
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
}

static void setup_output(claude_ctx *ctx, proc_obj *p, out_stream *s, int mode,
                         uv_stdio_container_t *c, int fd) {
  s->proc = p;
  s->mode = mode;
  s->cb_ref = LUA_NOREF;
  if (mode == OUT_LINES || mode == OUT_JSON) {
    uv_pipe_init(ctx->loop, &s->pipe, 0);
    s->pipe.data = p;
    s->open = 1;
    p->handles++;
    claude_handle_opened(ctx);
    c->flags = (uv_stdio_flags)(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    c->data.stream = (uv_stream_t *)&s->pipe;
  } else if (mode == OUT_INHERIT) {
    s->eof = 1;
    c->flags = UV_INHERIT_FD;
    c->data.fd = fd;
  } else {
    s->eof = 1;
    c->flags = UV_IGNORE;
  }
}

/* core.spawn_process{ file, args=, env=, cwd=, stdin="pipe"|"ignore"|"inherit",
 *   stdout=, stderr= ("lines"|"json"|"inherit"|"ignore"), on_stdout=, on_stderr=,
 *   on_exit=, max_line=, group=true, pdeathsig=true, eof_grace=seconds }
 *   -> claude.Process
 *   | nil, err, code */
static int l_spawn_process(lua_State *L) {
  static const char *const setpriv[] = {"/usr/bin/setpriv", "--pdeathsig", "TERM", "--"};
  claude_ctx *ctx = claude_ctx_get(L);
  uv_process_options_t opts;
  uv_stdio_container_t stdio[3];
  proc_obj **box;
  proc_obj *p;
  const char *file, *in_mode;
  size_t max_line;
  int err, use_setpriv, args_idx = 0;
  char **argv;

  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  memset(&opts, 0, sizeof opts);
  memset(stdio, 0, sizeof stdio);
  lua_getfield(L, 1, "file");
  file = lua_tostring(L, -1);
  if (file == NULL) return luaL_error(L, "bad field 'file' (string expected, got %s)",
                                      luaL_typename(L, -1));
  lua_getfield(L, 1, "args"); /* 3 */
  if (!lua_isnil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    args_idx = 3;
  }
  use_setpriv = ctx->pdeathsig && opt_field_bool(L, 1, "pdeathsig", 1);
  argv = string_array(L, args_idx, use_setpriv ? 4 : 0, setpriv, file); /* 4 */
  opts.file = use_setpriv ? setpriv[0] : file;
  opts.args = argv;
  lua_getfield(L, 1, "env"); /* 5 */
  if (!lua_isnil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    opts.env = env_array(L, 5);
  }
  lua_getfield(L, 1, "cwd");
  opts.cwd = lua_tostring(L, -1);
  lua_getfield(L, 1, "max_line");
  max_line = (size_t)luaL_optinteger(L, -1, (lua_Integer)CLAUDE_DEFAULT_MAX_LINE);
  lua_getfield(L, 1, "stdin");
  in_mode = luaL_optstring(L, -1, "pipe");
  lua_getfield(L, 1, "user"); /* run the child as this user */
  if (!lua_isnil(L, -1)) {
    const char *user = luaL_checkstring(L, -1);
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
      luaL_pushfail(L);
      lua_pushfstring(L, "unknown user '%s'", user);
      lua_pushliteral(L, "ENOENT");
      return 3;
    }
    opts.uid = pw->pw_uid;
    opts.gid = pw->pw_gid;
    opts.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
  }

  box = (proc_obj **)lua_newuserdatauv(L, sizeof(*box), 0);
  *box = NULL;
  luaL_setmetatable(L, MT_PROCESS);
  p = (proc_obj *)calloc(1, sizeof(*p));
  if (p == NULL) return luaL_error(L, "out of memory");
  p->exit_ref = LUA_NOREF;
  p->group = opt_field_bool(L, 1, "group", 1);
  lua_getfield(L, 1, "eof_grace");
  p->eof_grace_ms = (uint64_t)(luaL_optnumber(L, -1, 0) * 1000.0 + 0.5);
  lua_pop(L, 1);
  claude_lines_init(&p->out.lines, max_line);
  claude_lines_init(&p->err.lines, max_line);

  if (strcmp(in_mode, "pipe") == 0) {
    uv_pipe_init(ctx->loop, &p->in, 0);
    p->in.data = p;
    p->in_open = 1;
    p->handles++;
    claude_handle_opened(ctx);
    stdio[0].flags = (uv_stdio_flags)(UV_CREATE_PIPE | UV_READABLE_PIPE);
    stdio[0].data.stream = (uv_stream_t *)&p->in;
    p->in_writable = 1;
    uv_prepare_init(ctx->loop, &p->flush);
    p->flush.data = p;
    p->flush_open = 1;
    p->handles++;
    claude_handle_opened(ctx);
  } else if (strcmp(in_mode, "inherit") == 0) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = 0;
  } else {
    stdio[0].flags = UV_IGNORE;
  }
  setup_output(ctx, p, &p->out, opt_mode(L, 1, "stdout", "lines"), &stdio[1], 1);
  setup_output(ctx, p, &p->err, opt_mode(L, 1, "stderr", "inherit"), &stdio[2], 2);
  claude_object_link(ctx, &p->hdr, "process", proc_teardown);
  p->box = box;
  *box = p;

  opts.stdio_count = 3;
  opts.stdio = stdio;
  opts.exit_cb = on_exit_cb;
  if (p->group) opts.flags |= UV_PROCESS_DETACHED;
  p->handle.data = p;
  err = uv_spawn(ctx->loop, &p->handle, &opts);
  if (err != 0) {
    /* The process handle still needs closing; output pipes never opened. */
    p->proc_open = 1;
    p->handles++;
    claude_handle_opened(ctx);
    p->exited = 1;
    claude_object_unlink(&p->hdr);
    proc_teardown(&p->hdr); /* detaches the box: the userdata becomes closed */
    return claude_push_uv_error(L, err);
  }
  p->proc_open = 1;
  p->handles++;
  claude_handle_opened(ctx);
  p->pid = p->handle.pid;
  p->out.cb_ref = opt_callback(ctx, L, 1, "on_stdout");
  p->err.cb_ref = opt_callback(ctx, L, 1, "on_stderr");
  p->exit_ref = opt_callback(ctx, L, 1, "on_exit");
  if (p->out.open) {
    uv_read_start((uv_stream_t *)&p->out.pipe, alloc_cb, read_cb);
  }
  if (p->err.open) {
    uv_read_start((uv_stream_t *)&p->err.pipe, alloc_cb, read_cb);
  }
  claude_wake(ctx);
  return 1;
}

/* ---- methods ------------------------------------------------------------ */

static proc_obj **check_box(lua_State *L) {
  return (proc_obj **)luaL_checkudata(L, 1, MT_PROCESS);
}

static proc_obj *check_proc(lua_State *L) {
  proc_obj *p = *check_box(L);
  if (p == NULL) luaL_error(L, "attempt to use a closed process");
  return p;
}

static void write_done(uv_write_t *req, int status) {
  (void)status; /* a dead reader shows up as the process's exit */
  free(req);
}

/* Writes bytes after anything already queued: what the pipe takes now goes
 * at once, the rest is copied into a request libuv finishes later. */
static int write_now(proc_obj *p, const char *data, size_t len) {
  uv_stream_t *in = (uv_stream_t *)&p->in;
  size_t done = 0;
  write_req *w;
  uv_buf_t buf;
  int n;
  if (uv_stream_get_write_queue_size(in) == 0) {
    buf = uv_buf_init((char *)data, (unsigned int)len);
    n = uv_try_write(in, &buf, 1);
    if (n < 0 && n != UV_EAGAIN) return n;
    if (n > 0) done = (size_t)n;
    if (done == len) return 0;
  }
  w = (write_req *)malloc(sizeof(*w) + len - done);
  if (w == NULL) return UV_ENOMEM;
  memcpy(w->data, data + done, len - done);
  buf = uv_buf_init(w->data, (unsigned int)(len - done));
  n = uv_write(&w->req, in, &buf, 1, write_done);
  if (n != 0) free(w);
  return n;
}

/* Sends the coalesced bytes; a big buffer is given back afterwards. */
static int flush_out(proc_obj *p) {
  int err = 0;
  if (p->wlen > 0 && p->in_open) err = write_now(p, p->wbuf, p->wlen);
  p->wlen = 0;
  if (p->wcap > 4 * DIRECT_WRITE) {
    free(p->wbuf);
    p->wbuf = NULL;
    p->wcap = 0;
  }
  return err;
}

static void flush_cb(uv_prepare_t *h) {
  proc_obj *p = (proc_obj *)h->data;
  uv_prepare_stop(h);
  flush_out(p);
}

/* Appends to the coalescing buffer and makes sure a flush is due. */
static int append_out(proc_obj *p, const char *data, size_t len) {
  size_t need = p->wlen + len;
  if (need > p->wcap) {
    size_t cap = p->wcap ? p->wcap : 4096;
    char *wbuf;
    while (cap < need) cap *= 2;
    wbuf = (char *)realloc(p->wbuf, cap);
    if (wbuf == NULL) return 0;
    p->wbuf = wbuf;
    p->wcap = cap;
  }
  memcpy(p->wbuf + p->wlen, data, len);
  p->wlen += len;
  if (!uv_is_active((uv_handle_t *)&p->flush)) {
    uv_prepare_start(&p->flush, flush_cb);
    claude_wake(p->hdr.ctx);
  }
  return 1;
}

/* Encodes the value at idx onto the end of the write buffer; 0 with the
 * message pushed. */
static int encode_out(lua_State *L, proc_obj *p, int idx) {
  return claude_json_encode_append(L, idx, &p->wbuf, &p->wlen, &p->wcap);
}

/* Queues `len` bytes (plus a newline when `nl`); returns 1 with true
 * pushed, or pushes the fail triple. */
static int do_write(lua_State *L, proc_obj *p, const char *data, size_t len, int nl) {
  if (!p->in_writable) {
    luaL_pushfail(L);
    lua_pushliteral(L, "stdin is closed");
    lua_pushliteral(L, "closed");
    return 3;
  }
  if (p->wlen == 0 && len >= DIRECT_WRITE) { /* big: no copy into the buffer */
    int err = write_now(p, data, len);
    if (err == 0 && nl) err = write_now(p, "\n", 1);
    if (err != 0) return claude_push_uv_error(L, err);
    claude_wake(p->hdr.ctx);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (!append_out(p, data, len) || (nl && !append_out(p, "\n", 1)))
    return luaL_error(L, "out of memory");
  lua_pushboolean(L, 1);
  return 1;
}

/* p:write(data) -> true | nil, err, code (sent before the loop next waits) */
static int proc_write(lua_State *L) {
  proc_obj *p = check_proc(L);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  return do_write(L, p, data, len, 0);
}

/* p:write_json(value): one JSON line, encoded in C */
static int proc_write_json(lua_State *L) {
  proc_obj *p = check_proc(L);
  char *buf;
  size_t len;
  int n;
  luaL_checkany(L, 2);
  if (!claude_json_encode_buffer(L, 2, &buf, &len)) return lua_error(L);
  n = do_write(L, p, buf, len, 1);
  free(buf);
  return n;
}

/* p:write_control_response(request_id, key, body [, rpc_id]): the line
 * {"type":"control_response","response":{"subtype":"success",
 *  "request_id":ID,"response":{KEY:BODY}}}, built without Lua tables for the
 * envelope (the answer to every tool call goes this way). With rpc_id, BODY
 * is a JSON-RPC result: {KEY:{"jsonrpc":"2.0","id":RPC_ID,"result":BODY}},
 * and a string BODY is the text of a tool result with one text block. */
static int proc_write_control_response(lua_State *L) {
  static const char head[] =
    "{\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":";
  static const char text_result[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":";
  proc_obj *p = check_proc(L);
  size_t key_len, start;
  const char *key = luaL_checklstring(L, 3, &key_len);
  int wrapped = !lua_isnoneornil(L, 5), text = wrapped && lua_type(L, 4) == LUA_TSTRING;
  luaL_checkany(L, 4);
  if (!p->in_writable) {
    luaL_pushfail(L);
    lua_pushliteral(L, "stdin is closed");
    lua_pushliteral(L, "closed");
    return 3;
  }
  /* Written straight onto the end of the write buffer; on any failure the
   * buffer goes back to where it was, so no half line is ever sent. */
  start = p->wlen;
  if (!append_out(p, head, sizeof head - 1)) goto oom;
  if (!encode_out(L, p, 2)) goto bad_value;
  if (!append_out(p, ",\"response\":{\"", 14) || !append_out(p, key, key_len) ||
      !append_out(p, "\":", 2))
    goto oom;
  if (wrapped) {
    if (!append_out(p, "{\"jsonrpc\":\"2.0\",\"id\":", 22)) goto oom;
    if (!encode_out(L, p, 5)) goto bad_value;
    if (!(text ? append_out(p, text_result, sizeof text_result - 1)
               : append_out(p, ",\"result\":", 10)))
      goto oom;
  }
  if (!encode_out(L, p, 4)) goto bad_value;
  if ((wrapped && !(text ? append_out(p, "}]}}", 4) : append_out(p, "}", 1))) ||
      !append_out(p, "}}}\n", 4))
    goto oom;
  lua_pushboolean(L, 1);
  return 1;
bad_value:
  p->wlen = start;
  return lua_error(L);
oom:
  p->wlen = start;
  return luaL_error(L, "out of memory");
}

static void shutdown_cb(uv_shutdown_t *req, int status) {
  proc_obj *p = (proc_obj *)req->data;
  (void)status;
  close_handle(p, (uv_handle_t *)&p->in, &p->in_open);
}

/* p:close_stdin(): EOF for the child once everything written has gone */
static int proc_close_stdin(lua_State *L) {
  proc_obj *p = check_proc(L);
  if (!p->in_writable) return 0;
  p->in_writable = 0;
  flush_out(p);
  if (uv_is_active((uv_handle_t *)&p->flush)) uv_prepare_stop(&p->flush);
  p->shutdown.data = p;
  if (uv_shutdown(&p->shutdown, (uv_stream_t *)&p->in, shutdown_cb) != 0)
    close_handle(p, (uv_handle_t *)&p->in, &p->in_open);
  claude_wake(p->hdr.ctx);
  return 0;
}

static const char *const sig_names[] = {"term", "kill", "int", "hup", "quit", "usr1", "usr2",
                                        NULL};
static const int sig_values[] = {SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/* p:kill([sig="term"]) -> true | nil, err, code (the whole group when the
 * child leads one) */
static int proc_kill(lua_State *L) {
  proc_obj *p = check_proc(L);
  int sig = lua_type(L, 2) == LUA_TNUMBER ? (int)lua_tointeger(L, 2)
                                          : sig_values[luaL_checkoption(L, 2, "term", sig_names)];
  int err;
  if (p->exited) {
    luaL_pushfail(L);
    lua_pushliteral(L, "process has exited");
    lua_pushliteral(L, "ESRCH");
    return 3;
  }
  err = uv_kill(p->group ? -p->pid : p->pid, sig);
  if (err == UV_ESRCH && p->group) err = uv_kill(p->pid, sig);
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

static int proc_pid(lua_State *L) {
  lua_pushinteger(L, check_proc(L)->pid);
  return 1;
}

/* p:status() -> "running"|"exited"|"finished", exit code, signal */
static int proc_status(lua_State *L) {
  proc_obj *p = check_proc(L);
  lua_pushstring(L, p->finished ? "finished" : p->exited ? "exited" : "running");
  if (!p->exited) return 1;
  lua_pushinteger(L, (lua_Integer)p->exit_status);
  lua_pushinteger(L, p->term_signal);
  return 3;
}

static int proc_write_queue_size(lua_State *L) {
  proc_obj *p = check_proc(L);
  lua_pushinteger(L, p->in_open ? (lua_Integer)(uv_stream_get_write_queue_size(
                                      (uv_stream_t *)&p->in) + p->wlen) : 0);
  return 1;
}

/* p:close(): idempotent; a child still running is killed (SIGKILL to its
 * group). Callbacks do not run after close. */
static int proc_close(lua_State *L) {
  proc_obj **box = check_box(L);
  proc_obj *p = *box;
  if (p == NULL) return 0;
  *box = NULL;
  p->box = NULL;
  if (!p->finished || p->hdr.next != NULL) {
    claude_object_unlink(&p->hdr);
    proc_teardown(&p->hdr);
  } else if (p->group && p->pid > 0) {
    uv_kill(-p->pid, SIGKILL); /* stragglers of a finished child's group */
  }
  proc_free_if_done(p);
  return 0;
}

static int proc_tostring(lua_State *L) {
  proc_obj *p = *check_box(L);
  if (p == NULL) lua_pushliteral(L, "claude.Process (closed)");
  else lua_pushfstring(L, "claude.Process (pid %d, %s)", p->pid,
                       p->finished ? "finished" : p->exited ? "exited" : "running");
  return 1;
}

static const luaL_Reg proc_methods[] = {
  {"write", proc_write}, {"write_json", proc_write_json},
  {"write_control_response", proc_write_control_response}, {"close_stdin", proc_close_stdin},
  {"kill", proc_kill}, {"pid", proc_pid}, {"status", proc_status},
  {"write_queue_size", proc_write_queue_size}, {"close", proc_close}, {NULL, NULL}};
static const luaL_Reg proc_metamethods[] = {
  {"__gc", proc_close}, {"__close", proc_close}, {"__tostring", proc_tostring},
  {"__index", NULL}, {NULL, NULL}};

void claude_open_process(lua_State *L) {
  luaL_newmetatable(L, MT_PROCESS);
  luaL_setfuncs(L, proc_metamethods, 0);
  luaL_newlib(L, proc_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_spawn_process);
  lua_setfield(L, -2, "spawn_process");
}
