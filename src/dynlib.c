/*
 * dynlib.c -- dlopen by soname, once per process, and dlsym into a table
 * (see dynlib.h).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dynlib.h"

typedef void (*any_fn)(void);

void claude_dynlib_open(claude_dynlib *lib) {
  /* RTLD_LOCAL: the library's symbols stay out of the global scope, where
   * Lua C modules loaded later could bind to them by accident. The handle
   * is never closed: the table outlives every Lua state. */
  void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
  size_t i;
  if (handle == NULL) {
    const char *why = dlerror();
    snprintf(lib->error, sizeof lib->error, "%s", why != NULL ? why : lib->soname);
    return;
  }
  for (i = 0; i < lib->count; i++) {
    void *sym = dlsym(handle, lib->names[i]);
    if (sym == NULL) {
      snprintf(lib->error, sizeof lib->error, "%s has no %s", lib->soname, lib->names[i]);
      return;
    }
    /* POSIX makes dlsym's object pointer a valid function pointer */
    memcpy((char *)lib->table + i * sizeof(any_fn), &sym, sizeof sym);
  }
  lib->loaded = 1;
}

int claude_dynlib_load(claude_dynlib *lib, void (*open_once)(void), char *err, size_t errlen) {
  pthread_once(&lib->once, open_once);
  if (lib->loaded) return 0;
  snprintf(err, errlen, "%s", lib->error);
  return -1;
}
