#ifndef SEEDKIT_CCRYPTO_SHIM_H
#define SEEDKIT_CCRYPTO_SHIM_H
/* The one-shot SHA256_* functions are the fastest path for many small digests; OpenSSL 3 only
   marks them deprecated in favour of EVP, so the deprecation attributes are switched off here. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/bio.h>

/* EVP_PKEY_ED25519 is a macro over another macro, which Swift does not import. */
static inline int seedkit_evp_pkey_ed25519(void) { return EVP_PKEY_ED25519; }

/* BIO_get_mem_data is a macro over BIO_ctrl; the bytes stay owned by the BIO. */
static inline long seedkit_bio_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }
#endif
