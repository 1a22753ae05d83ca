#if canImport(Glibc)
    import Glibc
#endif

/// A signal number, with Swift names for the signals tokenpin handles.
package struct Signal: RawRepresentable, Hashable, Sendable {
    /// The C signal number.
    package let rawValue: Int32

    /// Wraps a C signal number.
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// `SIGTERM`: a request to end (systemd's stop).
    package static let terminate = Signal(rawValue: SIGTERM)
    /// `SIGINT`: an interrupt from the terminal (Ctrl-C).
    package static let interrupt = Signal(rawValue: SIGINT)
    /// `SIGHUP`: for a daemon, a request to read its configuration again.
    package static let hangUp = Signal(rawValue: SIGHUP)
    /// `SIGPIPE`: a write to a pipe or socket whose reader is gone.
    package static let brokenPipe = Signal(rawValue: SIGPIPE)
    /// `SIGKILL`: cannot be caught or ignored.
    package static let kill = Signal(rawValue: SIGKILL)
}

/// The process's signal dispositions.
package enum Signals {
    /// Ignores `signal` from now on (a signal source from Dispatch still sees it); `SIGKILL` and `SIGSTOP` are
    /// `.invalidArgument`.
    ///
    /// The corresponding C function is `signal(SIG_IGN)`.
    package static func ignore(_ signal: Signal) throws(Errno) {
        guard address(of: Glibc.signal(signal.rawValue, SIG_IGN)) != address(of: SIG_ERR) else { throw Errno.current }
    }

    /// Whether `signal` is ignored now (for tests and diagnostics).
    ///
    /// The corresponding C function is `sigaction` (reading only).
    package static func isIgnored(_ signal: Signal) throws(Errno) -> Bool {
        var current = sigaction()
        guard sigaction(signal.rawValue, nil, &current) == 0 else { throw Errno.current }
        return address(of: current.__sigaction_handler.sa_handler) == address(of: SIG_IGN)
    }

    /// A handler's address: C function pointers have no `==` in Swift, and `SIG_IGN`, `SIG_ERR` are small numbers.
    private static func address(of handler: __sighandler_t?) -> Int { unsafeBitCast(handler, to: Int.self) }
}
