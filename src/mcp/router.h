/*
 * router.h -- the MCP router's C half (router.c). Private to claude.core.
 */
#ifndef CLAUDE_ROUTER_H
#define CLAUDE_ROUTER_H

#include <lua.h>

/* Adds core.mcp_dispatch to the module table on top of the stack. */
void claude_open_router(lua_State *L);

#endif
