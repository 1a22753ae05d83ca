// OpenSSL's libcrypto, loaded the first time tokenpin calls it rather than when the program starts.
//
// Linking libcrypto.so.3 cost every tokenpin process about 2.5 million instructions before main: the dynamic
// linker relocates the library and binds its symbols at once (Debian builds it with -z now), 97% of the start-up
// of a C `main(){}` linked to it. Only the card's algorithms (RSA, NIST and brainpool ECDH, ECDSA, the simulator's
// keys) use it, so `tokenpin --version`, a PIN verify or tokenpind's start need not pay it.
//
// Each libcrypto function TokenpinCardCrypto calls is defined here, hidden from every other object, and forwards
// to libcrypto's own, which dlopen and dlsym find on its first call (the loader libp11kit.c uses too:
// Sources/C/LazyLibrary/lazy_library.h). The compiler checks each line below against
// OpenSSL's header; a function used in Swift and missing here fails the link ("undefined reference"): add its
// prototype to LIBCRYPTO_FUNCTIONS, with the parameters named a, b, c...
//
// A libcrypto that cannot be loaded is an installation fault (the package depends on libssl3): the process says
// so on standard error, naming the library and the function, and ends with exit code 127, as it did when the
// dynamic linker could not find a library at start.

#define _GNU_SOURCE

// The C library's headers first, with their default visibility: only libcrypto's declarations become hidden.
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)
#include "COpenSSL.h"
#include "../LazyLibrary/lazy_library.h"

// clang-format off
#define LIBCRYPTO_FUNCTIONS(FUNCTION, PROCEDURE) \
    PROCEDURE(BN_CTX_free, (BN_CTX *a), (a)) \
    FUNCTION(BN_CTX *, BN_CTX_secure_new, (void), ()) \
    FUNCTION(BIGNUM *, BN_bin2bn, (const unsigned char *a, int b, BIGNUM *c), (a, b, c)) \
    FUNCTION(int, BN_bn2binpad, (const BIGNUM *a, unsigned char *b, int c), (a, b, c)) \
    PROCEDURE(BN_clear_free, (BIGNUM *a), (a)) \
    FUNCTION(int, BN_cmp, (const BIGNUM *a, const BIGNUM *b), (a, b)) \
    FUNCTION(int, BN_div, (BIGNUM *a, BIGNUM *b, const BIGNUM *c, const BIGNUM *d, BN_CTX *e), (a, b, c, d, e)) \
    PROCEDURE(BN_free, (BIGNUM *a), (a)) \
    FUNCTION(int, BN_is_negative, (const BIGNUM *a), (a)) \
    FUNCTION(int, BN_is_odd, (const BIGNUM *a), (a)) \
    FUNCTION(int, BN_is_zero, (const BIGNUM *a), (a)) \
    FUNCTION(BIGNUM *, BN_mod_inverse, (BIGNUM *a, const BIGNUM *b, const BIGNUM *c, BN_CTX *d), (a, b, c, d)) \
    FUNCTION(int, BN_mul, (BIGNUM *a, const BIGNUM *b, const BIGNUM *c, BN_CTX *d), (a, b, c, d)) \
    FUNCTION(BIGNUM *, BN_new, (void), ()) \
    FUNCTION(int, BN_num_bits, (const BIGNUM *a), (a)) \
    FUNCTION(BIGNUM *, BN_secure_new, (void), ()) \
    FUNCTION(int, BN_sub, (BIGNUM *a, const BIGNUM *b, const BIGNUM *c), (a, b, c)) \
    FUNCTION(const BIGNUM *, BN_value_one, (void), ()) \
    PROCEDURE(EC_GROUP_free, (EC_GROUP *a), (a)) \
    FUNCTION(const EC_POINT *, EC_GROUP_get0_generator, (const EC_GROUP *a), (a)) \
    FUNCTION(const BIGNUM *, EC_GROUP_get0_order, (const EC_GROUP *a), (a)) \
    FUNCTION(EC_GROUP *, EC_GROUP_new_by_curve_name, (int a), (a)) \
    FUNCTION(int, EC_POINT_add, (const EC_GROUP *a, EC_POINT *b, const EC_POINT *c, const EC_POINT *d, BN_CTX *e), \
        (a, b, c, d, e)) \
    PROCEDURE(EC_POINT_clear_free, (EC_POINT *a), (a)) \
    FUNCTION(int, EC_POINT_cmp, (const EC_GROUP *a, const EC_POINT *b, const EC_POINT *c, BN_CTX *d), (a, b, c, d)) \
    FUNCTION(int, EC_POINT_copy, (EC_POINT *a, const EC_POINT *b), (a, b)) \
    PROCEDURE(EC_POINT_free, (EC_POINT *a), (a)) \
    FUNCTION(int, EC_POINT_invert, (const EC_GROUP *a, EC_POINT *b, BN_CTX *c), (a, b, c)) \
    FUNCTION(int, EC_POINT_mul, (const EC_GROUP *a, EC_POINT *b, const BIGNUM *c, const EC_POINT *d, const BIGNUM *e, \
        BN_CTX *f), \
        (a, b, c, d, e, f)) \
    FUNCTION(EC_POINT *, EC_POINT_new, (const EC_GROUP *a), (a)) \
    FUNCTION(int, EC_POINT_oct2point, (const EC_GROUP *a, EC_POINT *b, const unsigned char *c, size_t d, BN_CTX *e), \
        (a, b, c, d, e)) \
    FUNCTION(size_t, EC_POINT_point2oct, (const EC_GROUP *a, const EC_POINT *b, point_conversion_form_t c, \
        unsigned char *d, size_t e, BN_CTX *f), \
        (a, b, c, d, e, f)) \
    PROCEDURE(ERR_clear_error, (void), ()) \
    PROCEDURE(ERR_error_string_n, (long unsigned int a, char *b, size_t c), (a, b, c)) \
    FUNCTION(long unsigned int, ERR_get_error, (void), ()) \
    PROCEDURE(EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX *a), (a)) \
    FUNCTION(EVP_CIPHER_CTX *, EVP_CIPHER_CTX_new, (void), ()) \
    FUNCTION(int, EVP_CIPHER_CTX_set_padding, (EVP_CIPHER_CTX *a, int b), (a, b)) \
    FUNCTION(EVP_CIPHER *, EVP_CIPHER_fetch, (OSSL_LIB_CTX *a, const char *b, const char *c), (a, b, c)) \
    PROCEDURE(EVP_CIPHER_free, (EVP_CIPHER *a), (a)) \
    FUNCTION(int, EVP_CipherFinal_ex, (EVP_CIPHER_CTX *a, unsigned char *b, int *c), (a, b, c)) \
    FUNCTION(int, EVP_CipherInit_ex2, (EVP_CIPHER_CTX *a, const EVP_CIPHER *b, const unsigned char *c, \
        const unsigned char *d, int e, const OSSL_PARAM *f), \
        (a, b, c, d, e, f)) \
    FUNCTION(int, EVP_CipherUpdate, (EVP_CIPHER_CTX *a, unsigned char *b, int *c, const unsigned char *d, int e), \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_Digest, (const void *a, size_t b, unsigned char *c, unsigned int *d, const EVP_MD *e, \
        ENGINE *f), \
        (a, b, c, d, e, f)) \
    FUNCTION(int, EVP_DigestFinal_ex, (EVP_MD_CTX *a, unsigned char *b, unsigned int *c), (a, b, c)) \
    FUNCTION(int, EVP_DigestInit_ex, (EVP_MD_CTX *a, const EVP_MD *b, ENGINE *c), (a, b, c)) \
    FUNCTION(int, EVP_DigestUpdate, (EVP_MD_CTX *a, const void *b, size_t c), (a, b, c)) \
    PROCEDURE(EVP_KDF_CTX_free, (EVP_KDF_CTX *a), (a)) \
    FUNCTION(EVP_KDF_CTX *, EVP_KDF_CTX_new, (EVP_KDF *a), (a)) \
    FUNCTION(int, EVP_KDF_derive, (EVP_KDF_CTX *a, unsigned char *b, size_t c, const OSSL_PARAM *d), (a, b, c, d)) \
    FUNCTION(EVP_KDF *, EVP_KDF_fetch, (OSSL_LIB_CTX *a, const char *b, const char *c), (a, b, c)) \
    PROCEDURE(EVP_KDF_free, (EVP_KDF *a), (a)) \
    PROCEDURE(EVP_MD_CTX_free, (EVP_MD_CTX *a), (a)) \
    FUNCTION(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
    PROCEDURE(EVP_PKEY_CTX_free, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_from_name, (OSSL_LIB_CTX *a, const char *b, const char *c), (a, b, c)) \
    FUNCTION(EVP_PKEY_CTX *, EVP_PKEY_CTX_new_from_pkey, (OSSL_LIB_CTX *a, EVP_PKEY *b, const char *c), (a, b, c)) \
    FUNCTION(int, EVP_PKEY_CTX_set_group_name, (EVP_PKEY_CTX *a, const char *b), (a, b)) \
    FUNCTION(int, EVP_PKEY_CTX_set_rsa_keygen_bits, (EVP_PKEY_CTX *a, int b), (a, b)) \
    FUNCTION(int, EVP_PKEY_CTX_set_rsa_mgf1_md, (EVP_PKEY_CTX *a, const EVP_MD *b), (a, b)) \
    FUNCTION(int, EVP_PKEY_CTX_set_rsa_oaep_md, (EVP_PKEY_CTX *a, const EVP_MD *b), (a, b)) \
    FUNCTION(int, EVP_PKEY_CTX_set_rsa_padding, (EVP_PKEY_CTX *a, int b), (a, b)) \
    FUNCTION(int, EVP_PKEY_decrypt, (EVP_PKEY_CTX *a, unsigned char *b, size_t *c, const unsigned char *d, size_t e), \
        \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_PKEY_decrypt_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(int, EVP_PKEY_derive, (EVP_PKEY_CTX *a, unsigned char *b, size_t *c), (a, b, c)) \
    FUNCTION(int, EVP_PKEY_derive_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(int, EVP_PKEY_derive_set_peer, (EVP_PKEY_CTX *a, EVP_PKEY *b), (a, b)) \
    FUNCTION(int, EVP_PKEY_encrypt, (EVP_PKEY_CTX *a, unsigned char *b, size_t *c, const unsigned char *d, size_t e), \
        \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_PKEY_encrypt_init, (EVP_PKEY_CTX *a), (a)) \
    PROCEDURE(EVP_PKEY_free, (EVP_PKEY *a), (a)) \
    FUNCTION(int, EVP_PKEY_fromdata, (EVP_PKEY_CTX *a, EVP_PKEY **b, int c, OSSL_PARAM *d), (a, b, c, d)) \
    FUNCTION(int, EVP_PKEY_fromdata_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(int, EVP_PKEY_generate, (EVP_PKEY_CTX *a, EVP_PKEY **b), (a, b)) \
    FUNCTION(int, EVP_PKEY_get_bn_param, (const EVP_PKEY *a, const char *b, BIGNUM **c), (a, b, c)) \
    FUNCTION(int, EVP_PKEY_get_octet_string_param, (const EVP_PKEY *a, const char *b, unsigned char *c, size_t d, \
        size_t *e), \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(int, EVP_PKEY_sign, (EVP_PKEY_CTX *a, unsigned char *b, size_t *c, const unsigned char *d, size_t e), \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_PKEY_sign_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(int, EVP_PKEY_verify, (EVP_PKEY_CTX *a, const unsigned char *b, size_t c, const unsigned char *d, \
        size_t e), \
        (a, b, c, d, e)) \
    FUNCTION(int, EVP_PKEY_verify_init, (EVP_PKEY_CTX *a), (a)) \
    FUNCTION(const EVP_MD *, EVP_sha1, (void), ()) \
    FUNCTION(const EVP_MD *, EVP_sha256, (void), ()) \
    FUNCTION(const EVP_MD *, EVP_sha512, (void), ()) \
    PROCEDURE(OSSL_PARAM_BLD_free, (OSSL_PARAM_BLD *a), (a)) \
    FUNCTION(OSSL_PARAM_BLD *, OSSL_PARAM_BLD_new, (void), ()) \
    FUNCTION(int, OSSL_PARAM_BLD_push_BN, (OSSL_PARAM_BLD *a, const char *b, const BIGNUM *c), (a, b, c)) \
    FUNCTION(int, OSSL_PARAM_BLD_push_octet_string, (OSSL_PARAM_BLD *a, const char *b, const void *c, size_t d), \
        (a, b, c, d)) \
    FUNCTION(int, OSSL_PARAM_BLD_push_utf8_string, (OSSL_PARAM_BLD *a, const char *b, const char *c, size_t d), \
        (a, b, c, d)) \
    FUNCTION(OSSL_PARAM *, OSSL_PARAM_BLD_to_param, (OSSL_PARAM_BLD *a), (a)) \
    FUNCTION(OSSL_PARAM, OSSL_PARAM_construct_end, (void), ()) \
    FUNCTION(OSSL_PARAM, OSSL_PARAM_construct_octet_string, (const char *a, void *b, size_t c), (a, b, c)) \
    FUNCTION(OSSL_PARAM, OSSL_PARAM_construct_utf8_string, (const char *a, char *b, size_t c), (a, b, c)) \
    PROCEDURE(OSSL_PARAM_free, (OSSL_PARAM *a), (a))

// clang-format on

enum {
#define INDEX_OF_FUNCTION(type, name, parameters, arguments) index_of_##name,
#define INDEX_OF_PROCEDURE(name, parameters, arguments) index_of_##name,
    LIBCRYPTO_FUNCTIONS(INDEX_OF_FUNCTION, INDEX_OF_PROCEDURE) libcrypto_function_count
};

static const char *const libcrypto_names[libcrypto_function_count] = {
#define NAME_OF_FUNCTION(type, name, parameters, arguments) #name,
#define NAME_OF_PROCEDURE(name, parameters, arguments) #name,
    LIBCRYPTO_FUNCTIONS(NAME_OF_FUNCTION, NAME_OF_PROCEDURE)
};

static void *_Atomic libcrypto_addresses[libcrypto_function_count];
static struct lazy_library libcrypto = {
    .soname = "libcrypto.so.3", .owner = "OpenSSL's", .needed_by = "the card's algorithms", .names = libcrypto_names,
    .addresses = libcrypto_addresses, .once = PTHREAD_ONCE_INIT,
};
static void libcrypto_load(void) { lazy_library_load(&libcrypto); }

#define LAZY_LIBRARY_FUNCTION(index) lazy_library_function(&libcrypto, libcrypto_load, index)
LIBCRYPTO_FUNCTIONS(LAZY_FORWARD_FUNCTION, LAZY_FORWARD_PROCEDURE)

#pragma GCC visibility pop
