// A shared library loaded the first time one of its functions is called, rather than when the program starts: the
// one mechanism behind libcrypto.c (COpenSSL) and libp11kit.c (CP11Kit). Not a target of its own: each of those
// files includes it, after the C library's headers and inside its `#pragma GCC visibility push(hidden)`.
//
// A file declares its library's functions once in an X-macro (`FUNCTIONS(FUNCTION, PROCEDURE)`), makes its index
// enum and name table from it, defines one `struct lazy_library` and a `load` routine for `pthread_once`, and then
// expands `FUNCTIONS(LAZY_FORWARD_FUNCTION, LAZY_FORWARD_PROCEDURE)` with `LAZY_LIBRARY_FUNCTION` naming its lookup.
//
// A library that cannot be loaded is an installation fault (the package depends on it): the process says so on
// standard error, naming the library, what needs it and the function, and ends with exit code 127, as it did when
// the dynamic linker could not find a library at start.

#ifndef TOKENPIN_LAZY_LIBRARY_H
#define TOKENPIN_LAZY_LIBRARY_H

struct lazy_library {
    const char *soname;          // "libcrypto.so.3"
    const char *owner;           // "OpenSSL's"
    const char *needed_by;       // "the card's algorithms"
    const char *const *names;    // the functions' names, by index
    void *_Atomic *addresses;    // their addresses once found, by index
    pthread_once_t once;
    void *handle;
    char load_error[512];
};

// Loads the library; the routine a file hands pthread_once calls it with its own `struct lazy_library`.
static void lazy_library_load(struct lazy_library *library) {
    // RTLD_LOCAL: the library's symbols stay out of the global scope, so nothing else in the process (a PKCS#11
    // module among them) binds to them by accident; the handle is never closed (each library registers its own
    // clean-up at exit).
    library->handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (library->handle == NULL) {
        const char *message = dlerror();
        snprintf(library->load_error, sizeof(library->load_error), "%s", message ? message : "dlopen failed");
    }
}

static _Noreturn void lazy_library_unavailable(const struct lazy_library *library, const char *function,
                                               const char *reason) {
    dprintf(STDERR_FILENO, "%s: cannot call %s: %s %s, which %s need, cannot be loaded: %s\n",
            program_invocation_short_name, function, library->owner, library->soname, library->needed_by, reason);
    _exit(127);
}

// The address of the library's function number `index`, loading the library (through `load`, once) on the first
// call of any of them.
static void *lazy_library_function(struct lazy_library *library, void (*load)(void), int index) {
    void *address = atomic_load_explicit(&library->addresses[index], memory_order_acquire);
    if (address != NULL) {
        return address;
    }
    pthread_once(&library->once, load);
    if (library->handle == NULL) {
        lazy_library_unavailable(library, library->names[index], library->load_error);
    }
    dlerror();
    address = dlsym(library->handle, library->names[index]);
    if (address == NULL) {
        const char *message = dlerror();
        lazy_library_unavailable(library, library->names[index], message ? message : "the library lacks it");
    }
    atomic_store_explicit(&library->addresses[index], address, memory_order_release);
    return address;
}

// The forwarding definitions: each function calls the library's own, found by `LAZY_LIBRARY_FUNCTION(index)`.
#define LAZY_FORWARD_FUNCTION(type, name, parameters, arguments) \
    type name parameters { \
        type(*const real) parameters = (type(*) parameters)LAZY_LIBRARY_FUNCTION(index_of_##name); \
        return real arguments; \
    }
#define LAZY_FORWARD_PROCEDURE(name, parameters, arguments) \
    void name parameters { \
        void(*const real) parameters = (void(*) parameters)LAZY_LIBRARY_FUNCTION(index_of_##name); \
        real arguments; \
    }

#endif
