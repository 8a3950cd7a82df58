/*
 * dynlib.h -- a shared library loaded by its soname on first use, its
 * functions looked up into a table. libh2o (the HTTP server), libcurl (the
 * HTTP client) and libcrypto (hashes, random bytes) are not linked: with
 * their own dependencies they would make every claudelua start and every
 * `require "claude"` map some thirty libraries it may never use.
 */
#ifndef CLAUDE_DYNLIB_H
#define CLAUDE_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

/* One library, a static of the file that uses it: the table is filled once
 * per process (it describes the library, not a Lua state). */
typedef struct claude_dynlib {
  const char *soname;
  const char *const *names; /* the functions, in the order of the table's members */
  void *table;              /* a struct of function pointers, one per name */
  size_t count;
  pthread_once_t once;
  int loaded;
  char error[256];
} claude_dynlib;

/* The fields before `once`; the table is a struct of `count` function
 * pointers, nothing else (the loader fills it as an array). */
#define CLAUDE_DYNLIB_INIT(soname, names, table)                                            \
  {(soname), (names), &(table), sizeof(table) / sizeof(void (*)(void)), PTHREAD_ONCE_INIT, 0, \
   ""}

/* Opens lib and fills its table: the body of the pthread_once routine the
 * caller passes to claude_dynlib_load (pthread_once takes no argument). */
void claude_dynlib_open(claude_dynlib *lib);
/* Loads lib once per process through `open_once` (which calls
 * claude_dynlib_open(lib)); 0, or -1 with dlopen's or dlsym's message in err. */
int claude_dynlib_load(claude_dynlib *lib, void (*open_once)(void), char *err, size_t errlen);

#endif
