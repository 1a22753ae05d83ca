#include <p11-kit/p11-kit.h>
#include <p11-kit/uri.h>
