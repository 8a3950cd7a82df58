rockspec_format = "3.0"
package = "claudelua"
version = "scm-1"
source = {
  url = "git+https://example.invalid/claudelua.git",
}
description = {
  summary = "Drive the Claude Code CLI from Lua and write MCP tools in Lua",
  detailed = [[
    A C core on libuv (processes, line framing, exact JSON, an MCP router) and a
    Lua module: tasks, sessions with the claude CLI over its control protocol,
    and in-process MCP tools. Also the claudelua host executable.
  ]],
  license = "MIT",
}
dependencies = {
  "lua >= 5.4",
}
external_dependencies = {
  LIBUV = { header = "uv.h", library = "uv" },
  H2O = { header = "h2o.h", library = "h2o" }, -- h2o's libuv build (Debian: libh2o-dev)
  -- library only: Debian puts curl/curl.h under a multiarch include directory
  -- luarocks does not search (CMake finds it through pkg-config)
  CURL = { library = "curl" },
  CRYPTO = { header = "openssl/evp.h", library = "crypto" },
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    LUADIR = "$(LUADIR)",
    LIBDIR = "$(LIBDIR)",
    BINDIR = "$(BINDIR)",
    -- Lua's headers as LuaRocks knows them: no pkg-config file needed
    LUA_INCDIR = "$(LUA_INCDIR)",
    -- the rock is the executable and the module; libclaudelua for embedding
    -- comes with `cmake --install` (LuaRocks would move its files apart)
    CLAUDELUA_INSTALL_LIBRARY = "OFF",
  },
}
test = {
  type = "busted",
}
