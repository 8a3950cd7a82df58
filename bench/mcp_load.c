/*
 * bench/mcp_load.c -- a load client for MCP servers, over stdio and over
 * Streamable HTTP, written in C so that the client is never what is measured.
 *
 *   mcp_load [options] -- server-command args...          stdio: spawns the server
 *   mcp_load [options] --http URL [-- server-command...]  HTTP: spawns it when given,
 *                                                          then waits for the port
 * Options:
 *   --inflight N   calls outstanding at once (default 1; over HTTP, one
 *                  keep-alive connection per call in flight)
 *   --calls N      tools/call requests to time (default 20000)
 *   --warmup N     calls made first and not timed (default 1000)
 *   --tool NAME    the tool to call (default add); it must add its arguments a
 *                  and b and answer the sum as text, which every answer is
 *                  checked against
 *   --timeout S    give up after S seconds without progress (default 60)
 *   --era E        legacy (default: initialize, then a session) or modern
 *                  (protocol 2026-07-28: server/discover, then every request
 *                  with its _meta envelope and, over HTTP, its standard
 *                  headers; no session)
 *
 * It runs initialize (or server/discover; timed from the spawn: the start-up
 * figure), notifications/initialized (legacy), then the calls, and prints one
 * JSON line:
 * {"ok":true,"transport":...,"inflight":...,"calls":...,"seconds":...,
 *  "calls_per_s":...,"p50_us":...,"p90_us":...,"p99_us":...,"startup_ms":...,
 *  "server_peak_rss_kb":...}. A wrong, missing or failed answer ends the run
 * with "ok":false, a message on stderr and exit status 2.
 *
 * The HTTP side reads responses with Content-Length, chunked, or
 * close-delimited bodies, and JSON or SSE (text/event-stream) payloads: a
 * load generator's reader, not a general HTTP client.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

#define PROTOCOL_VERSION "2025-06-18"

static long inflight = 1, ncalls = 20000, nwarmup = 1000;
static const char *tool = "add";
static int modern = 0; /* --era modern */
static double timeout_s = 60;
static pid_t server_pid = -1;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "mcp_load: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  printf("{\"ok\":false}\n");
  if (server_pid > 0) kill(server_pid, SIGKILL);
  exit(2);
}

/* ---- a growing byte buffer ---------------------------------------------- */

typedef struct {
  char *p;
  size_t len, cap, start; /* bytes [start, len) not consumed yet */
} buf;

static void buf_reserve(buf *b, size_t more) {
  if (b->start > 0 && b->start == b->len) b->start = b->len = 0;
  if (b->len + more <= b->cap) return;
  if (b->start > 0) {
    memmove(b->p, b->p + b->start, b->len - b->start);
    b->len -= b->start;
    b->start = 0;
    if (b->len + more <= b->cap) return;
  }
  while (b->len + more > b->cap) b->cap = b->cap ? b->cap * 2 : 65536;
  b->p = realloc(b->p, b->cap);
  if (!b->p) fail("out of memory");
}

static void buf_add(buf *b, const char *s, size_t n) {
  buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

/* Reads what fd has into b; returns bytes read, 0 at EOF, -1 when none now. */
static ssize_t buf_read(buf *b, int fd) {
  ssize_t n;
  buf_reserve(b, 65536);
  n = read(fd, b->p + b->len, b->cap - b->len);
  if (n > 0) b->len += (size_t)n;
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
  if (n < 0) fail("read: %s", strerror(errno));
  return n;
}

/* Writes as much of b as fd takes. */
static void buf_flush(buf *b, int fd) {
  while (b->start < b->len) {
    ssize_t n = write(fd, b->p + b->start, b->len - b->start);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0) fail("write: %s", strerror(errno));
    b->start += (size_t)n;
  }
}

/* ---- requests and answers ----------------------------------------------- */

static double *latencies; /* per timed call, seconds */
static long sent, answered, timed_answered;
static double *sent_at;   /* by call number */
static double t_first = 0, t_last = 0;

/* The envelope of the modern era, as a client sends it with every request. */
#define ENVELOPE_KEYS                                                                              \
  "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                      \
  "\"io.modelcontextprotocol/clientCapabilities\":{},"                                              \
  "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"mcp_load\",\"version\":\"1\"}"
#define ENVELOPE "\"_meta\":{" ENVELOPE_KEYS "}"

/* The JSON-RPC request for call number n (1-based): add(n, 1), with the `_meta` the claude CLI
 * puts in every tools/call (its tool use id, a progress token), and in the modern era the
 * envelope beside it. */
static int call_request(char *out, size_t cap, long n) {
  return snprintf(out, cap,
                  "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":"
                  "\"%s\",\"arguments\":{\"a\":%ld,\"b\":1},\"_meta\":{%s"
                  "\"claudecode/toolUseId\":\"toolu_01%022ld\",\"progressToken\":%ld}}}",
                  n, tool, n, modern ? ENVELOPE_KEYS "," : "", n, n);
}

static const char *DISCOVER =
  "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"server/discover\",\"params\":{" ENVELOPE "}}";

static const char *INITIALIZE =
  "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\""
  PROTOCOL_VERSION "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"mcp_load\",\"version\":\"1\"}}}";
static const char *INITIALIZED = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

/* Checks one JSON-RPC answer; returns its id. */
static long check_answer(const char *p, const char *e) {
  jspan msg = {p, e}, id, result, text, v;
  long long n;
  static const char *const text_path[] = {"result", "content", NULL};
  if (!js_get(msg, "id", &id) || !js_int(id, &n)) fail("an answer without an integer id: %.*s", (int)(e - p), p);
  if (js_get(msg, "error", &v)) fail("call %lld failed: %.*s", n, (int)(v.e - v.p), v.p);
  if (n == 0) return 0; /* initialize */
  if (!js_path(msg, &result, text_path) || !js_index(result, 0, &v) || !js_get(v, "text", &text))
    fail("answer %lld has no text content: %.*s", n, (int)(e - p), p);
  {
    char want[32];
    const char *s;
    size_t len;
    snprintf(want, sizeof want, "%lld", n + 1);
    if (!js_raw(text, &s, &len) || len != strlen(want) || memcmp(s, want, len) != 0)
      fail("answer %lld is %.*s, not %s", n, (int)(text.e - text.p), text.p, want);
  }
  if (js_get(msg, "result", &result) && js_get(result, "isError", &v) && js_streq(v, "true"))
    fail("answer %lld is an error", n);
  return (long)n;
}

static void record(long id) {
  double t = now();
  answered++;
  if (id > nwarmup) {
    if (timed_answered == 0 && t_first == 0) t_first = sent_at[id];
    latencies[timed_answered++] = t - sent_at[id];
    t_last = t;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static long peak_rss_kb(pid_t pid) {
  char path[64], line[256];
  long kb = -1;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  f = fopen(path, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

static void report(const char *transport, double startup) {
  double secs = t_last - t_first;
  long n = timed_answered;
  qsort(latencies, (size_t)n, sizeof *latencies, cmp_double);
  printf("{\"ok\":true,\"transport\":\"%s\",\"inflight\":%ld,\"calls\":%ld,\"seconds\":%.4f,"
         "\"calls_per_s\":%.0f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
         "\"startup_ms\":%.2f,\"server_peak_rss_kb\":%ld}\n",
         transport, inflight, n, secs, secs > 0 ? (double)n / secs : 0,
         latencies[n / 2] * 1e6, latencies[n * 9 / 10] * 1e6, latencies[n * 99 / 100] * 1e6,
         startup * 1e3, server_pid > 0 ? peak_rss_kb(server_pid) : -1);
}

static pid_t spawn(char **argv, int *in_fd, int *out_fd) {
  int in[2], out[2];
  pid_t pid;
  if (in_fd && pipe(in) != 0) fail("pipe: %s", strerror(errno));
  if (out_fd && pipe(out) != 0) fail("pipe: %s", strerror(errno));
  pid = fork();
  if (pid < 0) fail("fork: %s", strerror(errno));
  if (pid == 0) {
    if (in_fd) { dup2(in[0], 0); close(in[0]); close(in[1]); }
    if (out_fd) { dup2(out[1], 1); close(out[0]); close(out[1]); }
    execvp(argv[0], argv);
    fprintf(stderr, "mcp_load: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (in_fd) { close(in[0]); *in_fd = in[1]; fcntl(*in_fd, F_SETFL, O_NONBLOCK); }
  if (out_fd) { close(out[1]); *out_fd = out[0]; fcntl(*out_fd, F_SETFL, O_NONBLOCK); }
  return pid;
}

/* ---- stdio ---------------------------------------------------------------- */

static void send_call_line(buf *w) {
  char req[512];
  int n;
  sent++;
  n = call_request(req, sizeof req - 1, sent);
  req[n++] = '\n';
  buf_add(w, req, (size_t)n);
  sent_at[sent] = now();
}

static void run_stdio(char **argv) {
  int in_fd, out_fd;
  buf r = {0}, w = {0};
  double t0 = now(), startup = 0, last_progress = t0;
  long total = nwarmup + ncalls;
  int initialized = 0;
  server_pid = spawn(argv, &in_fd, &out_fd);
  buf_add(&w, modern ? DISCOVER : INITIALIZE, strlen(modern ? DISCOVER : INITIALIZE));
  buf_add(&w, "\n", 1);
  while (answered < total) {
    struct pollfd p[2] = {{out_fd, POLLIN, 0}, {in_fd, w.start < w.len ? POLLOUT : 0, 0}};
    if (poll(p, 2, 100) < 0 && errno != EINTR) fail("poll: %s", strerror(errno));
    if (now() - last_progress > timeout_s) fail("no progress for %g s (%ld answers)", timeout_s, answered);
    if (p[1].revents & (POLLOUT | POLLERR)) buf_flush(&w, in_fd);
    if (p[0].revents & (POLLIN | POLLHUP)) {
      ssize_t n = buf_read(&r, out_fd);
      if (n == 0) fail("the server closed its output after %ld answers", answered);
      for (;;) {
        char *line = r.p + r.start, *nl = memchr(line, '\n', r.len - r.start);
        long id;
        if (!nl) break;
        r.start = (size_t)(nl + 1 - r.p);
        if (nl == line) continue;
        if (!memmem(line, (size_t)(nl - line), "\"id\"", 4)) continue; /* a notification */
        id = check_answer(line, nl);
        last_progress = now();
        if (id == 0 && !initialized) {
          initialized = 1;
          startup = now() - t0;
          if (!modern) {
            buf_add(&w, INITIALIZED, strlen(INITIALIZED));
            buf_add(&w, "\n", 1);
          }
          while (sent < inflight && sent < total) send_call_line(&w);
        } else {
          record(id);
          if (sent < total) send_call_line(&w);
        }
      }
    }
    if (w.start < w.len) buf_flush(&w, in_fd);
  }
  report("stdio", startup);
  close(in_fd); /* EOF: the server ends */
  close(out_fd);
  waitpid(server_pid, NULL, 0);
}

/* ---- Streamable HTTP ------------------------------------------------------- */

typedef struct conn {
  int fd;
  buf r, w;
  long call;   /* the call outstanding, -1 none */
  int state;   /* 0 idle, 1 waiting for the response */
} conn;

static char host[256], port[16], path[1024];
static char session_id[256];

static void parse_url(const char *url) {
  const char *p = url, *slash, *colon;
  if (strncmp(p, "http://", 7) != 0) fail("only http:// URLs: %s", url);
  p += 7;
  slash = strchr(p, '/');
  if (!slash) slash = p + strlen(p);
  colon = memchr(p, ':', (size_t)(slash - p));
  snprintf(host, sizeof host, "%.*s", (int)((colon ? colon : slash) - p), p);
  snprintf(port, sizeof port, "%.*s", colon ? (int)(slash - colon - 1) : 2, colon ? colon + 1 : "80");
  snprintf(path, sizeof path, "%s", *slash ? slash : "/");
}

static int connect_once(void) {
  struct addrinfo hints = {0}, *res;
  int fd, one = 1;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0) fail("cannot resolve %s", host);
  fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    close(fd);
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  return fd;
}

static void queue_post(conn *c, const char *body) {
  char head[2048], std[512] = "";
  int n;
  if (modern) { /* the standard headers of a request of this era: its method, its tool */
    int call = strstr(body, "\"tools/call\"") != NULL;
    snprintf(std, sizeof std, "Mcp-Method: %s\r\n%s%s%s",
             call ? "tools/call" : "server/discover", call ? "Mcp-Name: " : "", call ? tool : "",
             call ? "\r\n" : "");
  }
  n = snprintf(head, sizeof head,
               "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\n"
               "MCP-Protocol-Version: %s\r\n%s%s%s%sContent-Length: %zu\r\n\r\n",
               path, host, port, modern ? "2026-07-28" : PROTOCOL_VERSION, std,
               session_id[0] ? "Mcp-Session-Id: " : "", session_id, session_id[0] ? "\r\n" : "",
               strlen(body));
  buf_add(&c->w, head, (size_t)n);
  buf_add(&c->w, body, strlen(body));
  c->state = 1;
}

/* Finds header `name` in [h, e); copies its value to out. */
static int header(const char *h, const char *e, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  while (h < e) {
    const char *eol = memmem(h, (size_t)(e - h), "\r\n", 2);
    if (!eol) eol = e;
    if ((size_t)(eol - h) > nl && strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
      const char *v = h + nl + 1;
      while (v < eol && *v == ' ') v++;
      snprintf(out, cap, "%.*s", (int)(eol - v), v);
      return 1;
    }
    h = eol + 2;
  }
  return 0;
}

/* Tries to take one whole response from c->r. Returns 1 and sets the status
 * and the payload (the JSON of the answer, or empty) when one is there. */
static int take_response(conn *c, int *status, char **payload, size_t *plen, int eof) {
  char *p = c->r.p + c->r.start, *e = c->r.p + c->r.len, *hend, *body;
  char v[256];
  static buf dechunked;
  size_t blen;
  int sse;
  if (c->r.len == c->r.start) return 0;
  hend = memmem(p, (size_t)(e - p), "\r\n\r\n", 4);
  if (!hend) return 0;
  *status = atoi(p + 9);
  body = hend + 4;
  sse = header(p, hend, "Content-Type", v, sizeof v) && strstr(v, "text/event-stream");
  if (header(p, hend, "Mcp-Session-Id", v, sizeof v) && !session_id[0])
    snprintf(session_id, sizeof session_id, "%s", v);
  if (header(p, hend, "Content-Length", v, sizeof v)) {
    blen = (size_t)strtoul(v, NULL, 10);
    if ((size_t)(e - body) < blen) return 0;
    c->r.start = (size_t)(body + blen - c->r.p);
  } else if (header(p, hend, "Transfer-Encoding", v, sizeof v) && strstr(v, "chunked")) {
    char *q = body;
    dechunked.len = dechunked.start = 0;
    for (;;) {
      char *eol = memmem(q, (size_t)(e - q), "\r\n", 2);
      size_t n;
      if (!eol) return 0;
      n = (size_t)strtoul(q, NULL, 16);
      if ((size_t)(e - eol - 2) < n + 2) return 0;
      if (n == 0) { c->r.start = (size_t)(eol + 4 - c->r.p); break; }
      buf_add(&dechunked, eol + 2, n);
      q = eol + 2 + n + 2;
    }
    body = dechunked.p;
    blen = dechunked.len;
  } else if (*status == 202 || *status == 204) {
    blen = 0;
    c->r.start = (size_t)(body - c->r.p);
  } else {
    if (!eof) return 0; /* close-delimited */
    blen = (size_t)(e - body);
    c->r.start = c->r.len;
  }
  if (sse) { /* the answer is the data of the event that carries an id */
    char *d = body, *end = body + blen, *found = NULL;
    while (d < end && (d = memmem(d, (size_t)(end - d), "data:", 5)) != NULL) {
      char *eol = memchr(d, '\n', (size_t)(end - d));
      if (!eol) eol = end;
      d += 5;
      if (*d == ' ') d++;
      if (memmem(d, (size_t)(eol - d), "\"id\"", 4)) { found = d; body = d; blen = (size_t)(eol - d); break; }
      d = eol;
    }
    if (!found) blen = 0;
  }
  *payload = body;
  *plen = blen;
  return 1;
}

/* One request on a fresh connection, waited for: for the handshake. */
static void http_roundtrip(const char *body, int want_answer) {
  conn c = {0};
  double t0 = now();
  int status = 0;
  char *payload;
  size_t plen;
  c.fd = connect_once();
  if (c.fd < 0) fail("cannot connect to %s:%s", host, port);
  queue_post(&c, body);
  for (;;) {
    struct pollfd p = {c.fd, POLLIN | (c.w.start < c.w.len ? POLLOUT : 0), 0};
    ssize_t n = -1; /* -1: nothing read this time, 0: EOF */
    poll(&p, 1, 100);
    if (now() - t0 > timeout_s) fail("the handshake timed out");
    if (p.revents & POLLOUT) buf_flush(&c.w, c.fd);
    if (p.revents & (POLLIN | POLLHUP)) n = buf_read(&c.r, c.fd);
    if (take_response(&c, &status, &payload, &plen, n == 0)) break;
    if (n == 0) fail("the server closed the connection during the handshake");
  }
  if (status / 100 != 2) fail("HTTP %d for %s", status, body);
  if (want_answer) check_answer(payload, payload + plen);
  close(c.fd);
  free(c.r.p);
  free(c.w.p);
}

static void run_http(const char *url, char **argv) {
  double t0 = now(), startup, last_progress;
  long total = nwarmup + ncalls, i;
  conn *conns;
  struct pollfd *pf;
  parse_url(url);
  if (argv && argv[0]) server_pid = spawn(argv, NULL, NULL);
  for (;;) { /* wait for the port */
    int fd = connect_once();
    if (fd >= 0) { close(fd); break; }
    if (now() - t0 > timeout_s) fail("nothing listens on %s:%s", host, port);
    usleep(2000);
  }
  http_roundtrip(modern ? DISCOVER : INITIALIZE, 1);
  startup = now() - t0;
  if (!modern) http_roundtrip(INITIALIZED, 0);
  conns = calloc((size_t)inflight, sizeof *conns);
  pf = calloc((size_t)inflight, sizeof *pf);
  for (i = 0; i < inflight; i++) {
    conns[i].fd = connect_once();
    if (conns[i].fd < 0) fail("cannot open connection %ld", i + 1);
    conns[i].call = -1;
  }
  last_progress = now();
  while (answered < total) {
    for (i = 0; i < inflight; i++) {
      conn *c = &conns[i];
      if (c->state == 0 && sent < total) {
        char req[512];
        sent++;
        call_request(req, sizeof req, sent);
        queue_post(c, req);
        c->call = sent;
        sent_at[sent] = now();
        buf_flush(&c->w, c->fd);
      }
      pf[i].fd = c->fd;
      pf[i].events = POLLIN | (c->w.start < c->w.len ? POLLOUT : 0);
    }
    if (poll(pf, (nfds_t)inflight, 100) < 0 && errno != EINTR) fail("poll: %s", strerror(errno));
    if (now() - last_progress > timeout_s) fail("no progress for %g s (%ld answers)", timeout_s, answered);
    for (i = 0; i < inflight; i++) {
      conn *c = &conns[i];
      int status;
      char *payload;
      size_t plen;
      ssize_t n;
      if (pf[i].revents & POLLOUT) buf_flush(&c->w, c->fd);
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      n = buf_read(&c->r, c->fd);
      while (c->state == 1 && take_response(c, &status, &payload, &plen, n == 0)) {
        long id;
        if (status != 200) fail("HTTP %d for call %ld", status, c->call);
        id = check_answer(payload, payload + plen);
        if (id != c->call) fail("call %ld answered as %ld", c->call, id);
        record(id);
        last_progress = now();
        c->state = 0;
        c->call = -1;
      }
      if (n == 0) {
        if (c->state == 1) fail("the server closed a connection with call %ld outstanding", c->call);
        close(c->fd); /* the server ended keep-alive: open another */
        c->fd = connect_once();
        c->r.start = c->r.len = 0;
        if (c->fd < 0) fail("cannot reconnect");
      }
    }
  }
  report("http", startup);
  for (i = 0; i < inflight; i++) close(conns[i].fd);
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
  }
}

int main(int argc, char **argv) {
  const char *url = NULL;
  char **cmd = NULL;
  int i;
  signal(SIGPIPE, SIG_IGN);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) { cmd = argv + i + 1; break; }
    if (i + 1 >= argc) fail("%s needs a value", a);
    if (strcmp(a, "--inflight") == 0) inflight = atol(argv[++i]);
    else if (strcmp(a, "--calls") == 0) ncalls = atol(argv[++i]);
    else if (strcmp(a, "--warmup") == 0) nwarmup = atol(argv[++i]);
    else if (strcmp(a, "--tool") == 0) tool = argv[++i];
    else if (strcmp(a, "--timeout") == 0) timeout_s = atof(argv[++i]);
    else if (strcmp(a, "--http") == 0) url = argv[++i];
    else if (strcmp(a, "--era") == 0) {
      const char *e = argv[++i];
      if (strcmp(e, "modern") == 0) modern = 1;
      else if (strcmp(e, "legacy") != 0) fail("--era: legacy or modern, not %s", e);
    }
    else fail("unknown option %s", a);
  }
  if (inflight < 1 || ncalls < 1 || nwarmup < 0) fail("bad counts");
  if (!url && (!cmd || !cmd[0])) fail("usage: mcp_load [options] (--http URL [-- cmd...] | -- cmd...)");
  latencies = calloc((size_t)ncalls + 1, sizeof *latencies);
  sent_at = calloc((size_t)(nwarmup + ncalls) + 2, sizeof *sent_at);
  if (url) run_http(url, cmd); else run_stdio(cmd);
  return 0;
}
