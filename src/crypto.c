/*
 * crypto.c -- the little cryptography OAuth needs, from OpenSSL's libcrypto:
 * random bytes (state, PKCE verifiers) and SHA-256 (PKCE challenges).
 * libcrypto is loaded on the first call, not linked (see dynlib.h): its
 * headers at build time, its functions through the table below.
 */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "core.h"
#include "dynlib.h"

#ifndef CLAUDE_CRYPTO_SONAME
#define CLAUDE_CRYPTO_SONAME "libcrypto.so.3"
#endif

#define RANDOM_MAX (1 << 20)

#define CRYPTO_FUNCTIONS(X) \
  X(ERR_error_string_n)     \
  X(ERR_get_error)          \
  X(EVP_Digest)             \
  X(EVP_sha256)             \
  X(RAND_bytes)

static struct {
#define CRYPTO_MEMBER(name) __typeof__(name) *name;
  CRYPTO_FUNCTIONS(CRYPTO_MEMBER)
#undef CRYPTO_MEMBER
} api;
static const char *const names[] = {
#define CRYPTO_NAME(name) #name,
  CRYPTO_FUNCTIONS(CRYPTO_NAME)
#undef CRYPTO_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_CRYPTO_SONAME, names, api);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

/* Loads libcrypto, or pushes nil, message, "ENOSYS" and returns 3. */
static int load(lua_State *L) {
  char why[256];
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) == 0) return 0;
  luaL_pushfail(L);
  lua_pushfstring(L, "libcrypto could not be loaded: %s", why);
  lua_pushliteral(L, "ENOSYS");
  return 3;
}

/* OpenSSL's reason for the failure just seen, after `what`. */
static void push_openssl_error(lua_State *L, const char *what) {
  char reason[256];
  unsigned long e = api.ERR_get_error();
  if (e == 0) {
    lua_pushstring(L, what);
    return;
  }
  api.ERR_error_string_n(e, reason, sizeof reason);
  while (api.ERR_get_error() != 0) {} /* the rest of the queue is about the same failure */
  lua_pushfstring(L, "%s: %s", what, reason);
}

/* core.random_bytes(n) -> n bytes from the CSPRNG | nil, message, "crypto" |
 * nil, message, "ENOSYS" */
static int l_random_bytes(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_Buffer b;
  unsigned char *p;
  int nret;
  luaL_argcheck(L, n >= 0 && n <= RANDOM_MAX, 1, "size out of range (0 to 1 MiB)");
  if ((nret = load(L)) != 0) return nret;
  p = (unsigned char *)luaL_buffinitsize(L, &b, (size_t)n);
  if (n > 0 && api.RAND_bytes(p, (int)n) != 1) {
    luaL_pushfail(L);
    push_openssl_error(L, "the random number generator failed");
    lua_pushliteral(L, "crypto");
    return 3;
  }
  luaL_pushresultsize(&b, (size_t)n);
  return 1;
}

/* core.sha256(s) -> the 32-byte SHA-256 digest of s (binary) |
 * nil, message, "ENOSYS" */
static int l_sha256(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  int nret;
  if ((nret = load(L)) != 0) return nret;
  if (api.EVP_Digest(s, len, md, &mdlen, api.EVP_sha256(), NULL) != 1) {
    push_openssl_error(L, "SHA-256 failed");
    return lua_error(L);
  }
  lua_pushlstring(L, (const char *)md, mdlen);
  return 1;
}

static const luaL_Reg crypto_functions[] = {
  {"random_bytes", l_random_bytes}, {"sha256", l_sha256}, {NULL, NULL}};

/* Adds the functions to the module table on top of the stack. */
void claude_open_crypto(lua_State *L) {
  luaL_setfuncs(L, crypto_functions, 0);
}
