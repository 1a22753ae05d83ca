#if canImport(Glibc)
    import Glibc
#endif

/// Path and account lookups the tools need, without Foundation's NSString and NSHomeDirectory.
package enum Paths {
    /// The directory part of `path`, as `dirname` keeps it: "" for a bare name, "/" for a file in the root.
    package static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        if slash == trimmed.startIndex { return "/" }
        var parent = trimmed[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }

    /// Removes the file (not a directory) at `path`.
    ///
    /// The corresponding C function is `unlink`.
    package static func removeFile(_ path: String) throws(Errno) {
        guard unlink(path) == 0 else { throw Errno.current }
    }

    /// Creates the directory `path` with `mode` (less the umask); its parent must exist, and anything already
    /// at `path` is `.fileExists`.
    ///
    /// The corresponding C function is `mkdir`.
    package static func makeDirectory(_ path: String, mode: mode_t) throws(Errno) {
        guard mkdir(path, mode) == 0 else { throw Errno.current }
    }

    /// The home directory of the effective user from the password database, or "/" when it has none.
    ///
    /// The corresponding C function is `getpwuid_r`.
    package static func homeDirectory(uid: uid_t = geteuid()) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let directory = entry.pw_dir else { return "/" }
        let home = String(cString: directory)
        return home.isEmpty ? "/" : home
    }
}

/// Monotonic time, without Dispatch or Foundation.
package enum MonotonicClock {
    /// Nanoseconds since an arbitrary point (boot), never going back.
    ///
    /// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    package static var nanoseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
