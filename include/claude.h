/*
 * claude.h -- the public C interface of claudelua.
 *
 * An application that already embeds Lua 5.4 opens the module in its own
 * lua_State:
 *
 *   luaL_requiref(L, "claude.core", luaopen_claude_core, 0);
 *
 * and, to share its own libuv loop, calls claude_set_loop() first. Without it
 * the module creates a private loop per lua_State, which the application can
 * drive from its own event loop through claude.pollfd()/timeout()/step().
 */
#ifndef CLAUDE_H
#define CLAUDE_H

#include <lua.h>
#include <uv.h>

#define CLAUDE_VERSION "0.1.0"

#if defined(__GNUC__)
#define CLAUDE_EXPORT __attribute__((visibility("default")))
#else
#define CLAUDE_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the C core ("claude.core"): pushes the module table. */
CLAUDE_EXPORT int luaopen_claude_core(lua_State *L);

/*
 * Makes the module use `loop` for this lua_State. Call it before the module
 * is first opened in L. The module never runs uv_loop_close on a loop it did
 * not create; the application must keep the loop alive until lua_close(L).
 * Returns 0, or -1 when the module is already open with another loop.
 */
CLAUDE_EXPORT int claude_set_loop(lua_State *L, uv_loop_t *loop);

/* The loop the module uses for L (creating the context if needed). */
CLAUDE_EXPORT uv_loop_t *claude_get_loop(lua_State *L);

#ifdef __cplusplus
}
#endif

#endif
