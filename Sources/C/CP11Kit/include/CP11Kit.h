// p11-kit's declarations: PKCS#11's pkcs11.h (types and constants), module loading and RFC 7512 URIs. Not linked:
// libp11kit.c defines the p11-kit functions tokenpin calls and loads libp11-kit.so.0 on the first of them.
#include <p11-kit/p11-kit.h>
#include <p11-kit/uri.h>
