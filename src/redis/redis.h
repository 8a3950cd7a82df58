/*
 * redis.h -- claude.core.Redis (redis.c): a non-blocking Redis connection on
 * the state's loop, through hiredis loaded on first use. Private to
 * claude.core.
 */
#ifndef CLAUDE_REDIS_H
#define CLAUDE_REDIS_H

#include <lua.h>

/* Adds core.redis_connect and the claude.core.Redis class to the module
 * table on top of the stack. */
void claude_open_redis(lua_State *L);

#endif
