/*
 * jwt.c -- libFuzzer target: bearer tokens, JWKs and base64url text through
 * claude.oauth.jwt and the C layer under it (src/crypto/base64.c, key_jwk.c, jws.c),
 * as the HTTP server's token check meets them (fuzz/jwt.lua).
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"

static const char CHECK[] = "local _ = ... return require 'jwt'\n";

static lua_State *L;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (L == NULL) L = fuzz_state("fuzz/jwt", CHECK);
  fuzz_check(L, "fuzz/jwt", data, size);
  return 0;
}
