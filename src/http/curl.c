/*
 * curl.c -- loads libcurl on the first core.http_request and fills the
 * table the HTTP client calls it through (see curl.h).
 */
#include "dynlib.h"
#include "http/curl.h"

#ifndef CLAUDE_CURL_SONAME
#define CLAUDE_CURL_SONAME "libcurl.so.4"
#endif

const claude_curl_api *claude_curl = NULL;

static claude_curl_api table;
static const char *const names[] = {
#define CLAUDE_CURL_NAME(name) #name,
  CLAUDE_CURL_FUNCTIONS(CLAUDE_CURL_NAME)
#undef CLAUDE_CURL_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_CURL_SONAME, names, table);

static void open_once(void) {
  claude_dynlib_open(&lib);
  if (lib.loaded) claude_curl = &table;
}

int claude_curl_load(char *err, size_t errlen) {
  return claude_dynlib_load(&lib, open_once, err, errlen);
}
