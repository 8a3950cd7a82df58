/*
 * client.c -- libFuzzer target: a hostile MCP server's answers through the
 * client's readers of task answers and of pages (fuzz/client.lua): every
 * outcome must be a value or nil, err, kind, and every walk must end.
 */
#include <stdint.h>
#include <string.h>

#define FUZZ_LUA_COVERAGE /* the readers are Lua: libFuzzer sees their lines */
#include "harness.h"

static const char CHECK[] = "local _ = ... return require 'client'\n";

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (L == NULL) L = fuzz_state("fuzz/client", CHECK);
  fuzz_check(L, "fuzz/client", data, size);
  return 0;
}
