/*
 * h2o.c -- loads libh2o (h2o's libuv build) on the first
 * core.http_listen and fills the table the HTTP server calls h2o through
 * (see server.h for why it is not linked).
 */
#include "dynlib.h"
#include "http/server.h"

#ifndef CLAUDE_H2O_SONAME
#define CLAUDE_H2O_SONAME "libh2o.so.0.13"
#endif

const claude_h2o_api *claude_h2o = NULL;

static claude_h2o_api table;
static const char *const names[] = {
#define CLAUDE_H2O_NAME(ret, name, args) #name,
  CLAUDE_H2O_FUNCTIONS(CLAUDE_H2O_NAME)
#undef CLAUDE_H2O_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_H2O_SONAME, names, table);

static void open_once(void) {
  claude_dynlib_open(&lib);
  if (lib.loaded) claude_h2o = &table;
}

int claude_h2o_load(char *err, size_t errlen) {
  return claude_dynlib_load(&lib, open_once, err, errlen);
}
