/*
 * http_h2o.c -- loads libh2o (h2o's libuv build) on the first
 * core.http_listen and fills the table the HTTP server calls h2o through
 * (see http.h for why it is not linked).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "http.h"

#ifndef CLAUDE_H2O_SONAME
#define CLAUDE_H2O_SONAME "libh2o.so.0.13"
#endif

const claude_h2o_api *claude_h2o = NULL;

static claude_h2o_api table;
static char load_error[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *lib = dlopen(CLAUDE_H2O_SONAME, RTLD_NOW | RTLD_LOCAL);
  void *sym;
  if (lib == NULL) {
    snprintf(load_error, sizeof load_error, "%s", dlerror());
    return;
  }
#define CLAUDE_H2O_LOAD(ret, name, args)                                                        \
  sym = dlsym(lib, #name);                                                                      \
  if (sym == NULL) {                                                                            \
    snprintf(load_error, sizeof load_error, "%s has no %s", CLAUDE_H2O_SONAME, #name);         \
    return;                                                                                     \
  }                                                                                             \
  memcpy(&table.name, &sym, sizeof sym);
  CLAUDE_H2O_FUNCTIONS(CLAUDE_H2O_LOAD)
#undef CLAUDE_H2O_LOAD
  claude_h2o = &table;
}

int claude_h2o_load(char *err, size_t errlen) {
  pthread_once(&load_once, load);
  if (claude_h2o != NULL) return 0;
  snprintf(err, errlen, "%s", load_error);
  return -1;
}
