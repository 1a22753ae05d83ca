// No imports: this file builds on its own.

/// A frame or message that breaks the protocol: a code tests compare, and a human detail.
package struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    package enum Code: String, Sendable, Equatable {
        /// Not JSON, or JSON of the wrong shape.
        case malformed
        /// A line longer than the limit.
        case oversized
        /// The peer closed the connection in the middle of a line.
        case truncated
        /// A `v` this build does not speak.
        case unsupportedVersion = "unsupported-version"
        /// A `type` or `op` this build does not know.
        case unknownType = "unknown-type"
        /// A field the message does not have.
        case unknownField = "unknown-field"
        /// A required field is missing.
        case missingField = "missing-field"
        /// A field of the wrong type or out of range.
        case badField = "bad-field"
        /// A message that is not expected now (an answer with no question).
        case unexpected
        /// The peer sent nothing for too long.
        case timeout
        /// Too many requests on this connection.
        case rateLimited = "rate-limited"
        /// The daemon is shutting down or has no room.
        case busy
        /// The connection closed.
        case closed
        /// Reading or writing the socket failed.
        case io
    }

    /// What is wrong.
    package var code: Code
    /// A human description, never containing a secret.
    package var detail: String

    /// Creates an error.
    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { "\(code.rawValue): \(detail)" }
}

/// The protocol's constants.
package enum ProtocolLimits {
    /// The protocol version this build writes (`"v":3`). Version 3 added the invoker fields of a request
    /// (`invokerUID`, `service`, `rhost`, `tty`, `ruser`: who runs the PAM stack). Version 2 renamed `triesLeft`
    /// to `remaining` (the PIN's tries, in `rejected` results and prompts) and `cardPINTriesLeft` to
    /// `cardTriesLeft`, the names the CLI's `--json` uses.
    package static let version = 3
    /// The versions this build reads: versions 1 and 2 still read (version 1's field names for one more version).
    package static let acceptedVersions = 1...3
    /// The first version whose requests may carry the invoker fields.
    package static let invokerVersion = 3
    /// The longest invoker text field (`service`, `rhost`, `tty`, `ruser`), in bytes.
    package static let maximumInvokerText = 256
    /// The longest line either side accepts, newline excluded (64 KiB).
    package static let maximumLineLength = 65_536
    /// The longest record `import` accepts, before base64 (48 KiB).
    package static let maximumImportBytes = 49_152
    /// The most options a `choice` offers (cards present at once).
    package static let maximumChoices = 64
}
