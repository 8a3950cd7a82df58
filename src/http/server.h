/*
 * server.h -- the HTTP server's private declarations, shared by server.c
 * (listener, connections, the server object), response.c (the response
 * object handed to Lua with each request) and h2o.c (libh2o's table).
 */
#ifndef CLAUDE_HTTP_SERVER_H
#define CLAUDE_HTTP_SERVER_H

#include <h2o.h>

#include "context.h"

/* libh2o is loaded on the first core.http_listen, not with the module: its
 * dependencies (libssl, libcrypto) would cost every claudelua start several
 * milliseconds in the dynamic loader. Every h2o function we call goes
 * through this table (h2o.c), so the module has no link-time reference
 * to libh2o; h2o's inline helpers that call into the library are avoided. */
#define CLAUDE_H2O_FUNCTIONS(X)                                                                   \
  X(void, h2o_accept, (h2o_accept_ctx_t *, h2o_socket_t *))                                     \
  X(void, h2o_add_header, (h2o_mem_pool_t *, h2o_headers_t *, const h2o_token_t *, const char *,  \
                           const char *, size_t))                                              \
  X(void, h2o_add_header_by_str, (h2o_mem_pool_t *, h2o_headers_t *, const char *, size_t, int, \
                                  const char *, const char *, size_t))                          \
  X(void, h2o_config_dispose, (h2o_globalconf_t *))                                             \
  X(void, h2o_config_init, (h2o_globalconf_t *))                                                \
  X(h2o_hostconf_t *, h2o_config_register_host, (h2o_globalconf_t *, h2o_iovec_t, uint16_t))   \
  X(h2o_pathconf_t *, h2o_config_register_path, (h2o_hostconf_t *, const char *, int))          \
  X(void, h2o_context_dispose_pathconf_context, (h2o_context_t *, h2o_pathconf_t *))            \
  X(void, h2o_context_init, (h2o_context_t *, h2o_loop_t *, h2o_globalconf_t *))                \
  X(h2o_handler_t *, h2o_create_handler, (h2o_pathconf_t *, size_t))                            \
  X(const h2o_token_t *, h2o_lookup_token, (const char *, size_t))                              \
  X(void, h2o_filecache_destroy, (h2o_filecache_t *))                                           \
  X(void *, h2o_mem_alloc_shared, (h2o_mem_pool_t *, size_t, void (*)(void *)))                \
  X(void, h2o_multithread_destroy_queue, (h2o_multithread_queue_t *))                           \
  X(void, h2o_multithread_unregister_receiver,                                                  \
    (h2o_multithread_queue_t *, h2o_multithread_receiver_t *))                                  \
  X(void, h2o_send, (h2o_req_t *, h2o_iovec_t *, size_t, h2o_send_state_t))                     \
  X(void, h2o_send_error_generic, (h2o_req_t *, int, const char *, const char *, int))          \
  X(void, h2o_send_inline, (h2o_req_t *, const char *, size_t))                                 \
  X(void, h2o_socket_close, (h2o_socket_t *))                                                   \
  X(int, h2o_socket_get_fd, (h2o_socket_t *))                                                   \
  X(void, h2o_start_response, (h2o_req_t *, h2o_generator_t *))                                 \
  X(h2o_iovec_t, h2o_strdup, (h2o_mem_pool_t *, const char *, size_t))                          \
  X(void, h2o_timeout_dispose, (h2o_loop_t *, h2o_timeout_t *))                                 \
  X(h2o_socket_t *, h2o_uv_socket_create, (uv_stream_t *, uv_close_cb))

typedef struct claude_h2o_api {
#define CLAUDE_H2O_MEMBER(ret, name, args) ret(*name) args;
  CLAUDE_H2O_FUNCTIONS(CLAUDE_H2O_MEMBER)
#undef CLAUDE_H2O_MEMBER
} claude_h2o_api;

/* The table, filled once per process (it describes the library, not a Lua
 * state), or NULL before the first successful load. */
extern const claude_h2o_api *claude_h2o;
/* Loads libh2o once; 0, or -1 with a message in err. */
int claude_h2o_load(char *err, size_t errlen);

#define h2o_accept(...) (claude_h2o->h2o_accept(__VA_ARGS__))
#define h2o_add_header(...) (claude_h2o->h2o_add_header(__VA_ARGS__))
#define h2o_lookup_token(...) (claude_h2o->h2o_lookup_token(__VA_ARGS__))
#define h2o_add_header_by_str(...) (claude_h2o->h2o_add_header_by_str(__VA_ARGS__))
#define h2o_config_dispose(...) (claude_h2o->h2o_config_dispose(__VA_ARGS__))
#define h2o_config_init(...) (claude_h2o->h2o_config_init(__VA_ARGS__))
#define h2o_config_register_host(...) (claude_h2o->h2o_config_register_host(__VA_ARGS__))
#define h2o_config_register_path(...) (claude_h2o->h2o_config_register_path(__VA_ARGS__))
#define h2o_context_dispose_pathconf_context(...) \
  (claude_h2o->h2o_context_dispose_pathconf_context(__VA_ARGS__))
#define h2o_context_init(...) (claude_h2o->h2o_context_init(__VA_ARGS__))
#define h2o_create_handler(...) (claude_h2o->h2o_create_handler(__VA_ARGS__))
#define h2o_filecache_destroy(...) (claude_h2o->h2o_filecache_destroy(__VA_ARGS__))
#define h2o_mem_alloc_shared(...) (claude_h2o->h2o_mem_alloc_shared(__VA_ARGS__))
#define h2o_multithread_destroy_queue(...) (claude_h2o->h2o_multithread_destroy_queue(__VA_ARGS__))
#define h2o_multithread_unregister_receiver(...) \
  (claude_h2o->h2o_multithread_unregister_receiver(__VA_ARGS__))
#define h2o_send(...) (claude_h2o->h2o_send(__VA_ARGS__))
#define h2o_send_error_generic(...) (claude_h2o->h2o_send_error_generic(__VA_ARGS__))
#define h2o_send_inline(...) (claude_h2o->h2o_send_inline(__VA_ARGS__))
#define h2o_socket_close(...) (claude_h2o->h2o_socket_close(__VA_ARGS__))
#define h2o_socket_get_fd(...) (claude_h2o->h2o_socket_get_fd(__VA_ARGS__))
#define h2o_start_response(...) (claude_h2o->h2o_start_response(__VA_ARGS__))
#define h2o_strdup(...) (claude_h2o->h2o_strdup(__VA_ARGS__))
#define h2o_timeout_dispose(...) (claude_h2o->h2o_timeout_dispose(__VA_ARGS__))
#define h2o_uv_socket_create(...) (claude_h2o->h2o_uv_socket_create(__VA_ARGS__))

#define MT_HTTP_SERVER "claude.HttpServer"
#define MT_HTTP_RESPONSE "claude.HttpResponse"
#define MT_HTTP_HEADERS "claude.HttpHeaders"

typedef struct http_server http_server;
typedef struct http_res http_res;

/* The framing of the requests on one connection, as http/framing.c follows it. */
typedef struct http_framing {
  int state;
  int status;          /* 0, or the status the connection is refused with: 400, 431 */
  const char *why;     /* the reason, the body of that answer */
  uint64_t left;       /* body or chunk bytes still to come */
  int digits;          /* bytes of the version, or hex digits of a chunk size, read */
  size_t max_header;   /* the largest head taken (431 past it) */
  size_t head_len;     /* bytes of the head read */
  char *line;          /* the field line being read (its buffer kept between requests) */
  size_t line_len, line_cap;
  size_t name_len;     /* the length of its name, once its ':' came */
  int minor;           /* HTTP/1.minor */
  int fields, lengths, codings, hosts; /* fields; Content-Length, Transfer-Encoding, Host ones */
  uint64_t length;     /* the Content-Length */
} http_framing;

/* http/linger.c: writes the answer to a refused request (f->status, when
 * set), shuts fd's sending side down and reads what still comes for a
 * moment, then closes it; takes fd. */
void claude_http_linger(claude_ctx *ctx, int fd, const http_framing *f);
/* The same for a connection refused at accept (max_connections): a 503. */
void claude_http_linger_refused(claude_ctx *ctx, int fd);

/* http/framing.c: the framing, and the read gate in front of h2o's read
 * callback (put back on a connection with claude_http_framing_wrap, which
 * h2o's own uv_read_start undoes; and on every connection of a server
 * before each wait for I/O by claude_http_framing_rewrap_all, a prepare
 * callback). */
struct http_conn;
void claude_http_framing_wrap(struct http_conn *conn);
void claude_http_framing_rewrap_all(uv_prepare_t *p);
void claude_http_framing_init(http_framing *f, size_t max_header);
void claude_http_framing_free(http_framing *f);
/* Follows n more bytes of what the client sent. Returns how many may go on
 * to h2o: n, or fewer once a request is refused (f->status is set, and the
 * byte at the return value and all after it are not to be read). */
size_t claude_http_framing_feed(http_framing *f, const char *p, size_t n);
/* True between requests: all the client sent so far is whole requests. */
int claude_http_framing_between(const http_framing *f);

/* One accepted TCP connection: h2o's socket wraps `tcp`. Every read on it
 * goes through http/server.c's framing_read, then on to h2o's callback. */
typedef struct http_conn {
  uv_tcp_t tcp;
  http_server *srv;
  struct http_conn *prev, *next;
  uv_read_cb h2o_read;    /* h2o's read callback on `tcp` */
  http_framing framing;
  int linger_fd;          /* a dup of the socket, for the lingering close, or -1 */
} http_conn;

/* The handler h2o calls for every request, pointing back at its server. */
typedef struct http_handler {
  h2o_handler_t super;
  http_server *srv;
} http_handler;

enum { SRV_LISTENING, SRV_DRAINING, SRV_ABORTING };

struct http_server {
  claude_handle hdr;      /* linked in the context until freed */
  http_server **box;      /* the userdata pointing here, or NULL */
  int state;              /* SRV_* */
  int self_ref;           /* the userdata, while listening */
  int on_request_ref;     /* the Lua handler, while listening */
  int callbacks_off;      /* no more calls into Lua (teardown, __gc) */
  h2o_globalconf_t config;
  h2o_context_t h2o;
  h2o_accept_ctx_t accept;
  int h2o_open;           /* the context above is initialised */
  uv_tcp_t listener;
  int listener_open;
  uv_idle_t sentinel;     /* never started: see http_server_free_later */
  uv_timer_t grace;       /* ends a graceful close that takes too long */
  int grace_open;
  uv_prepare_t rewrap;    /* puts framing_read back in front of h2o's reads */
  int rewrap_open;
  size_t max_header;
  double grace_secs;
  int lean;               /* requests without target, version, raw_headers, remote_port */
  http_conn conns;        /* list head of live connections */
  int nconns;
  http_res *responses;    /* responses whose h2o request still exists */
  size_t high_water;      /* res:write returns false above this many bytes */
  size_t max_queued;      /* a write that finds more waiting drops the client (0: none) */
  uint64_t write_timeout; /* ms a response may wait on the socket (0: none) */
  int max_conns;          /* connections served at once; more get a 503 (0: none) */
  uv_timer_t sweep;       /* drops the clients past write_timeout */
  int sweep_open;
  uint64_t swept_at;      /* loop time of the last sweep */
  /* what server:stats() reports */
  size_t queued_peak;     /* the most bytes one response ever had waiting */
  uint64_t dropped_slow, dropped_timeout, refused, requests;
  char address[64];
  int port;
};

enum { RES_NEW, RES_STREAMING, RES_FINISHED, RES_GONE };

struct http_res {
  claude_ctx *ctx;
  http_server *srv;       /* NULL once the request is gone */
  h2o_req_t *req;         /* NULL once h2o disposed of the request */
  h2o_generator_t gen;    /* our streaming body (proceed/stop) */
  http_res *prev, *next;  /* in srv->responses while req != NULL */
  http_res **box;         /* the userdata pointing here, or NULL */
  int state;              /* RES_* */
  int self_ref;           /* the userdata, while the response is open */
  int pins;               /* C frames using this struct right now */
  int sending;            /* h2o holds `inflight` */
  int finishing;          /* send the final chunk after the send in flight */
  int want_drain;         /* a write returned false: call on_drain */
  int fd;                 /* the connection's socket */
  int is_head;            /* HEAD: the body is not sent */
  int chunked;            /* we frame the body in chunks (see res_start) */
  char chunk_head[20];    /* the size line of the chunk in flight */
  int quiet;              /* no callbacks into Lua (collected at lua_close) */
  const char *gone_reason;
  char *inflight;
  size_t inflight_len, inflight_cap;
  char *pending;
  size_t pending_len, pending_cap;
  size_t pending_off;     /* bytes of pending already handed to h2o */
  uint64_t waiting_since; /* loop time (ms) of the send in flight, for write_timeout */
  int writing_inline;     /* a respond() body h2o writes itself: until res_disposed */
  const char *dropped;    /* why the client was dropped (shut down; on_close follows) */
  uv_poll_t watch;        /* the peer's hang-up, on a dup of the socket */
  int watch_fd;           /* -1 when not watching */
  int watch_open;         /* the poll handle exists (until its close callback) */
};

/* Adds core.http_listen and the server's classes to the module table on top
 * of the stack (server.c). */
void claude_open_http(lua_State *L);

/* response.c */
void claude_http_open_response(lua_State *L);
/* http/headers.c: core.http_headers (into the table on top); a response's
 * headers at idx (nil, a table, or made by core.http_headers) checked,
 * raising on a bad one, then added to req's answer (checked before). */
void claude_http_open_headers(lua_State *L);
void claude_http_headers_check(lua_State *L, int idx);
void claude_http_headers_add(lua_State *L, int idx, h2o_req_t *req);
/* Pushes a new response object for req and returns it. */
http_res *claude_http_res_new(lua_State *L, http_server *srv, h2o_req_t *req);
/* After on_request returned: a 500 if it raised, else watch the peer while
 * open; releases the pin on_req took around the call. */
void claude_http_res_after_handler(http_res *res, int failed);
/* Ends an open response because the server closes (abort: right now). */
void claude_http_res_server_closing(http_res *res, int abort);
/* The sweep of write_timeout: drops the client of res when it has taken
 * nothing for srv->write_timeout ms (now: the loop's time); after the loop
 * was held (held), restarts the wait instead. */
void claude_http_res_sweep(http_res *res, uint64_t now, int held);
/* Bytes written to res and not yet taken by the socket. */
size_t claude_http_res_queued(http_res *res);


#endif
