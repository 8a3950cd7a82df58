/*
 * base64.c -- base64url without padding (RFC 4648 section 5, as JWS and JWK
 * use it): core.base64url_encode and a strict core.base64url_decode; and the
 * standard alphabet with padding (section 4: MCP's image and audio data,
 * HTTP Basic credentials): core.base64_encode. The project's only base64.
 * Plain C, no libcrypto: tokens are split and decoded before any key is
 * needed.
 */
#include <string.h>

#include "crypto/crypto.h"

static const char alphabet[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char std_alphabet[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* 0..63 for the alphabet's bytes, 64 for every other byte */
static unsigned char value_of(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return (unsigned char)(c - 'A');
  if (c >= 'a' && c <= 'z') return (unsigned char)(c - 'a' + 26);
  if (c >= '0' && c <= '9') return (unsigned char)(c - '0' + 52);
  if (c == '-') return 62;
  if (c == '_') return 63;
  return 64;
}

size_t claude_b64url_encoded_len(size_t n) {
  return n / 3 * 4 + (n % 3 == 0 ? 0 : n % 3 + 1);
}

/* The three bytes left at the end as 2 or 3 characters; the padding is
 * the caller's. */
static char *encode_groups(const unsigned char *in, size_t n, char *out, const char *abc) {
  size_t i = 0;
  unsigned long v;
  for (; i + 3 <= n; i += 3) {
    v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 | in[i + 2];
    *out++ = abc[v >> 18 & 63];
    *out++ = abc[v >> 12 & 63];
    *out++ = abc[v >> 6 & 63];
    *out++ = abc[v & 63];
  }
  if (n - i == 1) {
    v = (unsigned long)in[i] << 16;
    *out++ = abc[v >> 18 & 63];
    *out++ = abc[v >> 12 & 63];
  } else if (n - i == 2) {
    v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8;
    *out++ = abc[v >> 18 & 63];
    *out++ = abc[v >> 12 & 63];
    *out++ = abc[v >> 6 & 63];
  }
  return out;
}

void claude_b64url_encode(const unsigned char *in, size_t n, char *out) {
  encode_groups(in, n, out, alphabet);
}

int claude_b64url_decode(const char *in, size_t len, unsigned char *out, size_t *outlen,
                         const char **why, size_t *at) {
  const unsigned char *s = (const unsigned char *)in;
  size_t i, o = 0, rest = len % 4;
  unsigned long v = 0;
  if (rest == 1) {
    *why = "its length is not that of any byte string";
    *at = len;
    return -1;
  }
  for (i = 0; i < len; i++) {
    unsigned char d = value_of(s[i]);
    if (d == 64) {
      *why = s[i] == '=' ? "padding is not allowed" : "a byte is not in the alphabet";
      *at = i;
      return -1;
    }
    v = v << 6 | d;
    if (i % 4 == 3) {
      out[o++] = (unsigned char)(v >> 16);
      out[o++] = (unsigned char)(v >> 8);
      out[o++] = (unsigned char)v;
      v = 0;
    }
  }
  /* the last 2 or 3 characters carry 12 or 18 bits for 1 or 2 bytes: the
   * bits past them must be zero, or two texts would decode alike */
  if (rest == 2) {
    if (v & 0xf) goto trailing;
    out[o++] = (unsigned char)(v >> 4);
  } else if (rest == 3) {
    if (v & 0x3) goto trailing;
    out[o++] = (unsigned char)(v >> 10);
    out[o++] = (unsigned char)(v >> 2);
  }
  *outlen = o;
  return 0;
trailing:
  *why = "its last character has bits set past the data";
  *at = len - 1;
  return -1;
}

/* core.base64url_encode(s) -> s in base64url, unpadded */
static int l_encode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  size_t outn = claude_b64url_encoded_len(n);
  char *p = luaL_buffinitsize(L, &b, outn);
  claude_b64url_encode((const unsigned char *)s, n, p);
  luaL_pushresultsize(&b, outn);
  return 1;
}

/* core.base64url_decode(s) -> bytes | nil, message, "base64". The message
 * gives an offset, never the text (it may be part of a token). */
static int l_decode(lua_State *L) {
  size_t n, outn = 0, at = 0;
  const char *s = luaL_checklstring(L, 1, &n);
  const char *why = NULL;
  luaL_Buffer b;
  unsigned char *p = (unsigned char *)luaL_buffinitsize(L, &b, n / 4 * 3 + 2);
  if (claude_b64url_decode(s, n, p, &outn, &why, &at) != 0) {
    luaL_pushresultsize(&b, 0);
    luaL_pushfail(L);
    if (at == n) {
      lua_pushfstring(L, "invalid base64url: %s", why);
    } else {
      lua_pushfstring(L, "invalid base64url: %s (offset %d)", why, (int)at);
    }
    lua_pushliteral(L, "base64");
    return 3;
  }
  luaL_pushresultsize(&b, outn);
  return 1;
}

/* core.base64_encode(s) -> s in standard base64, padded */
static int l_std_encode(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  size_t outn = (n + 2) / 3 * 4;
  char *p = luaL_buffinitsize(L, &b, outn);
  char *end = encode_groups((const unsigned char *)s, n, p, std_alphabet);
  while (end < p + outn) *end++ = '=';
  luaL_pushresultsize(&b, outn);
  return 1;
}

static const luaL_Reg base64_functions[] = {
  {"base64url_encode", l_encode}, {"base64url_decode", l_decode},
  {"base64_encode", l_std_encode}, {NULL, NULL}};

void claude_open_base64(lua_State *L) {
  luaL_setfuncs(L, base64_functions, 0);
}
