/*
 * router.c -- libFuzzer target: one JSON-RPC message (text) through the
 * in-process MCP router, core.mcp_dispatch and then the tool, resource or
 * prompt it names (fuzz/router.lua): every answer must encode.
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"

static const char CHECK[] = "local _ = ... return require 'router'\n";

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (L == NULL) L = fuzz_state("fuzz/router", CHECK);
  fuzz_check(L, "fuzz/router", data, size);
  return 0;
}
