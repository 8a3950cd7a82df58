/*
 * jws.c -- JWS signatures (RFC 7515, algorithms of RFC 7518 and RFC 8037)
 * with a claude.core.Key: HS256/384/512 (HMAC), RS256/384/512 (RSASSA-PKCS1
 * v1.5), PS256/384/512 (RSASSA-PSS, salt as long as the hash), ES256/384/512
 * (ECDSA, signatures as fixed-width r || s, not DER) and EdDSA (Ed25519,
 * Ed448; "Ed25519" names the one curve, RFC 9864).
 *
 * Every algorithm is bound to one key type and, for ECDSA, one curve: a
 * token's `alg` can never make a key act as another kind (an RSA public key
 * used as an HMAC secret, the classic confusion), and "none" is no
 * algorithm at all. `verify` answers false with a reason for every
 * mismatch, as the algorithm comes from the token; `sign` raises, as the
 * caller chose it.
 */
#include <string.h>

#include "crypto/crypto.h"

#define RSA_MIN_BITS 2048 /* RFC 7518 3.3 and 3.5 */
#define SIG_MAX 2048      /* an RSA signature of the largest key key.c takes */

enum { FAM_HMAC, FAM_RSA, FAM_PSS, FAM_ECDSA, FAM_EDDSA };

typedef struct jws_alg {
  const char *name;
  int family;
  int bits;        /* of the hash: 256, 384, 512 (0 for EdDSA) */
  const char *crv; /* the one curve of ECDSA and of "Ed25519"; NULL: any */
  size_t width;    /* bytes of r and of s for ECDSA */
} jws_alg;

static const jws_alg algs[] = {
  {"HS256", FAM_HMAC, 256, NULL, 0},     {"HS384", FAM_HMAC, 384, NULL, 0},
  {"HS512", FAM_HMAC, 512, NULL, 0},     {"RS256", FAM_RSA, 256, NULL, 0},
  {"RS384", FAM_RSA, 384, NULL, 0},      {"RS512", FAM_RSA, 512, NULL, 0},
  {"PS256", FAM_PSS, 256, NULL, 0},      {"PS384", FAM_PSS, 384, NULL, 0},
  {"PS512", FAM_PSS, 512, NULL, 0},      {"ES256", FAM_ECDSA, 256, "P-256", 32},
  {"ES384", FAM_ECDSA, 384, "P-384", 48}, {"ES512", FAM_ECDSA, 512, "P-521", 66},
  {"EdDSA", FAM_EDDSA, 0, NULL, 0},      {"Ed25519", FAM_EDDSA, 0, "Ed25519", 0},
};
#define NALGS (sizeof algs / sizeof algs[0])

/* The algorithm named by the string at idx: NULL for unknown names, and
 * for names with a NUL inside ("RS256\0..." is not RS256). */
static const jws_alg *check_alg(lua_State *L, int idx) {
  size_t len, i;
  const char *name = luaL_checklstring(L, idx, &len);
  if (strlen(name) != len) return NULL;
  for (i = 0; i < NALGS; i++) {
    if (strcmp(algs[i].name, name) == 0) return &algs[i];
  }
  return NULL;
}

static const EVP_MD *digest_of(const jws_alg *a) {
  switch (a->bits) {
  case 256: return claude_crypto.EVP_sha256();
  case 384: return claude_crypto.EVP_sha384();
  case 512: return claude_crypto.EVP_sha512();
  default: return NULL;
  }
}

/* Why k cannot be used with a: pushes the reason and returns 1; or 0. */
static int mismatch(lua_State *L, const claude_key *k, const jws_alg *a) {
  const char *need = NULL;
  int ok;
  switch (a->family) {
  case FAM_HMAC:
    ok = k->kind == CLAUDE_KEY_OCT;
    need = "a symmetric (oct)";
    if (ok && k->secret_len * 8 < (size_t)a->bits) { /* RFC 7518 3.2 */
      lua_pushfstring(L, "%s needs a key of at least %d bytes", a->name, a->bits / 8);
      return 1;
    }
    break;
  case FAM_RSA:
  case FAM_PSS:
    ok = k->kind == CLAUDE_KEY_RSA;
    need = "an RSA";
    if (ok && claude_crypto.EVP_PKEY_get_bits(k->pkey) < RSA_MIN_BITS) {
      lua_pushfstring(L, "%s needs an RSA key of at least %d bits", a->name, RSA_MIN_BITS);
      return 1;
    }
    break;
  case FAM_ECDSA:
    ok = k->kind == CLAUDE_KEY_EC && strcmp(k->crv, a->crv) == 0;
    need = a->bits == 256 ? "an EC P-256" : a->bits == 384 ? "an EC P-384" : "an EC P-521";
    break;
  default:
    ok = k->kind == CLAUDE_KEY_OKP && (a->crv == NULL || strcmp(k->crv, a->crv) == 0);
    need = a->crv != NULL ? "an OKP Ed25519" : "an OKP (Ed25519 or Ed448)";
  }
  if (ok) return 0;
  /* every kty reads with "an": an RSA, an EC, an OKP, an oct */
  lua_pushfstring(L, "%s needs %s key, not an %s%s%s key", a->name, need, claude_key_kty(k),
                  k->crv != NULL ? " " : "", k->crv != NULL ? k->crv : "");
  return 1;
}

/* Sets up ctx to sign or verify with k and a (PSS: its padding and salt). */
static int digest_init(EVP_MD_CTX *ctx, const claude_key *k, const jws_alg *a, int signing) {
  EVP_PKEY_CTX *pctx = NULL;
  const EVP_MD *md = a->family == FAM_EDDSA ? NULL : digest_of(a);
  int ok = signing ? claude_crypto.EVP_DigestSignInit(ctx, &pctx, md, NULL, k->pkey)
                   : claude_crypto.EVP_DigestVerifyInit(ctx, &pctx, md, NULL, k->pkey);
  if (ok != 1) return 0;
  if (a->family == FAM_PSS) {
    /* RFC 7518 3.5: MGF1 with the same hash (OpenSSL's default), a salt as
     * long as the hash, both when signing and when verifying */
    return claude_crypto.EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
           claude_crypto.EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
  }
  return 1;
}

/* ECDSA's DER signature -> r || s, each `width` bytes; 0 on failure. */
static int der_to_raw(const unsigned char *der, size_t len, unsigned char *out, size_t width) {
  const unsigned char *p = der;
  const BIGNUM *r, *s;
  ECDSA_SIG *sig = claude_crypto.d2i_ECDSA_SIG(NULL, &p, (long)len);
  int ok;
  if (sig == NULL) return 0;
  claude_crypto.ECDSA_SIG_get0(sig, &r, &s);
  ok = claude_crypto.BN_bn2binpad(r, out, (int)width) == (int)width &&
       claude_crypto.BN_bn2binpad(s, out + width, (int)width) == (int)width;
  claude_crypto.ECDSA_SIG_free(sig);
  return ok;
}

/* r || s -> DER in out (room for `cap` bytes): its length, or 0. */
static size_t raw_to_der(const unsigned char *raw, size_t width, unsigned char *out, size_t cap) {
  ECDSA_SIG *sig = claude_crypto.ECDSA_SIG_new();
  BIGNUM *r, *s;
  unsigned char *p = out;
  int len;
  if (sig == NULL) return 0;
  r = claude_crypto.BN_bin2bn(raw, (int)width, NULL);
  s = claude_crypto.BN_bin2bn(raw + width, (int)width, NULL);
  if (r == NULL || s == NULL || claude_crypto.ECDSA_SIG_set0(sig, r, s) != 1) {
    claude_crypto.BN_free(r);
    claude_crypto.BN_free(s);
    claude_crypto.ECDSA_SIG_free(sig);
    return 0;
  }
  len = claude_crypto.i2d_ECDSA_SIG(sig, NULL);
  if (len > 0 && (size_t)len <= cap) len = claude_crypto.i2d_ECDSA_SIG(sig, &p);
  claude_crypto.ECDSA_SIG_free(sig);
  return len > 0 && (size_t)len <= cap ? (size_t)len : 0;
}

/* The signature of in with k under a, into sig (SIG_MAX bytes): its length,
 * or 0 when libcrypto failed. */
static size_t sign(const claude_key *k, const jws_alg *a, const unsigned char *in, size_t n,
                   unsigned char *sig) {
  unsigned char der[SIG_MAX];
  size_t len = 0;
  EVP_MD_CTX *ctx;
  int ok;
  if (a->family == FAM_HMAC) {
    unsigned int mdlen = 0;
    if (claude_crypto.HMAC(digest_of(a), k->secret, (int)k->secret_len, in, n, sig, &mdlen) ==
        NULL) {
      return 0;
    }
    return mdlen;
  }
  ctx = claude_crypto.EVP_MD_CTX_new();
  if (ctx == NULL) return 0;
  ok = digest_init(ctx, k, a, 1) && claude_crypto.EVP_DigestSign(ctx, NULL, &len, in, n) == 1 &&
       len <= SIG_MAX &&
       claude_crypto.EVP_DigestSign(ctx, a->family == FAM_ECDSA ? der : sig, &len, in, n) == 1;
  claude_crypto.EVP_MD_CTX_free(ctx);
  if (!ok) return 0;
  if (a->family == FAM_ECDSA) {
    if (!der_to_raw(der, len, sig, a->width)) return 0;
    len = 2 * a->width;
  }
  return len;
}

/* Whether sig is in's signature with k under a: 1, 0, or -1 when libcrypto
 * failed (rather than the signature). */
static int verify(const claude_key *k, const jws_alg *a, const unsigned char *in, size_t n,
                  const unsigned char *sig, size_t siglen) {
  unsigned char der[SIG_MAX];
  EVP_MD_CTX *ctx;
  int ok;
  if (a->family == FAM_HMAC) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (claude_crypto.HMAC(digest_of(a), k->secret, (int)k->secret_len, in, n, mac, &maclen) ==
        NULL) {
      return -1;
    }
    /* the length is public; the bytes are compared in constant time */
    return siglen == maclen && claude_crypto.CRYPTO_memcmp(mac, sig, maclen) == 0;
  }
  if (a->family == FAM_ECDSA) {
    /* exactly r || s: DER or any other length is not a JWS signature */
    if (siglen != 2 * a->width) return 0;
    siglen = raw_to_der(sig, a->width, der, sizeof der);
    if (siglen == 0) return -1;
    sig = der;
  }
  ctx = claude_crypto.EVP_MD_CTX_new();
  if (ctx == NULL) return -1;
  if (!digest_init(ctx, k, a, 0)) {
    claude_crypto.EVP_MD_CTX_free(ctx);
    return -1;
  }
  ok = claude_crypto.EVP_DigestVerify(ctx, sig, siglen, in, n);
  claude_crypto.EVP_MD_CTX_free(ctx);
  return ok == 1 ? 1 : 0; /* 0 and negative: the signature is not good */
}

/* When algorithm `a` (NULL: unknown) cannot be used with key `k`, pushes
 * false and the reason and returns 2; else returns 0. For verify and supports,
 * whose algorithm comes from a token. */
static int push_unfit(lua_State *L, const claude_key *k, const jws_alg *a) {
  if (a == NULL) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "unsupported algorithm");
    return 2;
  }
  if (mismatch(L, k, a)) { /* it pushed the reason */
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
  }
  return 0;
}

/* key:sign(alg, input) -> signature (binary) | nil, message, "crypto".
 * Raises for an unknown algorithm, one the key cannot serve, or a public
 * key. */
static int key_sign(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  const jws_alg *a = check_alg(L, 2);
  size_t n, len;
  const char *in = luaL_checklstring(L, 3, &n);
  unsigned char sig[SIG_MAX];
  if (a == NULL) return luaL_argerror(L, 2, "unknown JWS algorithm");
  if (mismatch(L, k, a)) return luaL_argerror(L, 2, lua_tostring(L, -1));
  if (!k->has_private) return luaL_argerror(L, 1, "signing needs a private key");
  claude_crypto.ERR_clear_error();
  len = sign(k, a, (const unsigned char *)in, n, sig);
  if (len == 0) return claude_crypto_fail(L, "signing failed", "crypto");
  lua_pushlstring(L, (const char *)sig, len);
  return 1;
}

/* key:verify(alg, input, signature) -> true | false, reason. False for an
 * unknown algorithm, one the key cannot serve and a signature that does not
 * match: all of them come from the token. */
static int key_verify(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  const jws_alg *a = check_alg(L, 2);
  size_t n, siglen;
  const char *in = luaL_checklstring(L, 3, &n);
  const char *sig = luaL_checklstring(L, 4, &siglen);
  int ok;
  lua_settop(L, 4);
  if ((ok = push_unfit(L, k, a)) != 0) return ok;
  claude_crypto.ERR_clear_error();
  ok = verify(k, a, (const unsigned char *)in, n, (const unsigned char *)sig, siglen);
  claude_crypto.ERR_clear_error(); /* a bad signature leaves its reasons */
  lua_pushboolean(L, ok == 1);
  if (ok == 1) return 1;
  if (ok < 0) {
    lua_pushliteral(L, "the signature could not be checked");
  } else {
    lua_pushliteral(L, "the signature does not match");
  }
  return 2;
}

/* key:supports(alg) -> true | false, reason */
static int key_supports(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  const jws_alg *a = check_alg(L, 2);
  int nret;
  lua_settop(L, 2);
  if ((nret = push_unfit(L, k, a)) != 0) return nret;
  lua_pushboolean(L, 1);
  return 1;
}

/* key:algorithms() -> the list of algorithms the key serves, in the order
 * of RFC 7518 */
static int key_algorithms(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  size_t i;
  int n = 0;
  lua_newtable(L);
  for (i = 0; i < NALGS; i++) {
    if (mismatch(L, k, &algs[i])) {
      lua_pop(L, 1);
    } else {
      lua_pushstring(L, algs[i].name);
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;
}

static const luaL_Reg jws_methods[] = {{"sign", key_sign},
                                       {"verify", key_verify},
                                       {"supports", key_supports},
                                       {"algorithms", key_algorithms},
                                       {NULL, NULL}};

/* Adds the signature methods to claude.core.Key (claude_open_key made it). */
void claude_open_jws(lua_State *L) {
  claude_key_methods(L, jws_methods);
}
