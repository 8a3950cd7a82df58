/*
 * repl.h -- the line reader of `claudelua -i` (repl.c).
 */
#ifndef CLAUDELUA_HOST_REPL_H
#define CLAUDELUA_HOST_REPL_H

#include <lua.h>

/* Pushes a reader of stdin: reader:read(prompt, fn), reader:add_history(line),
 * reader:interrupt(), reader:close(); reader.readline, reader.tty. */
void claudelua_repl_push(lua_State *L);

#endif
