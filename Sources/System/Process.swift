#if canImport(Glibc)
    import Glibc
#endif

/// The running process: who it runs as, its signal dispositions, how it ends.
package enum CurrentProcess {
    /// The effective user ID.
    ///
    /// The corresponding C function is `geteuid`.
    package static var effectiveUserID: uid_t { geteuid() }

    /// The login name of `uid` in the password database, or nil when it has none.
    ///
    /// The corresponding C function is `getpwuid_r`.
    package static func userName(of uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
        guard status == 0, result != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
    }

    /// Ignores `SIGPIPE`, so a write to a closed pipe or socket fails with `.brokenPipe` instead of ending the
    /// process.
    ///
    /// The corresponding C function is `signal(SIGPIPE, SIG_IGN)`.
    package static func ignoreBrokenPipeSignal() {
        _ = signal(SIGPIPE, SIG_IGN)
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
