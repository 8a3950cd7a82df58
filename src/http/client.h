/*
 * client.h -- what the files of the HTTP client share (private): the multi
 * handle of a lua_State (multi.c), a request and its transfer (transfer.c),
 * and core.http_request (client.c).
 */
#ifndef CLAUDE_HTTP_CLIENT_H
#define CLAUDE_HTTP_CLIENT_H

#include "context.h"
#include "http/curl.h"
#include "http/sse.h"

#define POOL_MAX 16 /* idle easy handles kept for reuse */
#define MAX_IDLE_CONNECTIONS 64

enum { BODY_COLLECT, BODY_STREAM, BODY_SSE };

typedef struct http_multi http_multi;
typedef struct http_req http_req;
typedef struct http_busy http_busy;

typedef struct http_sock {
  uv_poll_t poll;
  http_multi *m;
  curl_socket_t fd;
  struct http_sock *prev, *next;
} http_sock;

struct http_multi {
  claude_handle hdr;     /* linked in the context: torn down at lua_close */
  http_multi **box;      /* the registry's box pointing here */
  CURLM *multi;
  http_busy *busy;       /* handles open while transfers run or Lua has things due */
  int handles;           /* our libuv handles not yet closed */
  int active;            /* transfers in the multi handle */
  int closing;
  int depth;             /* deliveries under way */
  http_sock socks;       /* list head */
  http_req *reqs;        /* every request not yet freed */
  http_req *dirty, *dirty_tail; /* requests with something for Lua */
  CURL *pool[POOL_MAX];
  int npool;
};

struct http_req {
  http_multi *m;
  http_req **box;              /* the userdata pointing here, or NULL */
  http_req *prev, *next;       /* m->reqs */
  http_req *dirty_next;
  int is_dirty, delivering;
  CURL *easy;
  struct curl_slist *hdrs;
  struct curl_slist *resolve;  /* CURLOPT_RESOLVE: the address a URL guard checked */
  char *label;                 /* "METHOD url" */
  int self_ref, body_ref, headers_ref, data_ref, event_ref, done_ref;
  int running;                 /* in the multi handle */
  int finished;                /* done or cancelled: no more callbacks */
  int cancelled;
  int mode;                    /* BODY_*, chosen when the headers are in */
  int want_sse, want_stream;
  long status;
  claude_buf head;             /* "name:value\n" lines of the final response */
  int head_done, head_pending;
  claude_buf body;             /* the collected body, or a chunk not yet delivered */
  size_t body_total;
  long long max_body;          /* -1: the default for the mode */
  claude_sse sse;
  claude_buf events;           /* parsed events not yet delivered, serialized */
  size_t events_pos;
  int paused;                  /* reading stopped until Lua took what waits */
  int done_pending;
  CURLcode result;
  const char *fail_kind;       /* our own reason for aborting the transfer */
  char fail_msg[128];
  char errbuf[CURL_ERROR_SIZE];
};

/* The handles a multi handle needs while it works: curl's timer, and a
 * check handle that hands Lua what curl produced once the turn's I/O is
 * handled, with an idle handle keeping the loop from blocking meanwhile. A
 * result that came from a timer at the start of a turn would otherwise wait
 * behind a poll that blocks until some other I/O arrives. */
struct http_busy {
  uv_timer_t timer;
  uv_idle_t idle;
  uv_check_t check;
  http_multi *m;
  int open; /* handles not yet closed */
};

/* Adds core.http_request to the module table on top of the stack (client.c). */
void claude_open_http_client(lua_State *L);

/* multi.c: the multi handle, which drives the requests (it calls
 * transfer.c; not the other way round). */
http_multi *claude_http_multi(lua_State *L, claude_ctx *ctx);
/* With no transfer running and nothing for Lua, the multi handle keeps no
 * libuv handle open: after a request was stopped from Lua (cancel, __gc). */
void claude_http_maybe_idle(http_multi *m);

/* transfer.c: one request. It uses the multi handle's fields (its queue of
 * requests with something for Lua), none of multi.c's functions. */
void claude_http_mark_dirty(http_req *r);
/* Ends r where it stands; whether the multi handle goes idle then is the
 * caller's to say (claude_http_maybe_idle). */
void claude_http_stop(http_req *r);
void claude_http_free(http_req *r);
void claude_http_free_if_done(http_req *r);
/* Hands Lua what the queued requests have; the caller keeps m (m->depth). */
void claude_http_deliver_all(http_multi *m);
int claude_http_prefix_ci(const char *s, size_t n, const char *prefix);
size_t claude_http_on_header(char *p, size_t size, size_t nmemb, void *ud);
size_t claude_http_on_body(char *p, size_t size, size_t nmemb, void *ud);

#endif
