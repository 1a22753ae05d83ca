#if canImport(Glibc)
    import Glibc
#endif

/// The running process: who it runs as, its signal dispositions, how it ends.
package enum CurrentProcess {
    /// The effective user ID.
    ///
    /// The corresponding C function is `geteuid`.
    package static var effectiveUserID: uid_t { geteuid() }

    /// The process ID.
    ///
    /// The corresponding C function is `getpid`.
    package static var id: Int32 { getpid() }

    /// The login name of `uid` in the password database, or nil when it has none (or its entry does not fit 16 KiB).
    ///
    /// The corresponding C function is `getpwuid_r`.
    package static func userName(of uid: uid_t) -> String? {
        (try? UserDatabase.user(id: uid, bufferSize: 16_384))??.name
    }

    /// Removes the environment variable `name`, so that programs started from now on do not inherit it; removing one
    /// that is not set does nothing. A name that is empty or holds `=` is `.invalidArgument`.
    ///
    /// Not thread-safe against other threads reading or changing the environment: call it at start. The corresponding
    /// C function is `unsetenv`.
    package static func removeEnvironmentValue(_ name: String) throws(Errno) {
        guard unsetenv(name) == 0 else { throw Errno.current }
    }

    /// Ends the process with `status`, running `atexit` handlers and flushing C streams.
    ///
    /// The corresponding C function is `exit`.
    package static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }
}

/// What the process has used so far.
package struct ResourceUsage: Sendable {
    /// The largest resident set size the process has had, in KiB (Linux counts `ru_maxrss` in KiB).
    package let peakResidentKiB: Int

    /// The usage of the calling process (all its threads, not its children).
    ///
    /// The corresponding C function is `getrusage(RUSAGE_SELF)`.
    package static func ofCurrentProcess() throws(Errno) -> ResourceUsage {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { throw Errno.current }
        return ResourceUsage(peakResidentKiB: Int(usage.ru_maxrss))
    }
}

/// A private (mode 0700) directory with a unique name, for files that must not be shared.
package enum TemporaryDirectory {
    /// Makes `<base>/<prefix>.XXXXXX` with the X's replaced to make it new, and returns its path. `base` must
    /// exist (`.noSuchFileOrDirectory` otherwise); a `prefix` with a slash is `.invalidArgument`.
    ///
    /// The corresponding C function is `mkdtemp`.
    package static func make(prefix: String, in base: String = "/tmp") throws(Errno) -> String {
        guard !prefix.contains("/") else { throw Errno.invalidArgument }
        var template = Array((base + "/\(prefix).XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw Errno.current
        }
        return String(cString: made)
    }
}
