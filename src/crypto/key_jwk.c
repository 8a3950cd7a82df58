/*
 * key_jwk.c -- claude.core.Key from and to JSON Web Keys: RSA (RFC 7518
 * 6.3), EC P-256/P-384/P-521 (6.2), OKP Ed25519/Ed448 (RFC 8037) and oct
 * (6.4). Members are base64url without padding, decoded strictly. An
 * imported private key is checked against its public half, so that a key
 * whose halves disagree is refused here rather than making signatures
 * nobody can verify. Messages name members, never their values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"

#define MEMBER_MAX 8192      /* base64url characters of one member (16384-bit RSA: 2731) */
#define RSA_N_MAX 2048       /* bytes: 16384 bits, as key.c takes */
#define RSA_E_MAX 8          /* bytes: a larger public exponent only slows verification */
#define SECRET_MAX (1 << 20) /* bytes of an oct key, as key.c takes */
#define EC_WIDTH_MAX 66
#define OKP_MAX 57

/* The decoding of one JWK: the table at index 1, members decoded into
 * userdata on the Lua stack (kept alive until the import returns), and the
 * message of the first failure. */
typedef struct jwk_reader {
  lua_State *L;
  char err[200];
  unsigned char *wipe[8]; /* decoded private members, wiped before returning */
  size_t wipe_len[8];
  int nwipe;
} jwk_reader;

/* Member `name`, decoded: 1 with *p, *n set; 0 when absent; -1 (err set)
 * when it is not a base64url string or its length is not `exact` (when
 * nonzero). `secret`: wiped at the end. */
static int member(jwk_reader *r, const char *name, size_t exact, int secret,
                  const unsigned char **p, size_t *n) {
  lua_State *L = r->L;
  size_t len, outn = 0, at = 0;
  const char *s, *why = NULL;
  unsigned char *buf;
  *p = NULL;
  *n = 0;
  if (lua_getfield(L, 1, name) == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (lua_type(L, -1) != LUA_TSTRING) {
    snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' is not a string", name);
    lua_pop(L, 1);
    return -1;
  }
  s = lua_tolstring(L, -1, &len);
  if (len > MEMBER_MAX) {
    snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' is too long", name);
    lua_pop(L, 1);
    return -1;
  }
  buf = (unsigned char *)lua_newuserdatauv(L, len / 4 * 3 + 3, 0);
  if (claude_b64url_decode(s, len, buf, &outn, &why, &at) != 0) {
    snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' is not base64url (%s)", name, why);
    lua_pop(L, 2);
    return -1;
  }
  lua_remove(L, -2); /* the text; the decoded bytes stay on the stack */
  if (secret && r->nwipe < 8) {
    r->wipe[r->nwipe] = buf;
    r->wipe_len[r->nwipe++] = outn;
  }
  if ((exact != 0 && outn != exact) || outn == 0) {
    if (exact != 0) {
      snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' must be %d bytes, not %d", name,
               (int)exact, (int)outn);
    } else {
      snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' is empty", name);
    }
    return -1;
  }
  *p = buf;
  *n = outn;
  return 1;
}

/* A required member: 1, or -1 with err set. */
static int required(jwk_reader *r, const char *name, size_t exact, int secret,
                    const unsigned char **p, size_t *n) {
  int got = member(r, name, exact, secret, p, n);
  if (got == 0) snprintf(r->err, sizeof r->err, "invalid JWK: member '%s' is missing", name);
  return got == 0 ? -1 : got;
}

/* Builds a key of `type` from params with EVP_PKEY_fromdata; NULL on
 * failure. The params and the context are freed here. */
static EVP_PKEY *fromdata(const char *type, OSSL_PARAM_BLD *bld, int selection) {
  OSSL_PARAM *params = claude_crypto.OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *ctx = NULL;
  EVP_PKEY *pkey = NULL;
  if (params != NULL) ctx = claude_crypto.EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
  if (ctx != NULL && claude_crypto.EVP_PKEY_fromdata_init(ctx) == 1) {
    if (claude_crypto.EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1) pkey = NULL;
  }
  if (ctx != NULL) claude_crypto.EVP_PKEY_CTX_free(ctx);
  if (params != NULL) claude_crypto.OSSL_PARAM_free(params);
  return pkey;
}

/* Whether a private key's halves agree (RSA: n = p q and the exponents;
 * EC: the point is d times the generator). */
static int pairwise_ok(EVP_PKEY *pkey) {
  EVP_PKEY_CTX *ctx = claude_crypto.EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
  int ok = ctx != NULL && claude_crypto.EVP_PKEY_pairwise_check(ctx) == 1;
  if (ctx != NULL) claude_crypto.EVP_PKEY_CTX_free(ctx);
  return ok;
}

/* The string member `crv` (left on the stack, so that it stays alive), or
 * NULL with err set. A name with a NUL inside is no curve's. */
static const char *crv_of(jwk_reader *r) {
  size_t len;
  const char *crv;
  if (lua_getfield(r->L, 1, "crv") != LUA_TSTRING) {
    snprintf(r->err, sizeof r->err, "invalid JWK: 'crv' is missing or not a string");
    return NULL;
  }
  crv = lua_tolstring(r->L, -1, &len);
  return strlen(crv) == len ? crv : "";
}

static EVP_PKEY *rsa_from_jwk(jwk_reader *r) {
  static const char *const crt_members[] = {"p", "q", "dp", "dq", "qi"};
  static const char *const crt_params[] = {
    OSSL_PKEY_PARAM_RSA_FACTOR1, OSSL_PKEY_PARAM_RSA_FACTOR2, OSSL_PKEY_PARAM_RSA_EXPONENT1,
    OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
  const unsigned char *n, *e, *d, *crt[5];
  size_t nlen, elen, dlen, crtlen[5];
  BIGNUM *bn[8] = {NULL};
  int i, ncrt = 0, nbn = 0, ok = 1;
  OSSL_PARAM_BLD *bld;
  EVP_PKEY *pkey = NULL;
  if (required(r, "n", 0, 0, &n, &nlen) < 0 || required(r, "e", 0, 0, &e, &elen) < 0) return NULL;
  if (member(r, "d", 0, 1, &d, &dlen) < 0) return NULL;
  for (i = 0; i < 5; i++) {
    int got = member(r, crt_members[i], 0, 1, &crt[i], &crtlen[i]);
    if (got < 0) return NULL;
    ncrt += got;
  }
  if (lua_getfield(r->L, 1, "oth") != LUA_TNIL) {
    snprintf(r->err, sizeof r->err, "unsupported JWK: RSA with more than two primes ('oth')");
    return NULL;
  }
  if (nlen > RSA_N_MAX || elen > RSA_E_MAX) {
    snprintf(r->err, sizeof r->err, "unsupported JWK: %s",
             nlen > RSA_N_MAX ? "RSA keys over 16384 bits" : "an RSA exponent over 64 bits");
    return NULL;
  }
  if ((ncrt != 0 && ncrt != 5) || (ncrt != 0 && d == NULL)) {
    snprintf(r->err, sizeof r->err,
             "invalid JWK: an RSA private key has 'd' and either all or none of "
             "'p', 'q', 'dp', 'dq', 'qi'");
    return NULL;
  }
  bld = claude_crypto.OSSL_PARAM_BLD_new();
  if (bld == NULL) return NULL;
  ok = (bn[nbn++] = claude_crypto.BN_bin2bn(n, (int)nlen, NULL)) != NULL &&
       claude_crypto.OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn[nbn - 1]) == 1 &&
       (bn[nbn++] = claude_crypto.BN_bin2bn(e, (int)elen, NULL)) != NULL &&
       claude_crypto.OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn[nbn - 1]) == 1;
  if (ok && d != NULL) {
    ok = (bn[nbn++] = claude_crypto.BN_bin2bn(d, (int)dlen, NULL)) != NULL &&
         claude_crypto.OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, bn[nbn - 1]) == 1;
  }
  for (i = 0; ok && ncrt == 5 && i < 5; i++) {
    ok = (bn[nbn++] = claude_crypto.BN_bin2bn(crt[i], (int)crtlen[i], NULL)) != NULL &&
         claude_crypto.OSSL_PARAM_BLD_push_BN(bld, crt_params[i], bn[nbn - 1]) == 1;
  }
  if (ok) pkey = fromdata("RSA", bld, d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY);
  claude_crypto.OSSL_PARAM_BLD_free(bld);
  for (i = 0; i < nbn; i++) claude_crypto.BN_clear_free(bn[i]);
  if (pkey == NULL) {
    snprintf(r->err, sizeof r->err, "invalid JWK: not a usable RSA key");
  } else if (ncrt == 5 && !pairwise_ok(pkey)) {
    claude_crypto.EVP_PKEY_free(pkey);
    pkey = NULL;
    snprintf(r->err, sizeof r->err, "invalid JWK: the RSA private members do not match 'n'");
  }
  return pkey;
}

static EVP_PKEY *ec_from_jwk(jwk_reader *r) {
  const char *crv;
  const unsigned char *x, *y, *d;
  size_t xlen, ylen, dlen, width = 0;
  const char *group = NULL;
  const claude_curve *curve;
  unsigned char pub[1 + 2 * EC_WIDTH_MAX];
  OSSL_PARAM_BLD *bld;
  BIGNUM *priv = NULL;
  EVP_PKEY *pkey = NULL;
  int ok;
  if ((crv = crv_of(r)) == NULL) return NULL;
  if ((curve = claude_curve_by_jwk(crv)) != NULL) {
    group = curve->group;
    width = curve->width;
  }
  if (group == NULL) {
    snprintf(r->err, sizeof r->err, "unsupported JWK: an EC key's 'crv' must be P-256, P-384 "
                                    "or P-521");
    return NULL;
  }
  if (required(r, "x", width, 0, &x, &xlen) < 0 || required(r, "y", width, 0, &y, &ylen) < 0 ||
      member(r, "d", width, 1, &d, &dlen) < 0) {
    return NULL;
  }
  pub[0] = 4; /* uncompressed point */
  memcpy(pub + 1, x, width);
  memcpy(pub + 1 + width, y, width);
  bld = claude_crypto.OSSL_PARAM_BLD_new();
  if (bld == NULL) return NULL;
  ok = claude_crypto.OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) ==
         1 &&
       claude_crypto.OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub,
                                                     1 + 2 * width) == 1;
  if (ok && d != NULL) {
    ok = (priv = claude_crypto.BN_bin2bn(d, (int)dlen, NULL)) != NULL &&
         claude_crypto.OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, priv) == 1;
  }
  /* the point is checked to be on the curve as it is read */
  if (ok) pkey = fromdata("EC", bld, d != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY);
  claude_crypto.OSSL_PARAM_BLD_free(bld);
  if (priv != NULL) claude_crypto.BN_clear_free(priv);
  if (pkey == NULL) {
    snprintf(r->err, sizeof r->err, "invalid JWK: 'x' and 'y' are not a point of %s", crv);
  } else if (d != NULL && !pairwise_ok(pkey)) {
    claude_crypto.EVP_PKEY_free(pkey);
    pkey = NULL;
    snprintf(r->err, sizeof r->err, "invalid JWK: 'd' does not match 'x' and 'y'");
  }
  return pkey;
}

static EVP_PKEY *okp_from_jwk(jwk_reader *r) {
  const char *crv;
  const unsigned char *x, *d;
  size_t xlen, dlen, width = 0, publen = OKP_MAX;
  unsigned char pub[OKP_MAX];
  EVP_PKEY *pkey;
  int type = 0;
  if ((crv = crv_of(r)) == NULL) return NULL;
  if (strcmp(crv, "Ed25519") == 0) {
    type = EVP_PKEY_ED25519;
    width = 32;
  } else if (strcmp(crv, "Ed448") == 0) {
    type = EVP_PKEY_ED448;
    width = 57;
  }
  if (type == 0) {
    snprintf(r->err, sizeof r->err,
             "unsupported JWK: an OKP key's 'crv' must be Ed25519 or Ed448 (signature curves)");
    return NULL;
  }
  if (required(r, "x", width, 0, &x, &xlen) < 0 || member(r, "d", width, 1, &d, &dlen) < 0) {
    return NULL;
  }
  if (d == NULL) {
    pkey = claude_crypto.EVP_PKEY_new_raw_public_key(type, NULL, x, xlen);
    if (pkey == NULL) snprintf(r->err, sizeof r->err, "invalid JWK: not a usable %s key", crv);
    return pkey;
  }
  pkey = claude_crypto.EVP_PKEY_new_raw_private_key(type, NULL, d, dlen);
  if (pkey == NULL) {
    snprintf(r->err, sizeof r->err, "invalid JWK: not a usable %s key", crv);
    return NULL;
  }
  if (claude_crypto.EVP_PKEY_get_raw_public_key(pkey, pub, &publen) != 1 || publen != xlen ||
      memcmp(pub, x, xlen) != 0) {
    claude_crypto.EVP_PKEY_free(pkey);
    snprintf(r->err, sizeof r->err, "invalid JWK: 'd' does not match 'x'");
    return NULL;
  }
  return pkey;
}

/* core.key_from_jwk(t) -> Key | nil, message, "key" | nil, message,
 * "ENOSYS". Members other than the key's own (kid, alg, use, key_ops, ...)
 * are the caller's business. */
static int key_from_jwk(lua_State *L) {
  jwk_reader r;
  const char *kty;
  EVP_PKEY *pkey = NULL;
  claude_key *k;
  int nret, i, failed = 0;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  memset(&r, 0, sizeof r);
  r.L = L;
  k = claude_key_new(L); /* at index 2 */
  if (lua_getfield(L, 1, "kty") == LUA_TSTRING) {
    size_t len;
    kty = lua_tolstring(L, -1, &len);
    if (strlen(kty) != len) kty = ""; /* no type has a NUL in its name */
  } else {
    kty = NULL;
  }
  lua_pop(L, 1); /* kty stays in the table */
  claude_crypto.ERR_clear_error();
  if (kty == NULL) {
    snprintf(r.err, sizeof r.err, "invalid JWK: 'kty' is missing or not a string");
    failed = 1;
  } else if (strcmp(kty, "RSA") == 0) {
    failed = (pkey = rsa_from_jwk(&r)) == NULL;
  } else if (strcmp(kty, "EC") == 0) {
    failed = (pkey = ec_from_jwk(&r)) == NULL;
  } else if (strcmp(kty, "OKP") == 0) {
    failed = (pkey = okp_from_jwk(&r)) == NULL;
  } else if (strcmp(kty, "oct") == 0) {
    const unsigned char *s;
    size_t n;
    failed = required(&r, "k", 0, 1, &s, &n) < 0;
    if (!failed && n > SECRET_MAX) {
      snprintf(r.err, sizeof r.err, "unsupported JWK: an oct key over 1 MiB");
      failed = 1;
    }
    if (!failed) {
      k->secret = (unsigned char *)malloc(n);
      if (k->secret != NULL) {
        memcpy(k->secret, s, n);
        k->secret_len = n;
        k->has_private = 1;
        k->kind = CLAUDE_KEY_OCT;
      }
    }
  } else {
    snprintf(r.err, sizeof r.err, "unsupported JWK: 'kty' must be RSA, EC, OKP or oct");
    failed = 1;
  }
  for (i = 0; i < r.nwipe; i++) claude_crypto.OPENSSL_cleanse(r.wipe[i], r.wipe_len[i]);
  claude_crypto.ERR_clear_error();
  lua_settop(L, 2);
  if (failed) {
    luaL_pushfail(L);
    lua_pushstring(L, r.err[0] != '\0' ? r.err : "invalid JWK");
    lua_pushliteral(L, "key");
    return 3;
  }
  if (k->kind == CLAUDE_KEY_OCT) return 1;
  if (k->kind == 0 && pkey == NULL) return luaL_error(L, "out of memory");
  return claude_key_adopt(L, k, pkey) == 0 ? 1 : 3;
}

/* Sets t[field] (t on top of the stack) to `len` bytes in base64url. */
static void set_b64(lua_State *L, const char *field, const unsigned char *p, size_t len) {
  luaL_Buffer b;
  size_t n = claude_b64url_encoded_len(len);
  claude_b64url_encode(p, len, luaL_buffinitsize(L, &b, n));
  luaL_pushresultsize(&b, n);
  lua_setfield(L, -2, field);
}

/* Sets t[field] to the BIGNUM parameter `param` of pkey, in `width` bytes
 * (0: as few as it takes); nothing when pkey has no such parameter. */
static void set_bn(lua_State *L, EVP_PKEY *pkey, const char *param, const char *field,
                   size_t width) {
  unsigned char bytes[RSA_N_MAX];
  BIGNUM *bn = NULL;
  int len;
  if (claude_crypto.EVP_PKEY_get_bn_param(pkey, param, &bn) != 1) {
    claude_crypto.ERR_clear_error();
    return;
  }
  if (width == 0) width = ((size_t)claude_crypto.BN_num_bits(bn) + 7) / 8;
  if (width == 0) width = 1; /* zero is one byte */
  len = width <= sizeof bytes ? claude_crypto.BN_bn2binpad(bn, bytes, (int)width) : -1;
  claude_crypto.BN_clear_free(bn);
  if (len < 0) luaL_error(L, "a key parameter is too large to export");
  set_b64(L, field, bytes, (size_t)len);
  claude_crypto.OPENSSL_cleanse(bytes, (size_t)len);
}

/* key:jwk([private]) -> the key as a JWK table (kty, crv, x, y, n, e; with
 * `private` also d, p, q, dp, dq, qi or k). Raises for `private` on a
 * public key and for an oct key without it. */
static int key_to_jwk(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  int private = lua_toboolean(L, 2);
  size_t width = 0;
  if (private && !k->has_private) return luaL_error(L, "this key has no private half");
  if (k->kind == CLAUDE_KEY_OCT && !private) {
    return luaL_error(L, "a symmetric (oct) key has no public form (jwk(true) exports the secret)");
  }
  lua_createtable(L, 0, 8);
  lua_pushstring(L, claude_key_kty(k));
  lua_setfield(L, -2, "kty");
  if (k->crv != NULL) {
    lua_pushstring(L, k->crv);
    lua_setfield(L, -2, "crv");
  }
  switch (k->kind) {
  case CLAUDE_KEY_RSA:
    set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_N, "n", 0);
    set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_E, "e", 0);
    if (private) {
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_D, "d", 0);
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_FACTOR1, "p", 0);
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_FACTOR2, "q", 0);
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1, "dp", 0);
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2, "dq", 0);
      set_bn(L, k->pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, "qi", 0);
    }
    break;
  case CLAUDE_KEY_EC:
    width = claude_curve_by_jwk(k->crv)->width; /* an EC key's crv is one of ours */
    set_bn(L, k->pkey, OSSL_PKEY_PARAM_EC_PUB_X, "x", width);
    set_bn(L, k->pkey, OSSL_PKEY_PARAM_EC_PUB_Y, "y", width);
    if (private) set_bn(L, k->pkey, OSSL_PKEY_PARAM_PRIV_KEY, "d", width);
    break;
  case CLAUDE_KEY_OKP: {
    unsigned char raw[OKP_MAX];
    size_t len = sizeof raw;
    if (claude_crypto.EVP_PKEY_get_raw_public_key(k->pkey, raw, &len) != 1) {
      return claude_crypto_fail(L, "the key could not be exported", "crypto");
    }
    set_b64(L, "x", raw, len);
    len = sizeof raw;
    if (private) {
      if (claude_crypto.EVP_PKEY_get_raw_private_key(k->pkey, raw, &len) != 1) {
        return claude_crypto_fail(L, "the key could not be exported", "crypto");
      }
      set_b64(L, "d", raw, len);
      claude_crypto.OPENSSL_cleanse(raw, len);
    }
    break;
  }
  default:
    set_b64(L, "k", k->secret, k->secret_len);
  }
  return 1;
}

static const luaL_Reg jwk_methods[] = {{"jwk", key_to_jwk}, {NULL, NULL}};
static const luaL_Reg jwk_functions[] = {{"key_from_jwk", key_from_jwk}, {NULL, NULL}};

/* Adds key:jwk to claude.core.Key (claude_open_key made it) and
 * key_from_jwk to the module table on top of the stack. */
void claude_open_key_jwk(lua_State *L) {
  claude_key_methods(L, jwk_methods);
  luaL_setfuncs(L, jwk_functions, 0);
}
