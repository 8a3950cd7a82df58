/*
 * io.h -- byte streams (stream.c, and the claude.core.Stream object of
 * stream_obj.c), line framing (lines.c) and child processes (process.c).
 * Private to claude.core.
 */
#ifndef CLAUDE_IO_H
#define CLAUDE_IO_H

#include <stddef.h>

#include "context.h"

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

/* A reader that a protocol plugs into a stream's JSON lines (the MCP envelope
 * readers, mcp/reader.c): the stream knows nothing of what it reads. It is a
 * claude.core.LineReader userdata (its first member this struct), which the
 * stream holds by a ref while reading with it.
 * read: the callback is on top of the stack; pushes the callback's values for
 * one line and returns how many; or 0 (nothing pushed: the stream decodes the
 * line whole); or -1 (a function and its one argument pushed, which the
 * stream calls instead of its callback); or CLAUDE_READER_DONE (nothing
 * pushed, the line was handled). `frame`: CLAUDE_LINE_FRAME bytes the stream
 * keeps from the read to the end of the line's callback (ctx->line_frame
 * points there meanwhile), or NULL outside a callback of the usual kind.
 * release: drops what the reader keeps from line to line (its refs); the
 * stream calls it when reading ends. */
#define CLAUDE_LINE_READER "claude.core.LineReader"
#define CLAUDE_LINE_FRAME 160
#define CLAUDE_READER_DONE (-2)
typedef struct claude_line_reader claude_line_reader;
struct claude_line_reader {
  int (*read)(claude_line_reader *r, lua_State *L, const char *line, size_t len, void *frame);
  void (*release)(claude_line_reader *r, lua_State *L);
};

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
  /* a protocol's reader of its usual lines, tried before the JSON decoder,
   * and the ref that keeps its userdata */
  claude_line_reader *reader;
  int reader_ref;
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
int claude_stream_flush(claude_stream *s);
int claude_stream_write_json(lua_State *L, claude_stream *s, int idx);
int claude_stream_write_pieces(lua_State *L, claude_stream *s, int first);
/* write_pieces' body for the n pieces at the indices at[0..n-1] (stack slots or upvalues:
 * raw pieces at the even positions), or, when at is NULL, from stack slot first on. */
int claude_stream_write_at(lua_State *L, claude_stream *s, int first, const int *at, int n);
/* The same, the raw piece k (at position 2k) given as its bytes when raws[k] is not NULL
 * (a string the caller keeps alive: no look at the stack for it). */
int claude_stream_write_raw_at(lua_State *L, claude_stream *s, int first, const int *at, int n,
                               const char *const *raws, const size_t *raw_lens);
/* The read_with(reader) method's body: the JSON lines go to `reader` (a
 * claude.core.LineReader, such as core.envelope_reader's) before the decoder;
 * nil or none: every line decoded whole. Returns 0 Lua results. */
int claude_stream_read_with(lua_State *L, claude_stream *s, int idx);

/* uv_spawn, with every descriptor of the host but the child's stdio closed
 * in the child at its exec (inherit.c). */
int claude_spawn(uv_loop_t *loop, uv_process_t *handle, const uv_process_options_t *opts);

/* Each adds its functions and class to the module table on top of the
 * stack: core.stream_open, core.stdio, claude.core.Stream and the
 * claude.core.LineReader class its readers share (stream_obj.c);
 * core.spawn_process and claude.core.Process (process.c). */
void claude_open_stream(lua_State *L);
void claude_open_process(lua_State *L);

#endif
