#if canImport(Glibc)
    import Glibc
#endif

/// A shared object loaded into the process, unloaded when its owner goes away.
///
/// Non-copyable: exactly one value owns the handle, and its `deinit` gives it back (`dlclose`). Symbols found in it
/// are valid only while the owner lives.
package struct DynamicLibrary: ~Copyable {
    private let handle: UnsafeMutableRawPointer
    /// The path it was loaded from.
    package let path: String

    /// Loads `path` with every symbol resolved now and kept local to it (`RTLD_NOW | RTLD_LOCAL`).
    ///
    /// A relative name is searched as the dynamic linker searches (`LD_LIBRARY_PATH`, the cache). The corresponding C
    /// function is `dlopen`.
    /// - Throws: `DynamicLibraryError` with the dynamic linker's message (`dlerror`).
    package init(loading path: String) throws(DynamicLibraryError) {
        _ = dlerror()
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw DynamicLibraryError(message: Self.lastError() ?? "cannot load \(path)")
        }
        self.handle = handle
        self.path = path
    }

    deinit { _ = dlclose(handle) }

    /// The address of the symbol `name`, or nil when the library does not define it.
    ///
    /// The corresponding C function is `dlsym`.
    package func symbol(named name: String) -> UnsafeMutableRawPointer? {
        _ = dlerror()
        return dlsym(handle, name)
    }

    /// Keeps the library loaded for the life of the process: its `deinit` no longer unloads it.
    ///
    /// For modules whose destructors must not run before the process ends. The corresponding C function is `dlopen`
    /// with `RTLD_NOLOAD | RTLD_NODELETE`.
    package func keepLoaded() {
        _ = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)
    }

    private static func lastError() -> String? {
        guard let message = dlerror() else { return nil }
        return String(cString: message)
    }
}

/// Why a shared object could not be loaded: the dynamic linker's own message.
package struct DynamicLibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `dlerror`'s text (`cannot open shared object file: No such file or directory`).
    package var message: String

    /// An error with the dynamic linker's message.
    package init(message: String) { self.message = message }

    package var description: String { message }
}

extension String {
    /// Copies a C string that a C library allocated for the caller, and frees it; nil for a null pointer.
    ///
    /// The corresponding C function is `free`.
    package init?(takingMallocated pointer: UnsafeMutablePointer<CChar>?) {
        guard let pointer else { return nil }
        defer { free(pointer) }
        self.init(cString: pointer)
    }
}

extension Array where Element == String {
    /// Copies a C array of `count` C strings that a C library allocated for the caller (`sd_get_seats`), and frees
    /// each string and the array; empty for a null array or a count below 1. A null string in it is skipped.
    ///
    /// The corresponding C function is `free`.
    package init(takingMallocated strings: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, count: Int) {
        self = []
        guard let strings else { return }
        defer { free(strings) }
        for index in 0..<Swift.max(0, count) {
            if let string = String(takingMallocated: strings[index]) { append(string) }
        }
    }
}
