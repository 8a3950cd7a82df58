/*
 * key.c -- claude.core.Key: one key for JWS signatures. An RSA, EC (P-256,
 * P-384, P-521) or OKP (Ed25519, Ed448) key is an EVP_PKEY; an "oct" key
 * (HMAC) is its secret's bytes, wiped when freed. Keys come from PEM or DER
 * (key_from_pem), JWK (key_jwk.c), a secret (key_from_secret) or are
 * generated (key_generate); they leave as JWK or PEM. Signing is jws.c.
 *
 * A key is created closed, then acquires what it holds; `close` (also
 * `__close` and `__gc`) frees it, idempotently. A Key exists only once
 * libcrypto is loaded, so its methods need not load it again.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"

#define SECRET_MAX (1 << 20) /* bytes of an HMAC key */
#define RSA_GEN_MIN 2048
#define RSA_GEN_MAX 8192
#define RSA_MAX 16384 /* bits of an RSA key we take at all (jws.c's buffers) */

static const claude_curve curves[] = {
  {"P-256", "prime256v1", 32}, {"P-384", "secp384r1", 48}, {"P-521", "secp521r1", 66}};

const claude_curve *claude_curve_by_jwk(const char *crv) {
  size_t i;
  for (i = 0; i < sizeof curves / sizeof curves[0]; i++) {
    if (strcmp(crv, curves[i].jwk) == 0) return &curves[i];
  }
  return NULL;
}

const claude_curve *claude_curve_by_group(const char *group) {
  size_t i;
  for (i = 0; i < sizeof curves / sizeof curves[0]; i++) {
    if (strcmp(group, curves[i].group) == 0) return &curves[i];
  }
  return NULL;
}

const char *claude_key_kty(const claude_key *k) {
  switch (k->kind) {
  case CLAUDE_KEY_RSA: return "RSA";
  case CLAUDE_KEY_EC: return "EC";
  case CLAUDE_KEY_OKP: return "OKP";
  case CLAUDE_KEY_OCT: return "oct";
  default: return "closed";
  }
}

claude_key *claude_key_new(lua_State *L) {
  claude_key *k = (claude_key *)lua_newuserdatauv(L, sizeof *k, 0);
  memset(k, 0, sizeof *k);
  luaL_setmetatable(L, CLAUDE_KEY_MT);
  return k;
}

static void key_free(claude_key *k) {
  if (k->pkey != NULL) claude_crypto.EVP_PKEY_free(k->pkey);
  if (k->secret != NULL) {
    claude_crypto.OPENSSL_cleanse(k->secret, k->secret_len);
    free(k->secret);
  }
  memset(k, 0, sizeof *k);
}

claude_key *claude_key_check(lua_State *L, int idx) {
  claude_key *k = (claude_key *)luaL_checkudata(L, idx, CLAUDE_KEY_MT);
  if (k->kind == 0) luaL_error(L, "attempt to use a closed key");
  return k;
}

/* Whether the BIGNUM parameter `name` is in pkey (the private exponent or
 * scalar tells a private key from a public one). */
static int has_bn_param(EVP_PKEY *pkey, const char *name) {
  BIGNUM *bn = NULL;
  if (claude_crypto.EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return 0;
  claude_crypto.BN_clear_free(bn);
  return 1;
}

int claude_key_adopt(lua_State *L, claude_key *k, EVP_PKEY *pkey) {
  char group[64];
  size_t len = 0;
  const char *why = NULL;
  switch (claude_crypto.EVP_PKEY_get_base_id(pkey)) {
  case EVP_PKEY_RSA:
    k->kind = CLAUDE_KEY_RSA;
    if (claude_crypto.EVP_PKEY_get_bits(pkey) > RSA_MAX) why = "RSA keys over 16384 bits";
    k->has_private = has_bn_param(pkey, OSSL_PKEY_PARAM_RSA_D);
    break;
  case EVP_PKEY_EC:
    k->kind = CLAUDE_KEY_EC;
    why = "this elliptic curve (JWS uses P-256, P-384 and P-521)";
    if (claude_crypto.EVP_PKEY_get_group_name(pkey, group, sizeof group, &len) == 1) {
      const claude_curve *c = claude_curve_by_group(group);
      if (c != NULL) {
        k->crv = c->jwk;
        why = NULL;
      }
    }
    k->has_private = has_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY);
    break;
  case EVP_PKEY_ED25519:
  case EVP_PKEY_ED448:
    k->kind = CLAUDE_KEY_OKP;
    k->crv = claude_crypto.EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519 ? "Ed25519" : "Ed448";
    k->has_private = claude_crypto.EVP_PKEY_get_raw_private_key(pkey, NULL, &len) == 1;
    break;
  default:
    why = "this key type (JWS keys are RSA, EC P-256/P-384/P-521, Ed25519 and Ed448)";
  }
  claude_crypto.ERR_clear_error(); /* the probes above leave errors behind */
  if (why != NULL) {
    claude_crypto.EVP_PKEY_free(pkey);
    memset(k, 0, sizeof *k);
    luaL_pushfail(L);
    lua_pushfstring(L, "unsupported key: %s", why);
    lua_pushliteral(L, "key");
    return 3;
  }
  k->pkey = pkey;
  return 0;
}

/* The public key of the first certificate in PEM text, or NULL. The
 * certificate itself is not checked (no chain, no dates): it only carries
 * the key, as identity providers often publish it. */
static EVP_PKEY *certificate_key(const char *text, size_t len) {
  BIO *bio = claude_crypto.BIO_new_mem_buf(text, len > INT_MAX ? INT_MAX : (int)len);
  X509 *cert = NULL;
  EVP_PKEY *pkey = NULL;
  if (bio != NULL) cert = claude_crypto.PEM_read_bio_X509(bio, NULL, NULL, NULL);
  if (cert != NULL) pkey = claude_crypto.X509_get_pubkey(cert);
  if (cert != NULL) claude_crypto.X509_free(cert);
  if (bio != NULL) claude_crypto.BIO_free(bio);
  return pkey;
}

/* core.key_from_pem(text [, passphrase]) -> Key | nil, message, "key" |
 * nil, message, "ENOSYS". PEM (any label OpenSSL decodes: PRIVATE KEY,
 * PUBLIC KEY, RSA PRIVATE/PUBLIC KEY, EC PRIVATE KEY, ENCRYPTED PRIVATE
 * KEY with the passphrase, and CERTIFICATE for its public key) or the
 * same key structures in DER. */
static int l_key_from_pem(lua_State *L) {
  size_t len, plen = 0;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *pass = luaL_optlstring(L, 2, NULL, &plen);
  const unsigned char *data = (const unsigned char *)text;
  OSSL_DECODER_CTX *dctx;
  EVP_PKEY *pkey = NULL;
  claude_key *k;
  int nret, ok;
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  k = claude_key_new(L);
  claude_crypto.ERR_clear_error();
  if (strstr(text, "-----BEGIN CERTIFICATE-----") != NULL) {
    pkey = certificate_key(text, len);
    claude_crypto.ERR_clear_error();
    if (pkey == NULL) {
      luaL_pushfail(L);
      lua_pushliteral(L, "not a certificate with a public key");
      lua_pushliteral(L, "key");
      return 3;
    }
    return claude_key_adopt(L, k, pkey) == 0 ? 1 : 3;
  }
  dctx = claude_crypto.OSSL_DECODER_CTX_new_for_pkey(
    &pkey, strstr(text, "-----BEGIN ") != NULL ? "PEM" : "DER", NULL, NULL, 0, NULL, NULL);
  if (dctx == NULL) return claude_crypto_fail(L, "no key decoder", "key");
  /* without a passphrase an encrypted key fails; it is never asked for */
  ok = claude_crypto.OSSL_DECODER_CTX_set_passphrase(
         dctx, (const unsigned char *)(pass != NULL ? pass : ""), plen) == 1 &&
       claude_crypto.OSSL_DECODER_from_data(dctx, &data, &len) == 1 && pkey != NULL;
  claude_crypto.OSSL_DECODER_CTX_free(dctx);
  if (!ok) {
    if (pkey != NULL) claude_crypto.EVP_PKEY_free(pkey);
    claude_crypto.ERR_clear_error(); /* the decoders' reasons name the wrong decoders */
    luaL_pushfail(L);
    lua_pushstring(L, pass != NULL ? "not a key in PEM or DER, or a wrong passphrase"
                                   : "not a key in PEM or DER (or an encrypted one: "
                                     "give its passphrase)");
    lua_pushliteral(L, "key");
    return 3;
  }
  return claude_key_adopt(L, k, pkey) == 0 ? 1 : 3;
}

/* core.key_from_secret(bytes) -> Key (oct) | nil, message, "ENOSYS" */
static int l_key_from_secret(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  claude_key *k;
  int nret;
  luaL_argcheck(L, len > 0 && len <= SECRET_MAX, 1, "a secret of 1 byte to 1 MiB expected");
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  k = claude_key_new(L);
  k->secret = (unsigned char *)malloc(len);
  if (k->secret == NULL) return luaL_error(L, "out of memory");
  memcpy(k->secret, s, len);
  k->secret_len = len;
  k->has_private = 1;
  k->kind = CLAUDE_KEY_OCT;
  return 1;
}

/* core.key_generate("RSA", bits) | ("EC", "P-256"|"P-384"|"P-521") |
 * ("OKP", "Ed25519"|"Ed448") | ("oct", bytes) -> Key |
 * nil, message, "crypto" | nil, message, "ENOSYS" */
static int l_key_generate(lua_State *L) {
  static const char *const types[] = {"RSA", "EC", "OKP", "oct", NULL};
  int type = luaL_checkoption(L, 1, NULL, types), nret;
  const char *group = NULL;
  lua_Integer size = 0;
  claude_key *k;
  EVP_PKEY *pkey;
  if (type == 0 || type == 3) {
    size = luaL_checkinteger(L, 2);
    if (type == 0) {
      luaL_argcheck(L, size >= RSA_GEN_MIN && size <= RSA_GEN_MAX && size % 8 == 0, 2,
                    "RSA bits: a multiple of 8 from 2048 to 8192 expected");
    } else {
      luaL_argcheck(L, size >= 16 && size <= 1024, 2, "secret size: 16 to 1024 bytes expected");
    }
  } else if (type == 1) {
    const claude_curve *c = claude_curve_by_jwk(luaL_checkstring(L, 2));
    luaL_argcheck(L, c != NULL, 2, "curve: P-256, P-384 or P-521 expected");
    group = c->group;
  } else {
    static const char *const okp[] = {"Ed25519", "Ed448", NULL};
    group = luaL_checkoption(L, 2, NULL, okp) == 0 ? "ED25519" : "ED448";
  }
  if ((nret = claude_crypto_load(L)) != 0) return nret;
  k = claude_key_new(L);
  claude_crypto.ERR_clear_error();
  if (type == 3) {
    k->secret = (unsigned char *)malloc((size_t)size);
    if (k->secret == NULL) return luaL_error(L, "out of memory");
    k->secret_len = (size_t)size;
    k->kind = CLAUDE_KEY_OCT;
    k->has_private = 1;
    if (claude_crypto.RAND_bytes(k->secret, (int)size) != 1) {
      key_free(k);
      return claude_crypto_fail(L, "the random number generator failed", "crypto");
    }
    return 1;
  }
  if (type == 0) {
    pkey = claude_crypto.EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)size);
  } else if (type == 1) {
    pkey = claude_crypto.EVP_PKEY_Q_keygen(NULL, NULL, "EC", group);
  } else {
    pkey = claude_crypto.EVP_PKEY_Q_keygen(NULL, NULL, group);
  }
  if (pkey == NULL) return claude_crypto_fail(L, "key generation failed", "crypto");
  return claude_key_adopt(L, k, pkey) == 0 ? 1 : 3;
}

/* key:public() -> a new Key with the public half only (itself again when it
 * is public already; raises for an oct key) */
static int key_public(lua_State *L) {
  claude_key *k = claude_key_check(L, 1), *pub;
  unsigned char *der = NULL;
  const unsigned char *p;
  EVP_PKEY *pkey;
  int len;
  if (k->kind == CLAUDE_KEY_OCT) return luaL_error(L, "a symmetric (oct) key has no public half");
  if (!k->has_private) {
    lua_settop(L, 1);
    return 1;
  }
  pub = claude_key_new(L);
  claude_crypto.ERR_clear_error();
  len = claude_crypto.i2d_PUBKEY(k->pkey, &der);
  if (len <= 0) return claude_crypto_fail(L, "the public key could not be encoded", "crypto");
  p = der;
  pkey = claude_crypto.d2i_PUBKEY(NULL, &p, len);
  claude_crypto.CRYPTO_free(der, __FILE__, __LINE__);
  if (pkey == NULL) return claude_crypto_fail(L, "the public key could not be decoded", "crypto");
  return claude_key_adopt(L, pub, pkey) == 0 ? 1 : 3;
}

/* key:pem([private]) -> PEM text: SubjectPublicKeyInfo ("PUBLIC KEY"), or
 * with `private` PKCS#8 ("PRIVATE KEY", unencrypted) | nil, message,
 * "crypto". Raises for an oct key and for `private` on a public key. */
static int key_pem(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  int private = lua_toboolean(L, 2);
  OSSL_ENCODER_CTX *ectx;
  unsigned char *data = NULL;
  size_t len = 0;
  int ok;
  if (k->kind == CLAUDE_KEY_OCT) return luaL_error(L, "a symmetric (oct) key has no PEM form");
  if (private && !k->has_private) return luaL_error(L, "this key has no private half");
  claude_crypto.ERR_clear_error();
  ectx = claude_crypto.OSSL_ENCODER_CTX_new_for_pkey(
    k->pkey, private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, "PEM",
    private ? "PrivateKeyInfo" : "SubjectPublicKeyInfo", NULL);
  if (ectx == NULL) return claude_crypto_fail(L, "no key encoder", "crypto");
  ok = claude_crypto.OSSL_ENCODER_to_data(ectx, &data, &len) == 1;
  claude_crypto.OSSL_ENCODER_CTX_free(ectx);
  if (!ok) return claude_crypto_fail(L, "the key could not be encoded", "crypto");
  claude_crypto_push_owned(L, data, len, private);
  return 1;
}

/* key:info() -> { kty =, crv = (EC, OKP), bits =, private = boolean } */
static int key_info(lua_State *L) {
  claude_key *k = claude_key_check(L, 1);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, claude_key_kty(k));
  lua_setfield(L, -2, "kty");
  if (k->crv != NULL) {
    lua_pushstring(L, k->crv);
    lua_setfield(L, -2, "crv");
  }
  lua_pushinteger(L, k->kind == CLAUDE_KEY_OCT ? (lua_Integer)k->secret_len * 8
                                               : claude_crypto.EVP_PKEY_get_bits(k->pkey));
  lua_setfield(L, -2, "bits");
  lua_pushboolean(L, k->has_private);
  lua_setfield(L, -2, "private");
  return 1;
}

/* key:close(): frees the key material (idempotent; also __close, __gc) */
static int key_close(lua_State *L) {
  claude_key *k = (claude_key *)luaL_checkudata(L, 1, CLAUDE_KEY_MT);
  key_free(k);
  return 0;
}

/* Never the key material: its type, curve or size, and which half. */
static int key_tostring(lua_State *L) {
  claude_key *k = (claude_key *)luaL_checkudata(L, 1, CLAUDE_KEY_MT);
  if (k->kind == 0) {
    lua_pushliteral(L, "claude.core.Key (closed)");
  } else if (k->crv != NULL) {
    lua_pushfstring(L, "claude.core.Key (%s %s, %s)", claude_key_kty(k), k->crv,
                    k->has_private ? "private" : "public");
  } else if (k->kind == CLAUDE_KEY_OCT) {
    lua_pushfstring(L, "claude.core.Key (oct, %d bytes)", (int)k->secret_len);
  } else {
    lua_pushfstring(L, "claude.core.Key (RSA %d bits, %s)",
                    claude_crypto.EVP_PKEY_get_bits(k->pkey),
                    k->has_private ? "private" : "public");
  }
  return 1;
}

static const luaL_Reg key_meta[] = {{"__gc", key_close},
                                    {"__close", key_close},
                                    {"__tostring", key_tostring},
                                    {NULL, NULL}};

/* and those of jws.c and key_jwk.c (claude_key_methods) */
static const luaL_Reg key_methods[] = {{"pem", key_pem},
                                       {"public", key_public},
                                       {"info", key_info},
                                       {"close", key_close},
                                       {NULL, NULL}};

static const luaL_Reg key_functions[] = {{"key_from_pem", l_key_from_pem},
                                         {"key_from_secret", l_key_from_secret},
                                         {"key_generate", l_key_generate},
                                         {NULL, NULL}};

/* Makes the class claude.core.Key and adds the key functions to the module
 * table on top of the stack. */
void claude_open_key(lua_State *L) {
  claude_new_class(L, CLAUDE_KEY_MT, key_meta, key_methods);
  luaL_setfuncs(L, key_functions, 0);
}

void claude_key_methods(lua_State *L, const luaL_Reg *methods) {
  luaL_getmetatable(L, CLAUDE_KEY_MT);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
}
