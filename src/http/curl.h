/*
 * curl.h -- libcurl for the HTTP client, through a table filled when
 * the library is loaded (curl.c) on the first core.http_request: its
 * headers (types, CURLOPT_* and the like) at build time, no link-time
 * reference to the library (see dynlib.h for why).
 */
#ifndef CLAUDE_HTTP_CURL_H
#define CLAUDE_HTTP_CURL_H

/* typecheck-gcc.h wraps curl_easy_setopt and friends in macros that call
 * the library's functions by name; ours below call through the table. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#undef curl_multi_setopt

/* Every libcurl function the client calls; each member of the table has the
 * type of the header's declaration. */
#define CLAUDE_CURL_FUNCTIONS(X) \
  X(curl_easy_cleanup)           \
  X(curl_easy_getinfo)           \
  X(curl_easy_init)              \
  X(curl_easy_pause)             \
  X(curl_easy_reset)             \
  X(curl_easy_setopt)            \
  X(curl_easy_strerror)          \
  X(curl_free)                   \
  X(curl_global_cleanup)         \
  X(curl_global_init)            \
  X(curl_multi_add_handle)       \
  X(curl_multi_assign)           \
  X(curl_multi_cleanup)          \
  X(curl_multi_info_read)        \
  X(curl_multi_init)             \
  X(curl_multi_remove_handle)    \
  X(curl_multi_setopt)           \
  X(curl_multi_socket_action)    \
  X(curl_multi_strerror)         \
  X(curl_slist_append)           \
  X(curl_slist_free_all)         \
  X(curl_url)                    \
  X(curl_url_cleanup)            \
  X(curl_url_get)                \
  X(curl_url_set)                \
  X(curl_url_strerror)

typedef struct claude_curl_api {
#define CLAUDE_CURL_MEMBER(name) __typeof__(name) *name;
  CLAUDE_CURL_FUNCTIONS(CLAUDE_CURL_MEMBER)
#undef CLAUDE_CURL_MEMBER
} claude_curl_api;

/* The table, or NULL before the first successful load. */
extern const claude_curl_api *claude_curl;
/* Loads libcurl once per process; 0, or -1 with a message in err. */
int claude_curl_load(char *err, size_t errlen);

#define curl_easy_cleanup(...) (claude_curl->curl_easy_cleanup(__VA_ARGS__))
#define curl_easy_getinfo(...) (claude_curl->curl_easy_getinfo(__VA_ARGS__))
#define curl_easy_init(...) (claude_curl->curl_easy_init(__VA_ARGS__))
#define curl_easy_pause(...) (claude_curl->curl_easy_pause(__VA_ARGS__))
#define curl_easy_reset(...) (claude_curl->curl_easy_reset(__VA_ARGS__))
#define curl_easy_setopt(...) (claude_curl->curl_easy_setopt(__VA_ARGS__))
#define curl_easy_strerror(...) (claude_curl->curl_easy_strerror(__VA_ARGS__))
#define curl_free(...) (claude_curl->curl_free(__VA_ARGS__))
#define curl_global_cleanup(...) (claude_curl->curl_global_cleanup(__VA_ARGS__))
#define curl_global_init(...) (claude_curl->curl_global_init(__VA_ARGS__))
#define curl_multi_add_handle(...) (claude_curl->curl_multi_add_handle(__VA_ARGS__))
#define curl_multi_assign(...) (claude_curl->curl_multi_assign(__VA_ARGS__))
#define curl_multi_cleanup(...) (claude_curl->curl_multi_cleanup(__VA_ARGS__))
#define curl_multi_info_read(...) (claude_curl->curl_multi_info_read(__VA_ARGS__))
#define curl_multi_init(...) (claude_curl->curl_multi_init(__VA_ARGS__))
#define curl_multi_remove_handle(...) (claude_curl->curl_multi_remove_handle(__VA_ARGS__))
#define curl_multi_setopt(...) (claude_curl->curl_multi_setopt(__VA_ARGS__))
#define curl_multi_socket_action(...) (claude_curl->curl_multi_socket_action(__VA_ARGS__))
#define curl_multi_strerror(...) (claude_curl->curl_multi_strerror(__VA_ARGS__))
#define curl_slist_append(...) (claude_curl->curl_slist_append(__VA_ARGS__))
#define curl_slist_free_all(...) (claude_curl->curl_slist_free_all(__VA_ARGS__))
#define curl_url(...) (claude_curl->curl_url(__VA_ARGS__))
#define curl_url_cleanup(...) (claude_curl->curl_url_cleanup(__VA_ARGS__))
#define curl_url_get(...) (claude_curl->curl_url_get(__VA_ARGS__))
#define curl_url_set(...) (claude_curl->curl_url_set(__VA_ARGS__))
#define curl_url_strerror(...) (claude_curl->curl_url_strerror(__VA_ARGS__))

#endif
