/*
 * process.c -- child processes with piped stdio.
 *
 * A claude.core.Process owns a uv_process_t and three streams (stream.c):
 * stdin is written, stdout and stderr are read as lines (or decoded JSON
 * values) handed to Lua callbacks. The exit callback runs only after the
 * child has exited *and* every output stream has reached EOF, so no output is
 * ever lost to the exit race. Children run in their own process group and,
 * where util-linux's setpriv exists, get a parent-death signal, so they never
 * outlive the host; kill signals the group. A child gets no descriptor of the
 * host but its stdio (inherit.c).
 */
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"

#define MT_PROCESS "claude.core.Process"

enum { OUT_LINES, OUT_JSON, OUT_INHERIT, OUT_IGNORE }; /* the order of opt_mode's names */

typedef struct proc_obj proc_obj;

struct proc_obj {
  claude_handle hdr;
  proc_obj **box; /* the userdata pointing here, or NULL once collected */
  uv_process_t handle;
  claude_stream in, out, err;
  int proc_open, handles; /* handles of the process itself (not its streams) */
  int exited, finished;
  int64_t exit_status;
  int term_signal;
  int exit_ref;
  int pid;
  int group; /* the child leads its own process group */
  uint64_t eof_grace_ms; /* after exit, how long to wait for EOF (0: forever) */
  uv_timer_t grace_timer;
  int grace_open;
};

/* ------------------------------------------------------------------------- */

static void proc_free_if_done(proc_obj *p) {
  if (p->handles == 0 && p->in.handles == 0 && p->out.handles == 0 && p->err.handles == 0 &&
      p->box == NULL) {
    claude_stream_free(&p->in);
    claude_stream_free(&p->out);
    claude_stream_free(&p->err);
    free(p);
  }
}

static void stream_closed(claude_stream *s) { proc_free_if_done((proc_obj *)s->owner); }

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

/* Runs the exit callback once the child exited and its output ended. */
static void maybe_finish(proc_obj *p) {
  claude_ctx *ctx = p->hdr.ctx;
  if (p->finished || !p->exited || !p->out.eof || !p->err.eof) return;
  p->finished = 1;
  claude_stream_close(&p->in);
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
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
  claude_unref(ctx, &p->exit_ref);
}

static void output_ended(claude_stream *s) { maybe_finish((proc_obj *)s->owner); }

/* The grace after exit ran out: a grandchild still holds a pipe open. What
 * was written so far has been read; end the streams there. */
static void grace_expired(uv_timer_t *t) {
  proc_obj *p = (proc_obj *)t->data;
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
  claude_stream_end(&p->out);
  claude_stream_end(&p->err);
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
  claude_unref(h->ctx, &p->exit_ref);
  p->finished = 1;
  claude_stream_close(&p->in);
  claude_stream_close(&p->out);
  claude_stream_close(&p->err);
  close_handle(p, (uv_handle_t *)&p->handle, &p->proc_open);
  close_handle(p, (uv_handle_t *)&p->grace_timer, &p->grace_open);
}

/* A child's stdin as a pipe(2): the child inherits its end, ours is opened
 * once the child runs. Not libuv's UV_CREATE_PIPE, a socketpair: a message
 * through a socket costs the kernel more, about 3 us more a round trip to a
 * child that answers at once (bench/mcp_client's server). Its stdout and
 * stderr stay socketpairs: their bigger buffers carry a stream of large
 * messages (bench/run's stream cases) a third faster than a pipe's 64 KiB. */
typedef struct child_pipe {
  uv_file ours, theirs;
} child_pipe;

static int child_pipe_make(child_pipe *cp, uv_stdio_container_t *c) {
  uv_file fds[2]; /* both close-on-exec: the child's becomes its 0 */
  int err = uv_pipe(fds, 0, 0);
  if (err != 0) return err;
  cp->ours = fds[1];
  cp->theirs = fds[0];
  c->flags = UV_INHERIT_FD;
  c->data.fd = cp->theirs;
  return 0;
}

/* After the spawn: the child's end is the child's alone; ours opens in the
 * stream's pipe handle (non-blocking), or closes when the spawn failed. */
static int child_pipe_finish(child_pipe *cp, claude_stream *s, int spawned) {
  int err = 0;
  if (cp->theirs >= 0) close(cp->theirs);
  if (cp->ours >= 0) {
    if (spawned) err = uv_pipe_open(&s->rh.pipe, cp->ours);
    if (!spawned || err != 0) close(cp->ours);
  }
  cp->ours = cp->theirs = -1;
  return err;
}

/* Sets up stdout or stderr: a pipe read as lines or JSON (reading starts
 * after the spawn), the host's own descriptor, or nothing. */
static void setup_output(claude_stream *s, int mode, uv_stdio_container_t *c, int fd) {
  if (mode == OUT_LINES || mode == OUT_JSON) {
    c->flags = (uv_stdio_flags)(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
    c->data.stream = (uv_stream_t *)claude_stream_pipe(s);
  } else if (mode == OUT_INHERIT) {
    c->flags = UV_INHERIT_FD;
    c->data.fd = fd;
  } else {
    c->flags = UV_IGNORE;
  }
}

/* core.spawn_process{ file, args=, env=, cwd=, stdin="pipe"|"ignore"|"inherit",
 *   stdout=, stderr= ("lines"|"json"|"inherit"|"ignore"), on_stdout=, on_stderr=,
 *   on_exit=, max_line=, group=true, pdeathsig=true, eof_grace=seconds }
 *   -> claude.core.Process
 *   | nil, err, code */
static int l_spawn_process(lua_State *L) {
  static const char *const setpriv[] = {"/usr/bin/setpriv", "--pdeathsig", "TERM", "--"};
  claude_ctx *ctx = claude_ctx_get(L);
  uv_process_options_t opts;
  uv_stdio_container_t stdio[3];
  child_pipe in_pipe = {-1, -1};
  proc_obj **box;
  proc_obj *p;
  const char *file, *in_mode;
  size_t max_line;
  int err = 0, spawned = 0, use_setpriv, args_idx = 0, out_mode, err_mode;
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
  claude_stream_init(&p->in, ctx, p, "stdin", stream_closed, NULL);
  claude_stream_init(&p->out, ctx, p, "stdout", stream_closed, output_ended);
  claude_stream_init(&p->err, ctx, p, "stderr", stream_closed, output_ended);

  if (strcmp(in_mode, "pipe") == 0) {
    claude_stream_pipe(&p->in);
    claude_stream_writer(&p->in);
    err = child_pipe_make(&in_pipe, &stdio[0]);
  } else if (strcmp(in_mode, "inherit") == 0) {
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = 0;
  } else {
    stdio[0].flags = UV_IGNORE;
  }
  out_mode = opt_mode(L, 1, "stdout", "lines");
  err_mode = opt_mode(L, 1, "stderr", "inherit");
  setup_output(&p->out, out_mode, &stdio[1], 1);
  setup_output(&p->err, err_mode, &stdio[2], 2);
  claude_object_link(ctx, &p->hdr, "process", proc_teardown);
  p->box = box;
  *box = p;

  opts.stdio_count = 3;
  opts.stdio = stdio;
  opts.exit_cb = on_exit_cb;
  if (p->group) opts.flags |= UV_PROCESS_DETACHED;
  p->handle.data = p;
  if (err == 0) {
    spawned = 1; /* the process handle is initialized, even when the spawn fails */
    err = claude_spawn(ctx->loop, &p->handle, &opts); /* only its stdio: inherit.c */
  }
  /* (cannot fail for a pipe(2) just made) a child that cannot be talked to goes */
  if (child_pipe_finish(&in_pipe, &p->in, err == 0) != 0) uv_process_kill(&p->handle, SIGKILL);
  if (err != 0) {
    /* The process handle (when the spawn was tried) still needs closing;
     * output pipes never opened. */
    if (spawned) {
      p->proc_open = 1;
      p->handles++;
      claude_handle_opened(ctx);
    }
    p->exited = 1;
    claude_object_unlink(&p->hdr);
    proc_teardown(&p->hdr); /* detaches the box: the userdata becomes closed */
    return claude_push_uv_error(L, err);
  }
  p->proc_open = 1;
  p->handles++;
  claude_handle_opened(ctx);
  p->pid = p->handle.pid;
  claude_stream_read_start(&p->out, out_mode == OUT_JSON ? CLAUDE_READ_JSON : CLAUDE_READ_LINES,
                           opt_callback(ctx, L, 1, "on_stdout"), max_line);
  claude_stream_read_start(&p->err, err_mode == OUT_JSON ? CLAUDE_READ_JSON : CLAUDE_READ_LINES,
                           opt_callback(ctx, L, 1, "on_stderr"), max_line);
  p->exit_ref = opt_callback(ctx, L, 1, "on_exit");
  return 1;
}

/* ---- methods ------------------------------------------------------------ */

static proc_obj **check_box(lua_State *L) {
  return (proc_obj **)claude_check_object(L, 1, MT_PROCESS);
}

static proc_obj *check_proc(lua_State *L) {
  proc_obj *p = *check_box(L);
  if (p == NULL) luaL_error(L, "attempt to use a closed process");
  return p;
}

/* p:write(data) -> true | nil, err, code (sent before the loop next waits) */
static int proc_write(lua_State *L) { return claude_stream_write(L, &check_proc(L)->in, 2); }

/* p:write_json(value): one JSON line, encoded in C */
static int proc_write_json(lua_State *L) {
  return claude_stream_write_json(L, &check_proc(L)->in, 2);
}

/* p:write_pieces(raw1, v1, raw2, v2, ..., rawN) -> true | nil, err, code:
 * raw strings and JSON-encoded values as one unit, or nothing of it */
static int proc_write_pieces(lua_State *L) {
  return claude_stream_write_pieces(L, &check_proc(L)->in, 2);
}

/* The raw pieces of a pieces writer (its upvalues 2 to 5, which keep the strings) as bytes. */
typedef struct raw_pieces {
  const char *raw[4];
  size_t len[4];
} raw_pieces;

/* The function p:pieces_writer makes: f(v1, v2, v3[, last]) writes raw1 v1 raw2 v2 raw3 v3
 * and last (or its own) as p:write_pieces does, and returns true; else (stdin closed, a
 * value JSON cannot hold) it returns what its fallback returns for the same arguments.
 * (Upvalue 7: the raw pieces' bytes, read once.) */
static int pieces_write(lua_State *L) {
  proc_obj *p = *(proc_obj **)lua_touserdata(L, lua_upvalueindex(1));
  lua_settop(L, 4);
  if (p != NULL) { /* (the pieces where they are: no copies on the stack) */
    const int at[7] = {lua_upvalueindex(2), 1, lua_upvalueindex(3), 2, lua_upvalueindex(4), 3,
                       lua_toboolean(L, 4) ? 4 : lua_upvalueindex(5)};
    raw_pieces *rp = (raw_pieces *)lua_touserdata(L, lua_upvalueindex(7));
    const char *raws[4] = {rp->raw[0], rp->raw[1], rp->raw[2], at[6] == 4 ? NULL : rp->raw[3]};
    if (claude_stream_write_raw_at(L, &p->in, 1, at, 7, raws, rp->len) == 1 &&
        lua_toboolean(L, -1))
      return 1;
    lua_settop(L, 4);
  }
  lua_pushvalue(L, lua_upvalueindex(6));
  lua_insert(L, 1);
  lua_call(L, 4, LUA_MULTRET);
  return lua_gettop(L);
}

/* p:pieces_writer(raw1, raw2, raw3, last, fallback) -> f: a writer of three values between
 * raw pieces, with no Lua around its write (the MCP client's tools/call: the envelope around
 * the id, the tool's name and its arguments). */
static int proc_pieces_writer(lua_State *L) {
  int i;
  raw_pieces *rp;
  check_proc(L);
  for (i = 2; i <= 5; i++) luaL_checktype(L, i, LUA_TSTRING);
  luaL_checktype(L, 6, LUA_TFUNCTION);
  lua_settop(L, 6);
  rp = (raw_pieces *)lua_newuserdatauv(L, sizeof *rp, 0);
  for (i = 0; i < 4; i++) rp->raw[i] = lua_tolstring(L, i + 2, &rp->len[i]);
  lua_pushcclosure(L, pieces_write, 7);
  return 1;
}

/* p:read_with(reader): the reader of stdout's lines (claude_stream_read_with) */
static int proc_read_with(lua_State *L) {
  return claude_stream_read_with(L, &check_proc(L)->out, 2);
}

/* p:close_stdin(): EOF for the child once everything written has gone */
static int proc_close_stdin(lua_State *L) {
  claude_stream_close_write(&check_proc(L)->in);
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
  lua_pushinteger(L, (lua_Integer)claude_stream_queue_size(&p->in));
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
  if (p == NULL) lua_pushliteral(L, "claude.core.Process (closed)");
  else lua_pushfstring(L, "claude.core.Process (pid %d, %s)", p->pid,
                       p->finished ? "finished" : p->exited ? "exited" : "running");
  return 1;
}

static const luaL_Reg proc_methods[] = {
  {"write", proc_write}, {"write_json", proc_write_json},
  {"write_pieces", proc_write_pieces}, {"pieces_writer", proc_pieces_writer},
  {"close_stdin", proc_close_stdin},
  {"kill", proc_kill}, {"pid", proc_pid}, {"status", proc_status},
  {"write_queue_size", proc_write_queue_size}, {"read_with", proc_read_with},
  {"close", proc_close}, {NULL, NULL}};
static const luaL_Reg proc_metamethods[] = {
  {"__gc", proc_close}, {"__close", proc_close}, {"__tostring", proc_tostring},
  {"__index", NULL}, {NULL, NULL}};

void claude_open_process(lua_State *L) {
  claude_new_class(L, MT_PROCESS, proc_metamethods, proc_methods);
  lua_pushcfunction(L, l_spawn_process);
  lua_setfield(L, -2, "spawn_process");
}
