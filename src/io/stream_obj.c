/*
 * stream_obj.c -- claude.core.Stream: a stream (stream.c) as a Lua object,
 * on a descriptor (core.stream_open) or on the host's own stdin and stdout
 * (core.stdio), for a server that speaks over stdio or a socket it was given.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"

#define MT_STREAM "claude.core.Stream"

typedef struct stream_obj {
  claude_handle hdr;
  struct stream_obj **box; /* the userdata pointing here, or NULL once collected */
  claude_stream io;
} stream_obj;

/* Freed only when both the Lua side and libuv are done with it. */
static void sobj_free_if_done(stream_obj *o) {
  if (o->io.handles == 0 && o->box == NULL) {
    claude_stream_free(&o->io);
    free(o);
  }
}

static void sobj_closed(claude_stream *s) {
  stream_obj *o = (stream_obj *)s->owner;
  if (s->handles == 0) claude_object_unlink(&o->hdr); /* both sides ended by themselves */
  sobj_free_if_done(o);
}

static void sobj_teardown(claude_handle *h) {
  stream_obj *o = (stream_obj *)h;
  if (o->box != NULL) { /* the context goes first: detach the userdata */
    *o->box = NULL;
    o->box = NULL;
  }
  claude_stream_close(&o->io);
}

typedef struct stream_opts {
  int mode, cb_ref;
  size_t max_line;
} stream_opts;

/* Reads { mode = "lines"|"json", on_line = fn, max_line = n } at idx (a
 * table or nil); raises for a bad field. Takes the callback's ref last, so
 * nothing leaks when a field is bad. */
static void check_opts(lua_State *L, claude_ctx *ctx, int idx, stream_opts *o) {
  static const char *const modes[] = {"lines", "json", NULL};
  o->mode = CLAUDE_READ_LINES;
  o->cb_ref = LUA_NOREF;
  o->max_line = CLAUDE_DEFAULT_MAX_LINE;
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  if (lua_getfield(L, idx, "mode") != LUA_TNIL) {
    const char *mode = lua_tostring(L, -1);
    int i;
    for (i = 0; mode != NULL && modes[i] != NULL && strcmp(modes[i], mode) != 0; i++) {
    }
    if (mode == NULL || modes[i] == NULL)
      luaL_error(L, "bad field 'mode' (\"lines\" or \"json\" expected, got %s)",
                 mode != NULL ? lua_pushfstring(L, "'%s'", mode) : luaL_typename(L, -1));
    o->mode = i + 1;
  }
  if (lua_getfield(L, idx, "max_line") != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) <= 0)
      luaL_error(L, "bad field 'max_line' (positive integer expected, got %s)",
                 luaL_typename(L, -1));
    o->max_line = (size_t)lua_tointeger(L, -1);
  }
  if (lua_getfield(L, idx, "on_line") != LUA_TNIL) {
    if (!lua_isfunction(L, -1))
      luaL_error(L, "bad field 'on_line' (function expected, got %s)", luaL_typename(L, -1));
    o->cb_ref = claude_ref(ctx, L, -1);
  }
  lua_pop(L, 3);
}

/* Pushes a closed claude.core.Stream, then makes its object (linked to the
 * context, attached to the userdata). */
static stream_obj *new_stream(lua_State *L, claude_ctx *ctx, stream_opts *opts) {
  stream_obj **box = (stream_obj **)lua_newuserdatauv(L, sizeof(*box), 0);
  stream_obj *o;
  *box = NULL;
  luaL_setmetatable(L, MT_STREAM);
  o = (stream_obj *)calloc(1, sizeof(*o));
  if (o == NULL) {
    claude_unref(ctx, &opts->cb_ref);
    luaL_error(L, "out of memory");
  }
  claude_stream_init(&o->io, ctx, o, "stream", sobj_closed, NULL);
  claude_object_link(ctx, &o->hdr, "stream", sobj_teardown);
  o->box = box;
  *box = o;
  return o;
}

/* Starts the stream once its descriptors are open: writable, and reading
 * when there is a callback. On an error it closes (the userdata too) and
 * pushes the fail triple. Returns the number of results. */
static int start_stream(lua_State *L, stream_obj *o, int err, stream_opts *opts) {
  if (err != 0) {
    claude_unref(o->io.ctx, &opts->cb_ref);
    claude_object_unlink(&o->hdr);
    sobj_teardown(&o->hdr);
    sobj_free_if_done(o);
    return claude_push_uv_error(L, err);
  }
  claude_stream_writer(&o->io);
  if (opts->cb_ref != LUA_NOREF)
    claude_stream_read_start(&o->io, opts->mode, opts->cb_ref, opts->max_line);
  return 1;
}

/* core.stream_open(fd [, opts]) -> claude.core.Stream | nil, err, code: a
 * pipe, socket, tty or regular file, read and written; the stream owns fd
 * (closing it closes fd), unless opening fails. opts: { mode = "lines"|"json", on_line = fn,
 * max_line = n }; on_line gets each line (or decoded value), nil, err, line,
 * kind for a bad one ("json", "overflow", "read"), and no arguments at EOF. */
static int l_stream_open(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  lua_Integer fd = luaL_checkinteger(L, 1);
  stream_opts opts;
  stream_obj *o;
  luaL_argcheck(L, fd >= 0 && fd <= 0x7fffffff, 1, "not a file descriptor");
  check_opts(L, ctx, 2, &opts);
  o = new_stream(L, ctx, &opts);
  return start_stream(L, o, claude_stream_open_fd(&o->io, (int)fd, 0), &opts);
}

/* core.stdio([opts]) -> claude.core.Stream | nil, err, code: reads the
 * host's stdin, writes its stdout (opts as for stream_open). It works on
 * copies of fds 0 and 1, so closing it leaves them open; while it is open,
 * write to stdout through it (libuv makes a pipe non-blocking). */
static int l_stdio(lua_State *L) {
  claude_ctx *ctx = claude_ctx_get(L);
  stream_opts opts;
  stream_obj *o;
  int in, out, err = 0;
  check_opts(L, ctx, 1, &opts);
  o = new_stream(L, ctx, &opts);
  in = dup(0);
  out = dup(1);
  if (in < 0 || out < 0) err = uv_translate_sys_error(errno);
  if (err == 0 && (err = claude_stream_open_fd(&o->io, in, 0)) == 0) in = -1;
  if (err == 0 && (err = claude_stream_open_fd(&o->io, out, 1)) == 0) out = -1;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  return start_stream(L, o, err, &opts);
}

static stream_obj **check_box(lua_State *L) {
  return (stream_obj **)claude_check_object(L, 1, MT_STREAM);
}

static claude_stream *check_io(lua_State *L) {
  stream_obj *o = *check_box(L);
  if (o == NULL) luaL_error(L, "attempt to use a closed stream");
  return &o->io;
}

/* s:write(data) -> true | nil, err, code (sent before the loop next waits) */
static int sobj_write(lua_State *L) { return claude_stream_write(L, check_io(L), 2); }

/* s:write_json(value) -> true | nil, err, code: one JSON line, encoded in C */
static int sobj_write_json(lua_State *L) { return claude_stream_write_json(L, check_io(L), 2); }

/* s:write_pieces(raw1, v1, raw2, v2, ..., rawN) -> true | nil, err, "encode" */
static int sobj_write_pieces(lua_State *L) {
  return claude_stream_write_pieces(L, check_io(L), 2);
}

/* s:flush() -> true | nil, err, code: what was written goes now, not when
 * the loop next waits */
static int sobj_flush(lua_State *L) {
  int err = claude_stream_flush(check_io(L));
  if (err != 0) return claude_push_uv_error(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* s:read_with(reader): see claude_stream_read_with */
static int sobj_read_with(lua_State *L) { return claude_stream_read_with(L, check_io(L), 2); }

/* s:close_write(): the peer sees EOF once everything written has gone */
static int sobj_close_write(lua_State *L) {
  claude_stream_close_write(check_io(L));
  return 0;
}

static int sobj_write_queue_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)claude_stream_queue_size(check_io(L)));
  return 1;
}

/* s:close(): idempotent; what is still queued is dropped (close_write
 * first to send it) and callbacks do not run after it. */
static int sobj_close(lua_State *L) {
  stream_obj **box = check_box(L);
  stream_obj *o = *box;
  if (o == NULL) return 0;
  *box = NULL;
  o->box = NULL;
  claude_object_unlink(&o->hdr);
  claude_stream_close(&o->io);
  sobj_free_if_done(o);
  return 0;
}

static int sobj_tostring(lua_State *L) {
  stream_obj *o = *check_box(L);
  if (o == NULL) lua_pushliteral(L, "claude.core.Stream (closed)");
  else lua_pushfstring(L, "claude.core.Stream (%s, %s)",
                       o->io.mode == 0 ? "not reading" : o->io.eof ? "read ended" : "reading",
                       o->io.writable ? "writable" : "write ended");
  return 1;
}

static const luaL_Reg stream_methods[] = {
  {"write", sobj_write}, {"write_json", sobj_write_json}, {"write_pieces", sobj_write_pieces},
  {"close_write", sobj_close_write}, {"write_queue_size", sobj_write_queue_size},
  {"flush", sobj_flush},
  {"read_with", sobj_read_with}, {"close", sobj_close}, {NULL, NULL}};
static const luaL_Reg stream_metamethods[] = {
  {"__gc", sobj_close}, {"__close", sobj_close}, {"__tostring", sobj_tostring},
  {"__index", NULL}, {NULL, NULL}};

/* Adds core.stream_open and core.stdio to the module table on top of the stack. */
void claude_open_stream(lua_State *L) {
  claude_new_class(L, MT_STREAM, stream_metamethods, stream_methods);
  lua_pushcfunction(L, l_stream_open);
  lua_setfield(L, -2, "stream_open");
  lua_pushcfunction(L, l_stdio);
  lua_setfield(L, -2, "stdio");
}
