#ifndef SEEDKIT_CCRYPTO_SHIM_H
#define SEEDKIT_CCRYPTO_SHIM_H
/* The one-shot SHA256_* functions are the fastest path for many small digests; OpenSSL 3 only
   marks them deprecated in favour of EVP, so the deprecation attributes are switched off here. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#endif
