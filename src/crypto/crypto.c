/*
 * crypto.c -- libcrypto (OpenSSL 3) for claude.core: loading it on the first
 * call (it is not linked, see dynlib.h), its errors as Lua values, and the
 * two primitives OAuth's PKCE needs: random bytes (state, verifiers) and
 * SHA-256 (challenges). Keys and signatures are key.c, key_jwk.c and jws.c.
 */
#include "crypto/crypto.h"
#include "dynlib.h"

#ifndef CLAUDE_CRYPTO_SONAME
#define CLAUDE_CRYPTO_SONAME "libcrypto.so.3"
#endif

#define RANDOM_MAX (1 << 20)

claude_crypto_api claude_crypto;

static const char *const names[] = {
#define CRYPTO_NAME(name) #name,
  CLAUDE_CRYPTO_FUNCTIONS(CRYPTO_NAME)
#undef CRYPTO_NAME
};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_CRYPTO_SONAME, names, claude_crypto);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

int claude_crypto_load(lua_State *L) {
  char why[256];
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) == 0) return 0;
  luaL_pushfail(L);
  lua_pushfstring(L, "libcrypto could not be loaded: %s", why);
  lua_pushliteral(L, "ENOSYS");
  return 3;
}

void claude_crypto_push_error(lua_State *L, const char *what) {
  char reason[256];
  unsigned long e = claude_crypto.ERR_get_error();
  if (e == 0) {
    lua_pushstring(L, what);
    return;
  }
  claude_crypto.ERR_error_string_n(e, reason, sizeof reason);
  claude_crypto.ERR_clear_error(); /* the rest of the queue is about the same failure */
  lua_pushfstring(L, "%s: %s", what, reason);
}

int claude_crypto_fail(lua_State *L, const char *what, const char *kind) {
  luaL_pushfail(L);
  claude_crypto_push_error(L, what);
  lua_pushstring(L, kind);
  return 3;
}

/* the protected part of claude_crypto_push_owned */
static int push_lstring(lua_State *L) {
  const char *data = (const char *)lua_touserdata(L, 1);
  size_t len = (size_t)lua_tointeger(L, 2);
  lua_pushlstring(L, data, len);
  return 1;
}

void claude_crypto_push_owned(lua_State *L, unsigned char *data, size_t len, int wipe) {
  int status;
  lua_pushcfunction(L, push_lstring);
  lua_pushlightuserdata(L, data);
  lua_pushinteger(L, (lua_Integer)len);
  status = lua_pcall(L, 2, 1, 0);
  if (wipe) claude_crypto.OPENSSL_cleanse(data, len);
  claude_crypto.CRYPTO_free(data, __FILE__, __LINE__);
  if (status != LUA_OK) lua_error(L);
}

/* core.random_bytes(n) -> n bytes from the CSPRNG | nil, message, "crypto" |
 * nil, message, "ENOSYS" */
static int l_random_bytes(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_Buffer b;
  unsigned char *p;
  int nret;
  luaL_argcheck(L, n >= 0 && n <= RANDOM_MAX, 1, "size out of range (0 to 1 MiB)");
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  p = (unsigned char *)luaL_buffinitsize(L, &b, (size_t)n);
  if (n > 0 && claude_crypto.RAND_bytes(p, (int)n) != 1) {
    return claude_crypto_fail(L, "the random number generator failed", "crypto");
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
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  if (claude_crypto.EVP_Digest(s, len, md, &mdlen, claude_crypto.EVP_sha256(), NULL) != 1) {
    claude_crypto_push_error(L, "SHA-256 failed");
    return lua_error(L);
  }
  lua_pushlstring(L, (const char *)md, mdlen);
  return 1;
}

static const luaL_Reg crypto_functions[] = {
  {"random_bytes", l_random_bytes}, {"sha256", l_sha256}, {NULL, NULL}};

/* Adds random_bytes and sha256 to the module table on top of the stack. */
void claude_open_crypto(lua_State *L) {
  luaL_setfuncs(L, crypto_functions, 0);
}
