/*
 * embedded.h -- the Lua modules compiled into claudelua (private). The table
 * is generated at build time by cmake/embed_lua.cmake from lua/claude/.
 */
#ifndef CLAUDE_EMBEDDED_H
#define CLAUDE_EMBEDDED_H

#include <stddef.h>

typedef struct claude_embedded {
  const char *name;            /* module name: "claude.async" */
  const char *chunkname;       /* "=claude/async.lua", for messages */
  const unsigned char *source; /* the file's text */
  size_t size;
} claude_embedded;

/* Ends with an entry whose name is NULL. */
extern const claude_embedded claude_embedded_modules[];

#endif
