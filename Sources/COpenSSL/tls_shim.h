#ifndef COPENSSL_TLS_SHIM_H
#define COPENSSL_TLS_SHIM_H
// Wrappers for OpenSSL TLS macros Swift cannot import (owned by HeraldIO's author).
#include <openssl/ssl.h>

static inline long copenssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline long copenssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
/// SSL_CTX_set_max_proto_version.
static inline long copenssl_ctx_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
/// SSL_CTX_set_mode.
static inline long copenssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
/// SSL_CTX_set_read_ahead.
static inline void copenssl_ctx_set_read_ahead(SSL_CTX *ctx, int yes) { SSL_CTX_set_read_ahead(ctx, yes); }
/// SSL_CTX_add0_chain_cert: the context takes ownership of `certificate` on success.
static inline long copenssl_ctx_add0_chain_cert(SSL_CTX *ctx, X509 *certificate) {
    return SSL_CTX_add0_chain_cert(ctx, certificate);
}
/// SSL_CTX_set_session_cache_mode.
static inline long copenssl_ctx_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
/// sk_ASN1_TYPE_num (a type-checking inline over OPENSSL_sk_num).
static inline int copenssl_sk_asn1_type_num(const STACK_OF(ASN1_TYPE) *stack) { return sk_ASN1_TYPE_num(stack); }
/// sk_ASN1_TYPE_value (a type-checking inline over OPENSSL_sk_value).
static inline ASN1_TYPE *copenssl_sk_asn1_type_value(const STACK_OF(ASN1_TYPE) *stack, int index) {
    return sk_ASN1_TYPE_value(stack, index);
}
/// sk_ASN1_TYPE_pop_free with ASN1_TYPE_free (a type-checking inline over OPENSSL_sk_pop_free).
static inline void copenssl_sk_asn1_type_pop_free(STACK_OF(ASN1_TYPE) *stack) {
    sk_ASN1_TYPE_pop_free(stack, ASN1_TYPE_free);
}
/// SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION (SSL_OP_BIT macros).
static inline uint64_t copenssl_default_options(void) {
    return SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION;
}

#endif
