/*
 * linger.c -- the lingering close of a connection of the HTTP server. A
 * connection closed while its client may still be sending (in the middle of
 * a request, or with bytes unread) shuts its sending side down and reads and
 * drops what the client still sends for a moment: closing a socket with
 * unread data sends a reset, which would lose the answer written just before
 * (413, and the 400 or 431 of a request framing.c refused, which is written
 * here).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server.h"

/* How long a closed connection reads what its client still sends. */
#define LINGER_MS 2000

/* A closed connection's socket (a dup that outlived h2o's), read and
 * dropped until the client ends or LINGER_MS pass. Its handles are unref'ed:
 * it keeps no loop running. */
typedef struct http_linger {
  claude_handle hdr;
  uv_poll_t poll;
  uv_timer_t timer;
  int fd;
  int open;  /* handles not closed yet */
  int ended;
} http_linger;

static void linger_handle_closed(uv_handle_t *h) {
  http_linger *l = (http_linger *)h->data;
  claude_ctx *ctx = l->hdr.ctx;
  claude_handle_closed(ctx); /* the context outlives this: the other handle counts */
  if (--l->open > 0) return;
  close(l->fd);
  free(l);
}

static void linger_end(http_linger *l) {
  if (l->ended) return;
  l->ended = 1;
  claude_object_unlink(&l->hdr);
  uv_close((uv_handle_t *)&l->poll, linger_handle_closed);
  uv_close((uv_handle_t *)&l->timer, linger_handle_closed);
}

static void linger_teardown(claude_handle *h) { linger_end((http_linger *)h); }

static void linger_timeout(uv_timer_t *t) { linger_end((http_linger *)t->data); }

static void linger_readable(uv_poll_t *p, int status, int events) {
  http_linger *l = (http_linger *)p->data;
  char buf[16384];
  ssize_t n;
  if (status < 0) {
    linger_end(l);
    return;
  }
  do n = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
  while (n > 0 || (n < 0 && errno == EINTR));
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) linger_end(l);
}

/* Writes `text` (an answer, or nothing), shuts the sending side down and
 * reads what still comes; takes fd. */
static void linger_start(claude_ctx *ctx, int fd, const char *text, int n) {
  http_linger *l;
  if (n > 0 && send(fd, text, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) { /* gone: fine */
  }
  shutdown(fd, SHUT_WR);
  l = (http_linger *)calloc(1, sizeof *l);
  if (l == NULL || uv_poll_init(ctx->loop, &l->poll, fd) != 0) {
    free(l);
    close(fd);
    return;
  }
  l->fd = fd;
  l->poll.data = l;
  uv_timer_init(ctx->loop, &l->timer);
  l->timer.data = l;
  l->open = 2;
  claude_handle_opened(ctx);
  claude_handle_opened(ctx);
  claude_object_link(ctx, &l->hdr, "http_linger", linger_teardown);
  uv_poll_start(&l->poll, UV_READABLE | UV_DISCONNECT, linger_readable);
  uv_timer_start(&l->timer, linger_timeout, LINGER_MS, 0);
  uv_unref((uv_handle_t *)&l->poll);
  uv_unref((uv_handle_t *)&l->timer);
}

/* Writes the answer to a refused request (framing.status), shuts the
 * sending side down and reads what still comes; takes fd. */
void claude_http_linger(claude_ctx *ctx, int fd, const http_framing *f) {
  char text[512];
  int n = 0;
  if (f->status != 0)
    n = snprintf(text, sizeof text,
                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 "Connection: close\r\nContent-Length: %d\r\n\r\n%s\n",
                 f->status, f->status == 431 ? "Request Header Fields Too Large" : "Bad Request",
                 (int)strlen(f->why) + 1, f->why);
  linger_start(ctx, fd, text, n);
}

void claude_http_linger_refused(claude_ctx *ctx, int fd) {
  static const char text[] = "HTTP/1.1 503 Service Unavailable\r\n"
                             "Content-Type: text/plain; charset=utf-8\r\n"
                             "Retry-After: 1\r\nConnection: close\r\nContent-Length: 46\r\n\r\n"
                             "too many connections (max_connections): retry\n";
  linger_start(ctx, fd, text, (int)sizeof text - 1);
}
