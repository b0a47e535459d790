#ifndef COPENSSL_CRYPTO_SHIM_H
#define COPENSSL_CRYPTO_SHIM_H
// Wrappers for OpenSSL crypto macros Swift cannot import (owned by HeraldCrypto's author).
// Each wraps exactly one macro and is named after it; none adds logic of its own.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

/// OPENSSL_free (a macro adding file and line).
static inline void copenssl_free(void *pointer) { OPENSSL_free(pointer); }

/// BIO_get_mem_data (a macro over BIO_ctrl): the bytes a memory BIO holds, without copying.
static inline long copenssl_bio_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/// BN_num_bytes (a macro over BN_num_bits).
static inline int copenssl_bn_num_bytes(const BIGNUM *number) { return BN_num_bytes(number); }

/// EVP_PKEY_PUBLIC_KEY (a macro expression Swift does not import): the EVP_PKEY_fromdata selection.
static inline int copenssl_evp_pkey_public_key(void) { return EVP_PKEY_PUBLIC_KEY; }

/// EVP_PKEY_KEYPAIR (a macro expression Swift does not import): the EVP_PKEY_fromdata selection.
static inline int copenssl_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }

/// sk_GENERAL_NAME_new_null (a type-checking macro over OPENSSL_sk_new_null).
static inline GENERAL_NAMES *copenssl_general_names_new(void) { return sk_GENERAL_NAME_new_null(); }

/// sk_GENERAL_NAME_push (a type-checking macro over OPENSSL_sk_push); the stack owns `name` on success.
static inline int copenssl_general_names_push(GENERAL_NAMES *names, GENERAL_NAME *name) {
    return sk_GENERAL_NAME_push(names, name);
}

#endif
