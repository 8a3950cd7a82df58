/*
 * embedded.h -- the Lua modules compiled into claudelua (private). The table
 * is generated at build time by cmake/embed_lua.cmake from lua/claude/ (the
 * text), and for the host by cmake/embed_bytecode.c from that (bytecode).
 */
#ifndef CLAUDE_EMBEDDED_H
#define CLAUDE_EMBEDDED_H

#include <stddef.h>

typedef struct claude_embedded {
  const char *name;            /* module name: "claude.async" */
  const char *chunkname;       /* "=claude/async.lua", for messages */
  const unsigned char *source; /* the file's text, or its bytecode */
  size_t size;
} claude_embedded;

/* Ends with an entry whose name is NULL. */
extern const claude_embedded claude_embedded_modules[];
/* lua_load's mode for every source above: "t" (text) or "b" (bytecode) */
extern const char claude_embedded_mode[];

#endif
