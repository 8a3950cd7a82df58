/*
 * claudelua/claude.h -- the public C interface of claudelua (libclaudelua).
 *
 * An application that already embeds Lua 5.4 makes the whole module
 * available in its own lua_State, with no Lua files on disk:
 *
 *   claude_preload(L);               -- package.preload["claude"], ...
 *   luaL_dostring(L, "local claude = require 'claude' ...");
 *
 * and, to share its own libuv loop, calls claude_set_loop() first. Without it
 * the module creates a private loop per lua_State, which the application can
 * drive from its own event loop through claude.pollfd()/timeout()/step().
 * The library does not link liblua: the application brings its own Lua 5.4.
 * Build flags: `pkg-config --cflags --libs claudelua lua5.4`, or CMake's
 * `find_package(claudelua)` and the target `claudelua::claudelua` (shared)
 * or `claudelua::claudelua_static`. docs/api.md describes every function.
 */
#ifndef CLAUDELUA_CLAUDE_H
#define CLAUDELUA_CLAUDE_H

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
 * Registers "claude.core" and every Lua module of claudelua (compiled into
 * the library) in package.preload, so that `require "claude"` needs no files
 * on disk. Leaves the stack as it was. Entries already in package.preload
 * are replaced. Needs the package library (luaL_openlibs).
 */
CLAUDE_EXPORT void claude_preload(lua_State *L);

/*
 * claude_preload(L), then `require "claude"`: pushes the module table. For
 * luaL_requiref(L, "claude", luaopen_claude, 0). Raises on failure.
 */
CLAUDE_EXPORT int luaopen_claude(lua_State *L);

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
