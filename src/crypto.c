/*
 * crypto.c -- the little cryptography OAuth needs, from OpenSSL's libcrypto:
 * random bytes (state, PKCE verifiers) and SHA-256 (PKCE challenges).
 */
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core.h"

#define RANDOM_MAX (1 << 20)

/* core.random_bytes(n) -> n bytes from the CSPRNG | nil, message, "crypto" */
static int l_random_bytes(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_Buffer b;
  unsigned char *p;
  luaL_argcheck(L, n >= 0 && n <= RANDOM_MAX, 1, "size out of range (0 to 1 MiB)");
  p = (unsigned char *)luaL_buffinitsize(L, &b, (size_t)n);
  if (n > 0 && RAND_bytes(p, (int)n) != 1) {
    luaL_pushfail(L);
    lua_pushliteral(L, "the random number generator failed");
    lua_pushliteral(L, "crypto");
    return 3;
  }
  luaL_pushresultsize(&b, (size_t)n);
  return 1;
}

/* core.sha256(s) -> the 32-byte SHA-256 digest of s (binary) */
static int l_sha256(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL) != 1)
    return luaL_error(L, "SHA-256 failed");
  lua_pushlstring(L, (const char *)md, mdlen);
  return 1;
}

static const luaL_Reg crypto_functions[] = {
  {"random_bytes", l_random_bytes}, {"sha256", l_sha256}, {NULL, NULL}};

/* Adds the functions to the module table on top of the stack. */
void claude_open_crypto(lua_State *L) {
  luaL_setfuncs(L, crypto_functions, 0);
}
