/*
 * crypto.h -- libcrypto (OpenSSL 3) for the files that use it: crypto.c
 * (loading, random bytes, SHA-256), key.c and key_jwk.c (claude.core.Key),
 * jws.c (JWS signatures), and base64url (base64.c), which the key files
 * need for JWK members. Private to claude.core.
 */
#ifndef CLAUDE_CRYPTO_H
#define CLAUDE_CRYPTO_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/encoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "context.h"

/* Every libcrypto function claude.core calls, looked up on first use
 * (dynlib.h): the headers give the types, the table the addresses. */
#define CLAUDE_CRYPTO_FUNCTIONS(X)                                                           \
  X(BIO_free) X(BIO_new_mem_buf) X(BN_bin2bn) X(BN_bn2binpad) X(BN_clear_free) X(BN_free) X(BN_num_bits)                   \
  X(CRYPTO_free) X(CRYPTO_memcmp) X(ECDSA_SIG_free) X(ECDSA_SIG_get0) X(ECDSA_SIG_new)      \
  X(ECDSA_SIG_set0) X(ERR_clear_error) X(ERR_error_string_n) X(ERR_get_error)               \
  X(EVP_Digest) X(EVP_DigestSign) X(EVP_DigestSignInit) X(EVP_DigestVerify)                 \
  X(EVP_DigestVerifyInit) X(EVP_MD_CTX_free) X(EVP_MD_CTX_new) X(EVP_PKEY_CTX_free)         \
  X(EVP_PKEY_CTX_new_from_name) X(EVP_PKEY_CTX_new_from_pkey) X(EVP_PKEY_CTX_set_rsa_padding) \
  X(EVP_PKEY_CTX_set_rsa_pss_saltlen) X(EVP_PKEY_Q_keygen) X(EVP_PKEY_free)                 \
  X(EVP_PKEY_fromdata) X(EVP_PKEY_fromdata_init) X(EVP_PKEY_get_base_id)                    \
  X(EVP_PKEY_get_bits) X(EVP_PKEY_get_bn_param) X(EVP_PKEY_get_group_name)                  \
  X(EVP_PKEY_get_raw_private_key) X(EVP_PKEY_get_raw_public_key)                            \
  X(EVP_PKEY_new_raw_private_key) X(EVP_PKEY_new_raw_public_key) X(EVP_PKEY_pairwise_check) \
  X(EVP_sha256) X(EVP_sha384) X(EVP_sha512) X(HMAC) X(OPENSSL_cleanse)                      \
  X(OSSL_DECODER_CTX_free) X(OSSL_DECODER_CTX_new_for_pkey)                                  \
  X(OSSL_DECODER_CTX_set_passphrase) X(OSSL_DECODER_from_data) X(OSSL_ENCODER_CTX_free)     \
  X(OSSL_ENCODER_CTX_new_for_pkey) X(OSSL_ENCODER_to_data) X(OSSL_PARAM_BLD_free)          \
  X(OSSL_PARAM_BLD_new) X(OSSL_PARAM_BLD_push_BN) X(OSSL_PARAM_BLD_push_octet_string)       \
  X(OSSL_PARAM_BLD_push_utf8_string) X(OSSL_PARAM_BLD_to_param) X(OSSL_PARAM_free)          \
  X(PEM_read_bio_X509) X(RAND_bytes) X(X509_free) X(X509_get_pubkey) X(d2i_ECDSA_SIG) X(d2i_PUBKEY) X(i2d_ECDSA_SIG) X(i2d_PUBKEY)

typedef struct claude_crypto_api {
#define CLAUDE_CRYPTO_MEMBER(name) __typeof__(name) *name;
  CLAUDE_CRYPTO_FUNCTIONS(CLAUDE_CRYPTO_MEMBER)
#undef CLAUDE_CRYPTO_MEMBER
} claude_crypto_api;

/* The table, filled by claude_crypto_load; valid once that returned 0. */
extern claude_crypto_api claude_crypto;

/* Loads libcrypto once per process: 0, or pushes nil, message, "ENOSYS"
 * and returns 3 (the caller returns that). */
int claude_crypto_load(lua_State *L);
/* Pushes `what`, followed by OpenSSL's reason for the failure just seen
 * when it gave one, and empties OpenSSL's error queue. */
void claude_crypto_push_error(lua_State *L, const char *what);
/* The fail triple: nil, `what` (+ OpenSSL's reason), kind; returns 3. */
int claude_crypto_fail(lua_State *L, const char *what, const char *kind);
/* Pushes the `len` bytes at `data` as a string, then frees `data` (which
 * libcrypto allocated), wiping it first when `wipe`: also when the push
 * fails for lack of memory, whose error is raised after the free. */
void claude_crypto_push_owned(lua_State *L, unsigned char *data, size_t len, int wipe);

/* base64.c: base64url (RFC 4648 section 5) without padding. */
size_t claude_b64url_encoded_len(size_t n);
void claude_b64url_encode(const unsigned char *in, size_t n, char *out);
/* Strict: only the URL alphabet, no padding or blanks, a length that a
 * whole number of bytes gives and zero bits at the end (so that each byte
 * string has one encoding). `out` holds 3 * len / 4 bytes; 0 with *outlen
 * set, or -1 with *why set to a static message (*at: the offending byte's
 * offset, or len for a bad length). */
int claude_b64url_decode(const char *in, size_t len, unsigned char *out, size_t *outlen,
                         const char **why, size_t *at);

/* key.c: claude.core.Key, one key for signatures. An asymmetric key is an
 * EVP_PKEY; a symmetric one (JWK "oct", for HMAC) is the secret's bytes,
 * wiped when freed. */
#define CLAUDE_KEY_MT "claude.core.Key"

enum { CLAUDE_KEY_RSA = 1, CLAUDE_KEY_EC, CLAUDE_KEY_OKP, CLAUDE_KEY_OCT };

typedef struct claude_key {
  int kind;        /* CLAUDE_KEY_*, 0 once closed */
  int has_private; /* the private half is there (always for oct) */
  EVP_PKEY *pkey;  /* RSA, EC, OKP */
  unsigned char *secret; /* oct, malloc'd */
  size_t secret_len;
  const char *crv; /* "P-256", "P-384", "P-521", "Ed25519", "Ed448", or NULL */
} claude_key;

/* The curves of JWA (RFC 7518 6.2.1.1): the JWK name, OpenSSL's group name and the
 * width of a coordinate (and of a private scalar) in bytes. */
typedef struct claude_curve {
  const char *jwk, *group;
  size_t width;
} claude_curve;
/* The curve of JWK name `crv`, or NULL. */
const claude_curve *claude_curve_by_jwk(const char *crv);
/* The curve of OpenSSL group name `group`, or NULL. */
const claude_curve *claude_curve_by_group(const char *group);

/* The open key at idx; raises for another value or a closed key. */
claude_key *claude_key_check(lua_State *L, int idx);
/* Pushes a new, closed claude.core.Key (raises only for memory): made
 * before what it will hold is acquired, so that nothing leaks if it cannot
 * be made. */
claude_key *claude_key_new(lua_State *L);
/* Makes the closed k hold pkey (owned from here on, freed on failure): 0;
 * or, for a key type JWS has no use for, the fail triple pushed (kind
 * "key") and 3. */
int claude_key_adopt(lua_State *L, claude_key *k, EVP_PKEY *pkey);
/* "RSA", "EC", "OKP", "oct" (JWK's kty), or "closed" */
const char *claude_key_kty(const claude_key *k);

/* Adds `methods` to claude.core.Key, once claude_open_key made it. */
void claude_key_methods(lua_State *L, const luaL_Reg *methods);

/* Each adds its functions to the module table on top of the stack; core.c
 * calls them, claude_open_key before the two that add Key methods. */
void claude_open_crypto(lua_State *L);  /* random_bytes, sha256 */
void claude_open_base64(lua_State *L);  /* base64url_encode, _decode */
void claude_open_key(lua_State *L);     /* the Key class, key_from_pem, ... */
void claude_open_jws(lua_State *L);     /* key:sign, verify, supports, algorithms */
void claude_open_key_jwk(lua_State *L); /* key:jwk, key_from_jwk: JWK (RFC 7517/7518/8037) */

#endif
