/*
 * idn.c -- core.idna_lookup(name) -> true | false, message | nil, message,
 * "unsupported": is a host name (UTF-8, labels of A-labels or U-labels) one
 * that IDNA2008 looks up? libidn2's idn2_lookup_u8 without the TR46 mapping:
 * code points PVALID or allowed by their context rules (CONTEXTJ), NFC,
 * Punycode that decodes, no leading combining mark (with `nfc`, the name is
 * normalized to NFC first instead). The rules libidn2 leaves
 * out (CONTEXTO, Bidi, hyphens, lengths) are claude.schema.formats'.
 *
 * libidn2 is loaded by soname on the first call (dynlib.h), as libpcre2-8 is.
 */
#include <idn2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema/idn.h"
#include "dynlib.h"

#ifndef CLAUDE_IDN2_SONAME
#define CLAUDE_IDN2_SONAME "libidn2.so.0"
#endif

/* a name longer than any host name: refused before libidn2 sees it */
#define NAME_MAX_BYTES 1024

typedef struct idn2_api {
  int (*idn2_lookup_u8)(const uint8_t *, uint8_t **, int);
  const char *(*idn2_strerror)(int);
  void (*idn2_free)(void *);
} idn2_api;

static idn2_api idn2;
static const char *const names[] = {"idn2_lookup_u8", "idn2_strerror", "idn2_free"};
static claude_dynlib lib = CLAUDE_DYNLIB_INIT(CLAUDE_IDN2_SONAME, names, idn2);

static void open_once(void) {
  claude_dynlib_open(&lib);
}

static int l_idna_lookup(lua_State *L) {
  size_t n;
  const char *name = luaL_checklstring(L, 1, &n);
  int flags = IDN2_NO_TR46 | (lua_toboolean(L, 2) ? IDN2_NFC_INPUT : 0);
  uint8_t *out = NULL;
  char why[256];
  int rc;
  if (claude_dynlib_load(&lib, open_once, why, sizeof why) != 0) {
    luaL_pushfail(L);
    lua_pushfstring(L, "libidn2 could not be loaded (host names cannot be checked): %s", why);
    lua_pushliteral(L, "unsupported");
    return 3;
  }
  if (n > NAME_MAX_BYTES || memchr(name, '\0', n) != NULL) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, n > NAME_MAX_BYTES ? "too long" : "holds a NUL");
    return 2;
  }
  rc = idn2.idn2_lookup_u8((const uint8_t *)name, &out, flags);
  if (out) idn2.idn2_free(out);
  if (rc != IDN2_OK) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, idn2.idn2_strerror(rc));
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

void claude_open_idn(lua_State *L) {
  lua_pushcfunction(L, l_idna_lookup);
  lua_setfield(L, -2, "idna_lookup");
}
