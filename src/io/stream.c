/*
 * stream.c -- one byte stream over libuv, whatever carries it: a child's
 * pipes, a socket, the host's own stdin/stdout, a regular file.
 *
 * Reading is framed in C: lines (or JSON values, one per line) are handed to
 * a Lua callback, all the lines of one read in one protected call; a callback
 * that raises is reported and the next line still arrives. Writing is
 * coalesced: bytes wait in a buffer that a prepare handle flushes once per
 * turn of the loop, just before it waits, so 64 answers written in one turn
 * cost one system call; 64 KiB or more skip the buffer. Closing the write
 * side flushes, then shuts down after the queued writes. Nothing here knows
 * a protocol: write_pieces joins raw bytes and JSON-encoded values.
 *
 * claude.core.Stream (stream_obj.c) is the stream as a Lua object; a
 * claude.core.Process (process.c) holds three.
 * (Over 600 lines: reading, writing and closing share the stream's handles
 * and buffers, and each depends on the others' state.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "io/io.h"
#include "json/json.h"

#define DIRECT_WRITE ((size_t)64 * 1024) /* larger writes skip the buffer */
#define FILE_READ ((size_t)64 * 1024)    /* one read(2) of a regular file per turn */

typedef struct write_req {
  uv_write_t req;
  char data[];
} write_req;

/* ---- handles -------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h) {
  claude_stream *s = (claude_stream *)h->data;
  s->handles--;
  claude_handle_closed(s->ctx);
  s->on_closed(s); /* last: it may free the stream */
}

static void close_handle(claude_stream *s, uv_handle_t *h, int *open) {
  if (!*open) return;
  *open = 0;
  uv_close(h, handle_closed);
}

static void opened(claude_stream *s, uv_handle_t *h) {
  h->data = s;
  s->handles++;
  claude_handle_opened(s->ctx);
}

/* Closes the handles neither side needs any more: rh once reading ended and,
 * when it also carries the writes, writing too; wh_own once writing ended. */
static void close_idle_handles(claude_stream *s) {
  if (s->r_open && s->eof && (s->wh != &s->rh.stream || s->wdone))
    close_handle(s, &s->rh.handle, &s->r_open);
  if (s->w_open && s->wdone) close_handle(s, &s->wh_own.handle, &s->w_open);
}

void claude_stream_init(claude_stream *s, claude_ctx *ctx, void *owner, const char *name,
                        claude_stream_fn on_closed, claude_stream_fn on_ended) {
  memset(s, 0, sizeof(*s));
  s->ctx = ctx;
  s->owner = owner;
  s->name = name;
  s->on_closed = on_closed;
  s->on_ended = on_ended;
  s->cb_ref = s->reader_ref = LUA_NOREF;
  s->r_fd = s->w_fd = -1;
  s->eof = s->wdone = 1; /* neither reads nor writes until told */
}

uv_pipe_t *claude_stream_pipe(claude_stream *s) {
  uv_pipe_init(s->ctx->loop, &s->rh.pipe, 0);
  opened(s, &s->rh.handle);
  s->r_open = 1;
  return &s->rh.pipe;
}

int claude_stream_open_fd(claude_stream *s, int fd, int which) {
  claude_uv_stream *h = which == 0 ? &s->rh : &s->wh_own;
  uv_loop_t *loop = s->ctx->loop;
  int err;
  if (fcntl(fd, F_GETFD) < 0) return uv_translate_sys_error(errno);
  switch (uv_guess_handle(fd)) {
    case UV_TTY:
      err = uv_tty_init(loop, &h->tty, fd, which == 0);
      break;
    case UV_NAMED_PIPE:
      err = uv_pipe_init(loop, &h->pipe, 0);
      if (err == 0) {
        opened(s, &h->handle);
        err = uv_pipe_open(&h->pipe, fd);
        goto done;
      }
      break;
    case UV_TCP:
      err = uv_tcp_init(loop, &h->tcp);
      if (err == 0) {
        opened(s, &h->handle);
        err = uv_tcp_open(&h->tcp, fd);
        goto done;
      }
      break;
    case UV_FILE: /* a regular file or a device: plain read(2)/write(2) */
      if (which != 0) {
        s->w_fd = fd;
        return 0;
      }
      s->r_fd = fd;
      s->r_file = 1;
      err = uv_idle_init(loop, &h->idle);
      break;
    default:
      return UV_EINVAL; /* UDP, or not a descriptor we can use */
  }
  if (err != 0) return err;
  opened(s, &h->handle);
done:
  if (which == 0) s->r_open = 1;
  else s->w_open = 1;
  return err; /* on failure the handle is open and gets closed with the rest */
}

/* ---- reading -------------------------------------------------------------- */

typedef struct deliver_args {
  claude_stream *s;
  const char *data;
  size_t len;
  const char *err;
  const char *code;
} deliver_args;

/* Pushes the callback's arguments for one line: the line, or its decoded
 * value (or what the stream's reader makes of it), or nil, message, line,
 * "json" when it is not JSON. Returns how many; or -1, the callback popped,
 * when the reader handled the line itself. `frame`: the line's scratch frame
 * for the reader, or NULL. */
static int push_line(lua_State *L, claude_stream *s, const char *line, size_t len, void *frame) {
  int n;
  if (s->mode != CLAUDE_READ_JSON) {
    lua_pushlstring(L, line, len);
    return 1;
  }
  if (s->reader != NULL) { /* the callback is on top */
    int base = lua_gettop(L);
    n = s->reader->read(s->reader, L, line, len, frame);
    if (n > 0) return n;
    if (n == CLAUDE_READER_DONE) {
      lua_settop(L, base - 1);
      return -1;
    }
    if (n < 0) { /* a function and its argument, called instead of the callback */
      lua_remove(L, base);
      return 1;
    }
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
    int n = push_line(L, a->s, a->data, a->len, NULL);
    if (n >= 0) lua_call(L, n, 0);
  }
  return 0;
}

static void deliver(claude_stream *s, const char *data, size_t len, const char *err,
                    const char *code) {
  claude_ctx *ctx = s->ctx;
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
static int push_overflow(lua_State *L, claude_stream *s, size_t seen) {
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
  claude_stream *s = (claude_stream *)lua_touserdata(L, 1);
  claude_ctx *ctx = s->ctx;
  const char *line = NULL;
  size_t len;
  int kind, n;
  /* what the reader keeps for the line's callback lives in this C frame (a nested loop may
   * deliver other lines meanwhile); deliver_lines puts the pointer back after an error */
  union {
    char bytes[CLAUDE_LINE_FRAME];
    void *p;
    long long ll;
    double d;
  } frame; /* (aligned for any member a reader keeps there) */
  void *outer = ctx->line_frame;
  while (s->r_open && !ctx->closing &&
         (kind = claude_lines_next(&s->lines, &line, &len)) != CLAUDE_LINE_NONE) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->cb_ref);
    if (kind == CLAUDE_LINE_OVERFLOW) {
      n = push_overflow(L, s, len);
      ctx->line_frame = NULL;
    } else {
      n = push_line(L, s, line, len, &frame);
      if (n < 0) continue; /* the reader handled the line itself */
      ctx->line_frame = s->reader != NULL ? (void *)&frame : NULL;
    }
    lua_call(L, n, 0);
    ctx->line_frame = outer;
  }
  return 0;
}

/* Delivers the complete lines held; an error in one callback is reported
 * (claude_pcall) and the lines after it are still delivered. */
static void deliver_lines(claude_stream *s) {
  claude_ctx *ctx = s->ctx;
  void *outer = ctx->line_frame;
  if (s->cb_ref == LUA_NOREF || ctx->closing) { /* nobody listens: drop them */
    const char *line;
    size_t len;
    while (claude_lines_next(&s->lines, &line, &len) != CLAUDE_LINE_NONE) {
    }
    return;
  }
  for (;;) {
    lua_State *L = claude_cb_state(ctx);
    int status;
    lua_pushcfunction(L, deliver_lines_p);
    lua_pushlightuserdata(L, s);
    status = claude_pcall(ctx, L, 1);
    ctx->line_frame = outer; /* (an error left deliver_lines_p's) */
    if (status == LUA_OK || !s->r_open || ctx->closing) return;
  }
}

/* The stream lets go of its reader: what it kept goes, and its userdata may
 * be collected. */
static void drop_reader(claude_stream *s) {
  if (s->reader == NULL) return;
  s->reader->release(s->reader, s->ctx->L);
  s->reader = NULL;
  claude_unref(s->ctx, &s->reader_ref);
}

void claude_stream_end(claude_stream *s) {
  if (s->eof) return;
  s->eof = 1;
  if (s->r_open) {
    const char *rest;
    size_t len;
    if (s->r_file) uv_idle_stop(&s->rh.idle);
    else uv_read_stop(&s->rh.stream);
    deliver_lines(s);
    if (claude_lines_rest(&s->lines, &rest, &len)) deliver(s, rest, len, NULL, NULL);
    claude_lines_free(&s->lines);
    deliver(s, NULL, 0, NULL, NULL);
  }
  claude_unref(s->ctx, &s->cb_ref);
  drop_reader(s);
  close_idle_handles(s);
  if (s->on_ended != NULL) s->on_ended(s);
}

/* What one read brought: bytes, EOF or an error. */
static void on_read(claude_stream *s, ssize_t nread) {
  if (nread > 0) {
    claude_lines_feed(&s->lines, (size_t)nread);
    deliver_lines(s);
  } else if (nread == UV_ENOBUFS) {
    deliver(s, NULL, 0, "out of memory for the line buffer", "read");
    claude_stream_end(s);
  } else if (nread < 0) {
    if (nread != UV_EOF) deliver(s, NULL, 0, uv_strerror((int)nread), "read");
    claude_stream_end(s);
  }
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  claude_stream *s = (claude_stream *)h->data;
  char *base;
  size_t len;
  claude_lines_space(&s->lines, suggested, &base, &len);
  *buf = uv_buf_init(base, (unsigned int)(len > 0x40000000u ? 0x40000000u : len));
}

static void read_cb(uv_stream_t *h, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  on_read((claude_stream *)h->data, nread);
}

/* A regular file is always "ready": one read(2) per turn of the loop (an
 * idle handle), so a big file does not hold the loop for its whole length. */
static void file_read_cb(uv_idle_t *h) {
  claude_stream *s = (claude_stream *)h->data;
  char *base;
  size_t len;
  ssize_t n;
  claude_lines_space(&s->lines, FILE_READ, &base, &len);
  if (base == NULL) {
    on_read(s, UV_ENOBUFS);
    return;
  }
  do n = read(s->r_fd, base, len > FILE_READ ? FILE_READ : len);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* next turn */
  on_read(s, n > 0 ? n : n == 0 ? UV_EOF : uv_translate_sys_error(errno));
}

void claude_stream_read_start(claude_stream *s, int mode, int cb_ref, size_t max_line) {
  int err;
  s->mode = mode;
  s->cb_ref = cb_ref;
  claude_lines_init(&s->lines, max_line);
  if (!s->r_open) { /* nothing to read (a child's inherited stdout): nobody to call */
    claude_unref(s->ctx, &s->cb_ref);
    return;
  }
  s->eof = 0;
  err = s->r_file ? uv_idle_start(&s->rh.idle, file_read_cb)
                  : uv_read_start(&s->rh.stream, alloc_cb, read_cb);
  if (err != 0) {
    deliver(s, NULL, 0, uv_strerror(err), "read");
    claude_stream_end(s);
  }
}

int claude_stream_read_with(lua_State *L, claude_stream *s, int idx) {
  claude_line_reader *r = NULL;
  if (!lua_isnoneornil(L, idx)) r = (claude_line_reader *)luaL_checkudata(L, idx, CLAUDE_LINE_READER);
  drop_reader(s);
  if (r != NULL) {
    s->reader_ref = claude_ref(s->ctx, L, idx);
    s->reader = r;
  }
  return 0;
}

/* ---- writing -------------------------------------------------------------- */

void claude_stream_writer(claude_stream *s) {
  if (!s->w_open && s->w_fd < 0 && s->r_file) s->w_fd = s->r_fd; /* one file both ways */
  s->wh = s->w_open ? &s->wh_own.stream : s->w_fd >= 0 ? NULL : &s->rh.stream;
  uv_prepare_init(s->ctx->loop, &s->flush);
  opened(s, (uv_handle_t *)&s->flush);
  s->flush_open = 1;
  s->writable = 1;
  s->wdone = 0;
}

static void write_done(uv_write_t *req, int status) {
  (void)status; /* a dead reader shows up as its end (EOF, exit) */
  free(req);
}

/* A regular file takes everything (write(2) blocks at most for the disk). */
static int write_file(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return uv_translate_sys_error(errno);
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes bytes after anything already queued: what the handle takes now goes
 * at once, the rest is copied into a request libuv finishes later. */
static int write_now(claude_stream *s, const char *data, size_t len) {
  uv_stream_t *h = s->wh;
  size_t done = 0;
  write_req *w;
  uv_buf_t buf;
  int n;
  if (h == NULL) return write_file(s->w_fd, data, len);
  s->ctx->writes++;
  if (uv_stream_get_write_queue_size(h) == 0) {
    buf = uv_buf_init((char *)data, (unsigned int)len);
    n = uv_try_write(h, &buf, 1);
    if (n < 0 && n != UV_EAGAIN) return n;
    if (n > 0) done = (size_t)n;
    if (done == len) return 0;
  }
  w = (write_req *)malloc(sizeof(*w) + len - done);
  if (w == NULL) return UV_ENOMEM;
  memcpy(w->data, data + done, len - done);
  buf = uv_buf_init(w->data, (unsigned int)(len - done));
  n = uv_write(&w->req, h, &buf, 1, write_done);
  if (n != 0) free(w);
  return n;
}

/* Sends the coalesced bytes; a big buffer is given back afterwards. */
static int flush_out(claude_stream *s) {
  int err = 0;
  if (s->wlen > 0) err = write_now(s, s->wbuf, s->wlen);
  s->wlen = 0;
  if (s->wcap > 4 * DIRECT_WRITE) {
    free(s->wbuf);
    s->wbuf = NULL;
    s->wcap = 0;
  }
  return err;
}

static void flush_cb(uv_prepare_t *h) {
  claude_stream *s = (claude_stream *)h->data;
  uv_prepare_stop(h);
  flush_out(s);
}

static void flush_due(claude_stream *s) {
  if (!uv_is_active((uv_handle_t *)&s->flush)) {
    uv_prepare_start(&s->flush, flush_cb);
    claude_wake(s->ctx);
  }
}

/* Appends to the coalescing buffer; 0 when out of memory. */
static int append_out(claude_stream *s, const char *data, size_t len) {
  size_t need = s->wlen + len;
  if (len == 0) return 1; /* the buffer may not exist yet: no memcpy to NULL */
  if (!claude_grow(&s->wbuf, &s->wcap, need, 4096)) return 0;
  memcpy(s->wbuf + s->wlen, data, len);
  s->wlen += len;
  return 1;
}

static int push_closed(lua_State *L, claude_stream *s) {
  luaL_pushfail(L);
  lua_pushfstring(L, "%s is closed", s->name);
  lua_pushliteral(L, "closed");
  return 3;
}

/* Queues `len` bytes (plus a newline when `nl`); returns 1 with true
 * pushed, or pushes the fail triple. */
static int do_write(lua_State *L, claude_stream *s, const char *data, size_t len, int nl) {
  if (!s->writable) return push_closed(L, s);
  if (s->wlen == 0 && len >= DIRECT_WRITE) { /* big: no copy into the buffer */
    int err = write_now(s, data, len);
    if (err == 0 && nl) err = write_now(s, "\n", 1);
    if (err != 0) return claude_push_uv_error(L, err);
    claude_wake(s->ctx);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (!append_out(s, data, len) || (nl && !append_out(s, "\n", 1)))
    return luaL_error(L, "out of memory");
  flush_due(s);
  lua_pushboolean(L, 1);
  return 1;
}

int claude_stream_write(lua_State *L, claude_stream *s, int idx) {
  size_t len;
  const char *data = luaL_checklstring(L, idx, &len);
  return do_write(L, s, data, len, 0);
}

int claude_stream_write_json(lua_State *L, claude_stream *s, int idx) {
  char *buf;
  size_t len;
  int n;
  luaL_checkany(L, idx);
  if (!claude_json_encode_buffer(L, idx, &buf, &len)) return lua_error(L);
  n = do_write(L, s, buf, len, 1);
  free(buf);
  return n;
}

/* raw1, v1, raw2, v2, ..., rawN from `first` on: the raw strings copied as
 * they are, the values JSON-encoded in place, straight onto the end of the
 * write buffer, as one unit. On a value that cannot be encoded the buffer
 * goes back to where it was (nothing of the unit is sent) and the fail
 * triple says which piece: nil, "piece 4: json: ...", "encode". */
int claude_stream_write_pieces(lua_State *L, claude_stream *s, int first) {
  return claude_stream_write_at(L, s, first, NULL, lua_gettop(L) - first + 1);
}

int claude_stream_write_at(lua_State *L, claude_stream *s, int first, const int *at, int n) {
  return claude_stream_write_raw_at(L, s, first, at, n, NULL, NULL);
}

/* A light userdata piece through the context's line reader (claude_ctx.held_piece). */
static int held_of_ctx(void *ud, lua_State *L, int idx, const char **s, size_t *n) {
  claude_ctx *ctx = (claude_ctx *)ud;
  return ctx->held_piece != NULL ? ctx->held_piece(ctx, L, idx, s, n) : 0;
}

int claude_stream_write_raw_at(lua_State *L, claude_stream *s, int first, const int *at, int n,
                               const char *const *raws, const size_t *raw_lens) {
  size_t start;
  claude_pieces p;
  if (!s->writable) return push_closed(L, s);
  p.first = first;
  p.at = at;
  p.n = n;
  p.raws = raws;
  p.raw_lens = raw_lens;
  p.held = s->ctx->held_piece != NULL ? held_of_ctx : NULL;
  p.held_ud = s->ctx;
  start = s->wlen;
  if (!claude_json_pieces_append(L, &p, &s->wbuf, &s->wlen, &s->wcap)) {
    s->wlen = start; /* (as it was: nothing of the unit is sent) */
    luaL_pushfail(L);
    lua_insert(L, -2);
    lua_pushliteral(L, "encode");
    return 3;
  }
  flush_due(s);
  lua_pushboolean(L, 1);
  return 1;
}

static void shutdown_cb(uv_shutdown_t *req, int status) {
  claude_stream *s = (claude_stream *)req->data;
  (void)status; /* ENOTSOCK for a plain pipe: closing the handle is the EOF */
  s->wdone = 1;
  close_idle_handles(s);
}

void claude_stream_close_write(claude_stream *s) {
  if (!s->writable) return;
  s->writable = 0;
  flush_out(s);
  close_handle(s, (uv_handle_t *)&s->flush, &s->flush_open);
  s->shutdown.data = s;
  claude_wake(s->ctx);
  if (s->wh == NULL || uv_shutdown(&s->shutdown, s->wh, shutdown_cb) != 0) {
    s->wdone = 1;
    close_idle_handles(s);
  }
}

/* Sends what waits in the coalescing buffer now, not before the loop next
 * waits: for an answer that must leave even if the next callback of this turn
 * never returns (the initialize answer before a tool that spins). */
int claude_stream_flush(claude_stream *s) {
  if (!s->writable || s->wlen == 0) return 0;
  return flush_out(s);
}

size_t claude_stream_queue_size(claude_stream *s) {
  if (s->wdone) return 0;
  return (s->wh != NULL ? uv_stream_get_write_queue_size(s->wh) : 0) + s->wlen;
}

void claude_stream_close(claude_stream *s) {
  claude_unref(s->ctx, &s->cb_ref);
  drop_reader(s);
  s->writable = 0;
  s->eof = s->wdone = 1;
  close_handle(s, (uv_handle_t *)&s->flush, &s->flush_open);
  close_handle(s, &s->rh.handle, &s->r_open);
  close_handle(s, &s->wh_own.handle, &s->w_open);
}

/* Regular files are plain descriptors, not libuv handles: they are closed
 * here, with the buffers. */
void claude_stream_free(claude_stream *s) {
  if (s->r_fd >= 0 && s->r_fd != s->w_fd) close(s->r_fd);
  if (s->w_fd >= 0) close(s->w_fd);
  s->r_fd = s->w_fd = -1;
  claude_lines_free(&s->lines);
  free(s->wbuf);
  s->wbuf = NULL;
  s->wlen = s->wcap = 0;
}
