import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

extension JSONValue {
    /// A date as ISO 8601 text, or null.
    static func optional(_ value: Date?) -> JSONValue {
        value.map { .string($0.formatted(.iso8601)) } ?? .null
    }
}

/// Where a command's output goes: human text on stdout, errors on stderr, or one JSON object.
package struct Console {
    package var json: Bool
    var quiet: Bool
    package var out: Style
    var err: Style
    /// Completes every suggested `tokenpin …` command with the flags of the command that was run.
    var hints = CommandLineHints()

    /// A console without colours and not quiet, human or JSON: for what is said before the configuration (which
    /// decides the colours) is read, or without it (usage errors, help, a broken configuration).
    static func plain(json: Bool) -> Console {
        Console(
            json: json, quiet: false, out: Style(enabled: false, appearance: Appearance()),
            err: Style(enabled: false, appearance: Appearance()))
    }

    /// Writes a line to standard output (human mode, not quiet).
    package func say(_ text: String) {
        guard !json, !quiet else { return }
        Self.write(1, hints.rewrite(text) + "\n")
    }

    /// Writes a line to standard error (human mode).
    func note(_ text: String) {
        guard !json else { return }
        Self.write(2, hints.rewrite(text) + "\n")
    }

    /// Prints the command's JSON object.
    package func emit(_ object: [(String, JSONValue)]) {
        guard json else { return }
        Self.write(1, JSONValue.object(object).jsonText + "\n")
    }

    /// Reports an error: `error: <message>` and a hint on stderr, or a JSON object with `error`.
    package func fail(
        _ code: ExitCode, errorCode: String, message: String, hint: String? = nil,
        extra: [(String, JSONValue)] = []
    ) -> ExitCode {
        let message = hints.rewrite(message)
        let hint = hint.map(hints.rewrite)
        if json {
            var object: [(String, JSONValue)] = [("ok", .bool(false))]
            object += extra
            object.append(
                (
                    "error",
                    .object([
                        ("code", .string(errorCode)), ("message", .string(message)),
                        ("exitCode", .int(Int(code.rawValue))),
                    ])
                ))
            emit(object)
        } else {
            Self.write(2, err.error("error: ") + message + "\n")
            if let hint { Self.write(2, "hint: " + hint + "\n") }
        }
        return code
    }

    static func write(_ fd: Int32, _ text: String) {
        SlowStepNotice.shared.cancel()
        // A closed or full stdout/stderr is not worth failing a command for: the result is in the exit code.
        try? FileDescriptor.withBorrowed(fd) { (stream: borrowing FileDescriptor) throws(Errno) in
            try stream.writeAll(Array(text.utf8))
        }
    }
}
