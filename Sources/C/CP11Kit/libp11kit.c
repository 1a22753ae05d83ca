// p11-kit, loaded the first time tokenpin calls it rather than when the program starts.
//
// Linking libp11-kit.so.0 cost every tokenpin process about 243,000 instructions before main (the dynamic linker
// relocating the library and binding its symbols at once: Debian builds it with -z now), a tenth of
// `tokenpin --version`. Only PKCS#11 tokens use it (URIs, and the modules p11-kit is configured to load, in the
// helper), so `tokenpin --version`, a PIN verify or tokenpind's start need not pay it.
//
// Each p11-kit function TokenpinPKCS11 calls is defined here, hidden from every other object, and forwards to
// p11-kit's own, which dlopen and dlsym find on its first call, through the loader libcrypto.c (COpenSSL) uses too
// (Sources/C/LazyLibrary/lazy_library.h). The compiler checks each line below against p11-kit's headers; a
// function used in Swift and missing here fails the link ("undefined reference"): add its prototype to
// P11KIT_FUNCTIONS, with the parameters named a, b, c...
//
// A p11-kit that cannot be loaded is an installation fault (the package depends on libp11-kit0): the process says
// so on standard error, naming the library and the function, and ends with exit code 127, as it did when the
// dynamic linker could not find a library at start.

#define _GNU_SOURCE

// The C library's headers first, with their default visibility: only p11-kit's declarations become hidden.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)
#include "CP11Kit.h"
#include "../LazyLibrary/lazy_library.h"

// clang-format off
#define P11KIT_FUNCTIONS(FUNCTION, PROCEDURE) \
    FUNCTION(const char *, p11_kit_message, (void), ()) \
    FUNCTION(char *, p11_kit_module_get_filename, (CK_FUNCTION_LIST *a), (a)) \
    FUNCTION(char *, p11_kit_module_get_name, (CK_FUNCTION_LIST *a), (a)) \
    FUNCTION(CK_RV, p11_kit_modules_finalize, (CK_FUNCTION_LIST **a), (a)) \
    FUNCTION(CK_FUNCTION_LIST **, p11_kit_modules_load_and_initialize, (int a), (a)) \
    PROCEDURE(p11_kit_modules_release, (CK_FUNCTION_LIST **a), (a)) \
    FUNCTION(const char *, p11_kit_strerror, (CK_RV a), (a)) \
    FUNCTION(int, p11_kit_uri_any_unrecognized, (P11KitUri *a), (a)) \
    FUNCTION(int, p11_kit_uri_format, (P11KitUri *a, P11KitUriType b, char **c), (a, b, c)) \
    PROCEDURE(p11_kit_uri_free, (P11KitUri *a), (a)) \
    FUNCTION(CK_ATTRIBUTE_PTR, p11_kit_uri_get_attribute, (P11KitUri *a, CK_ATTRIBUTE_TYPE b), (a, b)) \
    FUNCTION(const char *, p11_kit_uri_get_module_name, (const P11KitUri *a), (a)) \
    FUNCTION(const char *, p11_kit_uri_get_module_path, (const P11KitUri *a), (a)) \
    FUNCTION(const char *, p11_kit_uri_get_pin_source, (const P11KitUri *a), (a)) \
    FUNCTION(const char *, p11_kit_uri_get_pin_value, (const P11KitUri *a), (a)) \
    FUNCTION(CK_SLOT_ID, p11_kit_uri_get_slot_id, (P11KitUri *a), (a)) \
    FUNCTION(CK_TOKEN_INFO_PTR, p11_kit_uri_get_token_info, (P11KitUri *a), (a)) \
    FUNCTION(int, p11_kit_uri_match_attributes, (const P11KitUri *a, const CK_ATTRIBUTE *b, CK_ULONG c), (a, b, c)) \
    FUNCTION(int, p11_kit_uri_match_module_info, (const P11KitUri *a, const CK_INFO *b), (a, b)) \
    FUNCTION(int, p11_kit_uri_match_slot_info, (const P11KitUri *a, const CK_SLOT_INFO *b), (a, b)) \
    FUNCTION(int, p11_kit_uri_match_token_info, (const P11KitUri *a, const CK_TOKEN_INFO *b), (a, b)) \
    FUNCTION(const char *, p11_kit_uri_message, (int a), (a)) \
    FUNCTION(P11KitUri *, p11_kit_uri_new, (void), ()) \
    FUNCTION(int, p11_kit_uri_parse, (const char *a, P11KitUriType b, P11KitUri *c), (a, b, c)) \
    FUNCTION(int, p11_kit_uri_set_attribute, (P11KitUri *a, CK_ATTRIBUTE_PTR b), (a, b))

// clang-format on

enum {
#define INDEX_OF_FUNCTION(type, name, parameters, arguments) index_of_##name,
#define INDEX_OF_PROCEDURE(name, parameters, arguments) index_of_##name,
    P11KIT_FUNCTIONS(INDEX_OF_FUNCTION, INDEX_OF_PROCEDURE) p11kit_function_count
};

static const char *const p11kit_names[p11kit_function_count] = {
#define NAME_OF_FUNCTION(type, name, parameters, arguments) #name,
#define NAME_OF_PROCEDURE(name, parameters, arguments) #name,
    P11KIT_FUNCTIONS(NAME_OF_FUNCTION, NAME_OF_PROCEDURE)
};

static void *_Atomic p11kit_addresses[p11kit_function_count];
static struct lazy_library p11kit = {
    .soname = "libp11-kit.so.0", .owner = "p11-kit's", .needed_by = "PKCS#11 tokens", .names = p11kit_names,
    .addresses = p11kit_addresses, .once = PTHREAD_ONCE_INIT,
};
static void p11kit_load(void) { lazy_library_load(&p11kit); }

#define LAZY_LIBRARY_FUNCTION(index) lazy_library_function(&p11kit, p11kit_load, index)
P11KIT_FUNCTIONS(LAZY_FORWARD_FUNCTION, LAZY_FORWARD_PROCEDURE)

#pragma GCC visibility pop
