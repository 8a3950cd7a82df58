/*
 * framing.c -- follows the framing of the requests on one connection
 * (RFC 9112 §6), byte by byte, before h2o reads them (server.c hands
 * each read here first).
 *
 * h2o 2.2 frames bodies in ways a proxy in front of it may not: with both
 * Content-Length and Transfer-Encoding it takes the chunked body, with two
 * Content-Lengths the first, a folded line is part of the field before; and
 * it drops Content-Length and Transfer-Encoding from the request it hands on,
 * so that the handler cannot tell. Where two parsers disagree on where a
 * request ends, the rest of one request is a second, hidden, request to the
 * other (request smuggling). So this parser takes only a strict subset of
 * HTTP/1.1, on which h2o's parser (picohttpparser) cannot disagree, and cuts
 * the stream at the first byte outside it: h2o never sees that byte, so never
 * completes that request, and the connection is closed with a 400 (or a 431
 * for a head too large), written once h2o is done with it. Every byte h2o
 * does see is one picohttpparser takes too, so h2o never answers a request
 * this parser refuses (the client would get two answers).
 *
 * The subset: lines end in CRLF; the request line is a token method, a
 * target of visible characters and HTTP/1.x; field names are tokens followed
 * at once by ':'; values hold no control character but HT; no folded lines;
 * at most 100 fields (h2o's limit); at most one Host (required in HTTP/1.1:
 * a host and an optional port), one Content-Length (digits; copies of one
 * value are taken, as RFC 9110 allows), one Transfer-Encoding, which must be
 * exactly "chunked" and comes without Content-Length and not in HTTP/1.0;
 * chunk sizes are hex digits, then optional blanks and ';' extensions, then
 * CRLF; chunk data ends in CRLF; the last chunk has no trailer fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grow.h"
#include "http/server.h"

enum {
  FR_START,    /* between requests: CRLFs are skipped */
  FR_METHOD,   /* the request line's method */
  FR_TARGET0,  /* its target's first byte */
  FR_TARGET,
  FR_VERSION,  /* "HTTP/1.x" and CR */
  FR_LINE_LF,  /* the LF after a line's CR */
  FR_LINE,     /* the start of a field line, or the CR of the empty one */
  FR_NAME,
  FR_VALUE,
  FR_END_LF,   /* the LF that ends the head */
  FR_BODY,     /* `left` bytes of a Content-Length body to come */
  FR_SIZE,     /* a chunk's size */
  FR_SIZE_BWS, /* blanks after the size: only ';' or CR may follow */
  FR_EXT,      /* a chunk extension, up to CR */
  FR_SIZE_LF,  /* the LF after a size line */
  FR_DATA,     /* `left` bytes of chunk data to come */
  FR_DATA_CR,  /* the CRLF after chunk data */
  FR_DATA_LF,
  FR_LAST_CR,  /* the CRLF that ends a chunked body (no trailers) */
  FR_LAST_LF,
  FR_REFUSED   /* the rest is dropped */
};

/* h2o's limit on header fields (H2O_MAX_HEADERS): past it h2o answers 400. */
#define MAX_FIELDS 100
static const char VERSION[] = "HTTP/1.";

void claude_http_framing_init(http_framing *f, size_t max_header) {
  memset(f, 0, sizeof *f);
  f->state = FR_START;
  f->max_header = max_header;
}

void claude_http_framing_free(http_framing *f) {
  free(f->line);
  f->line = NULL;
  f->line_len = f->line_cap = 0;
}

int claude_http_framing_between(const http_framing *f) {
  return f->state == FR_START;
}

static void refuse(http_framing *f, int status, const char *why) {
  f->state = FR_REFUSED;
  f->status = status;
  f->why = why;
  claude_http_framing_free(f);
}

/* What each byte may be, looked up once a byte rather than decided by
 * comparisons (the head's bytes are most of an HTTP call's framing cost):
 * T a token character (RFC 9110 tchar), V a byte a field value may hold (HT,
 * SP, visible, obs-text), R a byte of a request target (visible, obs-text),
 * H a byte of a Host's reg-name or IPv4 address (RFC 3986: unreserved,
 * sub-delims, '%'); 7 is T | V | R, 6 is V | R, 15 and 14 the same and H. */
enum { T = 1, V = 2, R = 4, H = 8 };
static const unsigned char BYTE_CLASS[256] = {
  0, 0, 0, 0, 0, 0, 0, 0, 0, V, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  /* SP ! " # $ % & ' ( ) * + , - . / */
  V, 15, 6, 7, 15, 15, 15, 15, 14, 14, 15, 15, 14, 15, 15, 6,
  /* 0-9 : ; < = > ? */
  15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 6, 14, 6, 14, 6, 6,
  /* @ A-Z [ \ ] ^ _ */
  6, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
  15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 6, 6, 6, 7, 15,
  /* ` a-z { | } ~ DEL */
  7, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
  15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 6, 7, 6, 15, 0,
  /* obs-text */
  [0x80 ... 0xff] = V | R};

static int is_tchar(unsigned char c) { return BYTE_CLASS[c] & T; }

static int is_vbyte(unsigned char c) { return BYTE_CLASS[c] & V; }

static int is_target_byte(unsigned char c) { return BYTE_CLASS[c] & R; }

static int is_host_byte(unsigned char c) { return BYTE_CLASS[c] & H; }

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int name_is(const char *name, size_t n, const char *want) {
  return n == strlen(want) && strncasecmp(name, want, n) == 0;
}

/* A Host value: empty, or a host (an IP literal in brackets, or a name or
 * IPv4 address of RFC 3986's reg-name characters) and an optional :port. */
static int host_ok(const char *v, size_t n) {
  size_t i = 0;
  if (n > 0 && v[0] == '[') {
    for (i = 1; i < n && v[i] != ']'; i++)
      if (!(hexval((unsigned char)v[i]) >= 0 || v[i] == ':' || v[i] == '.')) return 0;
    if (i == n) return 0;
    i++;
  } else {
    for (; i < n && v[i] != ':'; i++)
      if (!is_host_byte((unsigned char)v[i])) return 0;
  }
  if (i < n) {
    if (v[i++] != ':') return 0;
    for (; i < n; i++)
      if (v[i] < '0' || v[i] > '9') return 0;
  }
  return 1;
}

/* A whole field line (its CR left out) is in f->line: notes what frames the
 * body. 0 when the request is refused. */
static int field(http_framing *f) {
  const char *name = f->line, *colon = f->line + f->name_len, *v, *ve;
  size_t n = f->name_len;
  for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {
  }
  for (ve = f->line + f->line_len; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--) {
  }
  if (name_is(name, n, "content-length")) {
    unsigned long long x = 0;
    const char *p;
    if (v == ve || ve - v > 18) return refuse(f, 400, "an invalid Content-Length"), 0;
    for (p = v; p < ve; p++) {
      if (*p < '0' || *p > '9') return refuse(f, 400, "an invalid Content-Length"), 0;
      x = x * 10 + (unsigned)(*p - '0');
    }
    if (f->lengths++ > 0 && x != f->length)
      return refuse(f, 400, "two different Content-Lengths"), 0;
    f->length = x;
  } else if (name_is(name, n, "transfer-encoding")) {
    if (f->codings++ > 0) return refuse(f, 400, "more than one Transfer-Encoding"), 0;
    if (!name_is(v, (size_t)(ve - v), "chunked"))
      return refuse(f, 400, "a Transfer-Encoding other than chunked"), 0;
  } else if (name_is(name, n, "host")) {
    if (f->hosts++ > 0) return refuse(f, 400, "more than one Host"), 0;
    if (!host_ok(v, (size_t)(ve - v))) return refuse(f, 400, "an invalid Host"), 0;
  }
  return 1;
}

/* The head has ended: how is the body framed? 0 when refused. */
static int head_end(http_framing *f) {
  if (f->codings > 0 && f->lengths > 0)
    return refuse(f, 400, "both Content-Length and Transfer-Encoding"), 0;
  if (f->codings > 0 && f->minor == 0) return refuse(f, 400, "Transfer-Encoding in HTTP/1.0"), 0;
  if (f->hosts == 0 && f->minor > 0) return refuse(f, 400, "no Host"), 0;
  /* the line's buffer serves the next request, unless an unusual head grew it */
  if (f->line_cap > 1024) claude_http_framing_free(f);
  if (f->codings > 0) {
    f->state = FR_SIZE;
    f->digits = 0;
    f->left = 0;
  } else if (f->length > 0) {
    f->state = FR_BODY;
    f->left = f->length;
  } else {
    f->state = FR_START;
  }
  return 1;
}

/* Keeps a field line's byte; 0 when there is no room. */
static int keep(http_framing *f, char c) {
  if (f->line_len == f->line_cap) {
    size_t cap = f->line_cap ? f->line_cap * 2 : 256;
    char *l = (char *)realloc(f->line, cap);
    if (l == NULL) return 0;
    f->line = l;
    f->line_cap = cap;
  }
  f->line[f->line_len++] = c;
  return 1;
}

/* Keeps n bytes of a field line; 0 when there is no room. */
static int keep_n(http_framing *f, const char *p, size_t n) {
  if (!claude_grow(&f->line, &f->line_cap, f->line_len + n, 256)) return 0;
  memcpy(f->line + f->line_len, p, n);
  f->line_len += n;
  return 1;
}

/* How many of the first n bytes at p, in whole words of eight, are a
 * value's bytes other than HT: no control byte nor DEL among them (the usual
 * SWAR tests for a byte less than, or equal to, a constant). A fast path in
 * front of is_vbyte's loop: what it leaves, the loop decides. */
static size_t plain_value_bytes(const unsigned char *p, size_t n) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w, del;
    memcpy(&w, p + i, 8);
    del = w ^ (ones * 0x7f);
    if ((((w - ones * 0x20) & ~w) | ((del - ones) & ~del)) & highs) break;
  }
  return i;
}

/* How many bytes from p on the head's state takes as they come, without a
 * decision (a target's, a field name's or value's middle), within the room
 * max_header leaves: head_byte's verdict on each of them, found in one run
 * (the byte after the run goes through head_byte). */
static size_t head_run(const http_framing *f, const unsigned char *p, size_t n) {
  size_t i = 0, room = f->max_header > f->head_len ? f->max_header - f->head_len : 0;
  if (n > room) n = room;
  switch (f->state) {
    case FR_METHOD: /* (the space after it is head_byte's) */
      while (i < n && is_tchar(p[i])) i++;
      break;
    case FR_TARGET:
      while (i < n && is_target_byte(p[i])) i++;
      break;
    case FR_VERSION: /* "HTTP/1." (the minor digit and the CR are head_byte's) */
      while (i < n && f->digits + i < 7 && p[i] == (unsigned char)VERSION[f->digits + i]) i++;
      break;
    case FR_NAME: /* (':' is no token character) */
      while (i < n && is_tchar(p[i])) i++;
      break;
    case FR_VALUE:
      i = plain_value_bytes(p, n);
      while (i < n && is_vbyte(p[i])) i++;
      break;
    default: break;
  }
  return i;
}

/* One byte of a head; 0 when the request is refused at it. */
static int head_byte(http_framing *f, unsigned char c) {
  if (++f->head_len > f->max_header) return refuse(f, 431, "the request head is too large"), 0;
  switch (f->state) {
    case FR_METHOD:
      if (c == ' ' && f->head_len > 1) f->state = FR_TARGET0;
      else if (!is_tchar(c)) return refuse(f, 400, "a malformed request line"), 0;
      return 1;
    case FR_TARGET0:
    case FR_TARGET:
      if (c == ' ' && f->state == FR_TARGET) {
        f->state = FR_VERSION;
        f->digits = 0;
      } else if (!is_target_byte(c)) {
        return refuse(f, 400, "a malformed request line"), 0;
      } else {
        f->state = FR_TARGET;
      }
      return 1;
    case FR_VERSION:
      if (f->digits < 7 ? c == (unsigned char)VERSION[f->digits]
                        : f->digits == 7 ? c >= '0' && c <= '9' : c == '\r') {
        if (f->digits == 7) f->minor = c - '0';
        if (f->digits++ == 8) f->state = FR_LINE_LF;
        return 1;
      }
      return refuse(f, 400, "not an HTTP/1.x request"), 0;
    case FR_LINE_LF:
      if (c != '\n') return refuse(f, 400, "a line not ended by CRLF"), 0;
      if (f->line_len > 0 && !field(f)) return 0;
      f->line_len = 0;
      f->state = FR_LINE;
      return 1;
    case FR_LINE:
      if (c == '\r') {
        f->state = FR_END_LF;
        return 1;
      }
      if (c == ' ' || c == '\t') return refuse(f, 400, "a folded header line"), 0;
      if (!is_tchar(c)) return refuse(f, 400, "a malformed header field"), 0;
      if (++f->fields > MAX_FIELDS) return refuse(f, 431, "too many header fields"), 0;
      f->state = FR_NAME;
      break;
    case FR_NAME:
      if (c == ':') {
        f->state = FR_VALUE;
        f->name_len = f->line_len;
      } else if (!is_tchar(c)) {
        return refuse(f, 400, "a malformed header field"), 0;
      }
      break;
    case FR_VALUE:
      if (c == '\r') {
        f->state = FR_LINE_LF;
        return 1;
      }
      if (!is_vbyte(c)) return refuse(f, 400, "a control character in a header field"), 0;
      break;
    case FR_END_LF:
      if (c != '\n') return refuse(f, 400, "a line not ended by CRLF"), 0;
      return head_end(f);
    default: return 0;
  }
  if (!keep(f, (char)c)) return refuse(f, 431, "no memory for the request head"), 0;
  return 1;
}

size_t claude_http_framing_feed(http_framing *f, const char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = (unsigned char)p[i];
    switch (f->state) {
      case FR_REFUSED: return 0;
      case FR_START:
        if (c == '\r' || c == '\n') { /* what may come between requests */
          i++;
          break;
        }
        f->state = FR_METHOD;
        f->head_len = f->line_len = 0;
        f->fields = f->lengths = f->codings = f->hosts = 0;
        f->length = 0;
        /* fall through */
      case FR_METHOD:
      case FR_TARGET:
      case FR_VERSION:
      case FR_NAME:
      case FR_VALUE: {
        size_t k = head_run(f, (const unsigned char *)p + i, n - i);
        if (k > 0) {
          /* a field line is kept for field(); the request line is not */
          if ((f->state == FR_NAME || f->state == FR_VALUE) && !keep_n(f, p + i, k))
            return refuse(f, 431, "no memory for the request head"), i;
          if (f->state == FR_VERSION) f->digits += (int)k;
          f->head_len += k;
          i += k;
          if (i == n) break;
          c = (unsigned char)p[i]; /* the byte that ended the run: a decision */
        }
      }
        /* fall through */
      case FR_TARGET0:
      case FR_LINE_LF:
      case FR_LINE:
      case FR_END_LF:
        if (!head_byte(f, c)) return i;
        i++;
        break;
      case FR_BODY:
      case FR_DATA: {
        size_t k = (uint64_t)(n - i) < f->left ? n - i : (size_t)f->left;
        i += k;
        f->left -= k;
        if (f->left == 0) f->state = f->state == FR_BODY ? FR_START : FR_DATA_CR;
        break;
      }
      case FR_SIZE: {
        int h = hexval(c);
        if (h >= 0 && f->digits < 16) {
          f->left = f->left * 16 + (unsigned)h;
          f->digits++;
        } else if (f->digits > 0 && (c == ' ' || c == '\t')) {
          f->state = FR_SIZE_BWS;
        } else if (f->digits > 0 && c == ';') {
          f->state = FR_EXT;
        } else if (f->digits > 0 && c == '\r') {
          f->state = FR_SIZE_LF;
        } else {
          refuse(f, 400, "a malformed chunk size");
          return i;
        }
        i++;
        break;
      }
      case FR_SIZE_BWS:
        if (c == ';') f->state = FR_EXT;
        else if (c == '\r') f->state = FR_SIZE_LF;
        else if (c != ' ' && c != '\t') return refuse(f, 400, "a malformed chunk size"), i;
        i++;
        break;
      case FR_EXT:
        if (c == '\r') f->state = FR_SIZE_LF;
        else if (!is_vbyte(c)) return refuse(f, 400, "a malformed chunk extension"), i;
        i++;
        break;
      case FR_SIZE_LF:
        if (c != '\n') return refuse(f, 400, "a chunk size line not ended by CRLF"), i;
        f->state = f->left == 0 ? FR_LAST_CR : FR_DATA;
        i++;
        break;
      case FR_DATA_CR:
      case FR_LAST_CR:
        if (c != '\r') {
          refuse(f, 400, f->state == FR_LAST_CR ? "trailer fields are not taken"
                                                : "chunk data not ended by CRLF");
          return i;
        }
        f->state = f->state == FR_DATA_CR ? FR_DATA_LF : FR_LAST_LF;
        i++;
        break;
      case FR_DATA_LF:
      case FR_LAST_LF:
        if (c != '\n') return refuse(f, 400, "a chunk not ended by CRLF"), i;
        if (f->state == FR_DATA_LF) {
          f->state = FR_SIZE;
          f->digits = 0;
          f->left = 0;
        } else {
          f->state = FR_START;
        }
        i++;
        break;
      default: return 0;
    }
  }
  return n;
}

/* ---- the read gate: every read of a connection goes through the framing
 * before h2o gets it ------------------------------------------------------ */

/* ---- reads: the framing first ------------------------------------------ */

/* Puts framing_read back in front of h2o's callback, which h2o sets anew
 * each time it starts reading (uv_read_start). */
static void framing_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

void claude_http_framing_wrap(http_conn *conn) {
  uv_read_cb cb = conn->tcp.read_cb;
  if (cb != NULL && cb != framing_read) {
    conn->h2o_read = cb;
    conn->tcp.read_cb = framing_read;
  }
}

/* A refused connection: once h2o reads again (now, or after answering the
 * requests before the refused one), it gets the end of the stream and
 * closes the connection, with the refused request incomplete. */
static void refused_eof(http_conn *conn) {
  uv_buf_t none = uv_buf_init(NULL, 0);
  if (conn->framing.status == 0 || uv_is_closing((uv_handle_t *)&conn->tcp) ||
      conn->tcp.read_cb == NULL)
    return;
  claude_http_framing_wrap(conn);
  conn->h2o_read((uv_stream_t *)&conn->tcp, UV_EOF, &none);
}

/* libuv's read callback on every connection (in place of h2o's): the bytes
 * h2o just got into its buffer go through the framing, and h2o is told of
 * as many as may go on. h2o stops reading while it answers a request and
 * starts again once the answer is written; on libuv's epoll backend that
 * costs an epoll_ctl pair a request. Keeping the stop from libuv would mean
 * writing libuv's private flags, so the pair stays (docs/performance.md,
 * "libuv's private reading flag"). */
static void framing_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  http_conn *conn = (http_conn *)stream;
  if (nread > 0) {
    size_t pass = conn->framing.status != 0
                    ? 0
                    : claude_http_framing_feed(&conn->framing, buf->base, (size_t)nread);
    if (pass > 0) conn->h2o_read(stream, (ssize_t)pass, buf);
    if (conn->framing.status != 0) refused_eof(conn);
  } else {
    conn->h2o_read(stream, nread, buf);
  }
  if (!uv_is_closing((uv_handle_t *)stream)) claude_http_framing_wrap(conn);
}

/* Before each wait for I/O: reads h2o started since are wrapped again. */
void claude_http_framing_rewrap_all(uv_prepare_t *p) {
  http_server *srv = (http_server *)p->data;
  http_conn *conn;
  for (conn = srv->conns.next; conn != &srv->conns; conn = conn->next) {
    if (uv_is_closing((uv_handle_t *)&conn->tcp)) continue;
    claude_http_framing_wrap(conn);
    refused_eof(conn);
  }
}
