#if canImport(Glibc)
    import Glibc
#endif

/// A terminal's settings (echo, line editing, signal keys), as read from and applied to a terminal.
package struct TerminalSettings: @unchecked Sendable {
    /// The C settings.
    package var rawValue: termios

    /// Wraps C settings.
    package init(rawValue: termios) { self.rawValue = rawValue }

    /// These settings in raw mode for reading a secret: no echo, no line editing, no signal keys (Ctrl-C arrives
    /// as a byte), no Ctrl-V literal-next, no Ctrl-S/Ctrl-Q flow control; a read returns after each byte.
    package var raw: TerminalSettings {
        var raw = rawValue
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        return TerminalSettings(rawValue: raw)
    }

    /// These settings with echo off (`ECHO` cleared) and nothing else changed: lines are still edited and
    /// Ctrl-C still sends its signal, for a passphrase typed and ended with Enter.
    package var withoutEcho: TerminalSettings {
        var quiet = rawValue
        quiet.c_lflag &= ~tcflag_t(ECHO)
        return TerminalSettings(rawValue: quiet)
    }

    /// Whether typed characters are echoed (`ECHO`).
    package var echoes: Bool { rawValue.c_lflag & tcflag_t(ECHO) != 0 }

    /// Whether input is read a line at a time with line editing (`ICANON`).
    package var isCanonical: Bool { rawValue.c_lflag & tcflag_t(ICANON) != 0 }

    /// Whether Ctrl-C, Ctrl-\ and Ctrl-Z send signals (`ISIG`).
    package var sendsSignals: Bool { rawValue.c_lflag & tcflag_t(ISIG) != 0 }
}

/// An open terminal, closed when the last reference goes away.
///
/// Reads and writes retry `EINTR`. `TerminalSignalGuard` puts its settings back if a signal ends the process.
package final class Terminal: Sendable {
    /// The raw descriptor.
    package let rawValue: Int32

    /// Takes ownership of `rawValue`, an open terminal (or any descriptor: the terminal calls then fail with
    /// `Errno(rawValue: ENOTTY)`).
    package init(owning rawValue: Int32) { self.rawValue = rawValue }

    deinit { _ = close(rawValue) }

    /// Opens the process's controlling terminal for reading and writing, without making it the controlling
    /// terminal of a process that has none; a process without one gets `Errno(rawValue: ENXIO)`.
    ///
    /// The corresponding C function is `open("/dev/tty", O_RDWR | O_NOCTTY)`.
    package static func openControlling() throws(Errno) -> Terminal {
        let file = try FileDescriptor.open("/dev/tty", O_RDWR | O_NOCTTY)
        return Terminal(owning: file.release())
    }

    /// Writes all of `bytes`; see `FileDescriptor.writeAll(_:)`.
    ///
    /// The corresponding C function is `write`.
    package func write(_ bytes: [UInt8]) throws(Errno) {
        try FileDescriptor.withBorrowed(rawValue) { (file: borrowing FileDescriptor) throws(Errno) in
            try file.writeAll(bytes)
        }
    }

    /// Reads one byte, waiting as the settings say; nil at end of file (a hang-up).
    ///
    /// The corresponding C function is `read`.
    package func readByte() throws(Errno) -> UInt8? {
        try FileDescriptor.withBorrowed(rawValue) { (file: borrowing FileDescriptor) throws(Errno) in
            try file.readByte()
        }
    }

    /// Reads one byte if one arrives within `timeoutMilliseconds`; nil when none does, at end of file, or on
    /// an error.
    ///
    /// The corresponding C functions are `poll` and `read`.
    package func readByte(timeoutMilliseconds: Int32) -> UInt8? {
        FileDescriptor.withBorrowed(rawValue) { (file: borrowing FileDescriptor) -> UInt8? in
            guard (try? file.waitForInput(timeoutMilliseconds: timeoutMilliseconds)) == true else { return nil }
            return (try? file.readByte()) ?? nil
        }
    }

    /// The terminal's current settings.
    ///
    /// The corresponding C function is `tcgetattr`.
    package func settings() throws(Errno) -> TerminalSettings {
        var settings = termios()
        guard tcgetattr(rawValue, &settings) == 0 else { throw Errno.current }
        return TerminalSettings(rawValue: settings)
    }

    /// Applies `settings` once what was written has gone out, discarding input typed and not yet read, so
    /// keys pressed before a prompt (or after a cancelled one) never reach the next reader.
    ///
    /// The corresponding C function is `tcsetattr(TCSAFLUSH)`.
    package func apply(_ settings: TerminalSettings) throws(Errno) {
        var settings = settings.rawValue
        guard tcsetattr(rawValue, TCSAFLUSH, &settings) == 0 else { throw Errno.current }
    }

    /// Discards input typed and not yet read.
    ///
    /// The corresponding C function is `tcflush(TCIFLUSH)`.
    package func discardInput() throws(Errno) {
        guard tcflush(rawValue, TCIFLUSH) == 0 else { throw Errno.current }
    }
}

/// The terminal settings to put back if a signal ends the process while a terminal is in raw mode.
///
/// nonisolated(unsafe): written only by `TerminalSignalGuard.arm` / `disarm` on one thread (the prompt's),
/// while the handlers are not installed, and read only by those handlers; there is no concurrent writer.
nonisolated(unsafe) private var guardedSettings = termios()
nonisolated(unsafe) private var guardedDescriptor: Int32 = -1

/// Puts the terminal back, drops what was typed and not read, moves to a new line and exits 128 + the signal.
/// Only async-signal-safe calls: tcsetattr, write, _exit.
private func restoreTerminalAndExit(_ signal: Int32) {
    if guardedDescriptor >= 0 {
        tcsetattr(guardedDescriptor, TCSAFLUSH, &guardedSettings)
        var newline: UInt8 = 0x0A
        _ = write(guardedDescriptor, &newline, 1)
    }
    _exit(128 + signal)
}

/// While armed, SIGINT, SIGTERM, SIGHUP and SIGQUIT put a terminal's settings back before they end the process
/// (exit status 128 + the signal, 130 for SIGINT), so a prompt killed in raw mode never leaves echo off.
///
/// One guard for the process: arm it just before a terminal goes raw and disarm it after the settings are back.
package enum TerminalSignalGuard {
    /// The signals handled while armed.
    package static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// Installs the handlers, which restore `settings` on `terminal`.
    ///
    /// The corresponding C function is `signal`.
    package static func arm(terminal: Terminal, restoring settings: TerminalSettings) {
        guardedSettings = settings.rawValue
        guardedDescriptor = terminal.rawValue
        for number in signals { _ = signal(number, restoreTerminalAndExit) }
    }

    /// Puts the default dispositions back (the signals end the process again).
    ///
    /// The corresponding C function is `signal(SIG_DFL)`.
    package static func disarm() {
        for number in signals { _ = signal(number, SIG_DFL) }
        guardedDescriptor = -1
    }
}
