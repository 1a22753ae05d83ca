/// Why moving bytes to or from a card failed, in the transport's terms: the one error every `CardConnection`
/// throws (PC/SC, the in-process simulator, the test transports), and what the card applications and the service
/// read a failed connection as.
///
/// `kind` says what happened; `message` is the transport's own words (pcsc-lite's text with the code in hex, the
/// simulator's sentence, a deadline that passed), `code` the PC/SC code where pcsc-lite gave one, and `hint` what
/// the person can do about it where the transport knows. The service turns it into its own error in one place.
public struct CardTransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// The smart-card service (pcscd) is not running, stopped, is shutting down, or does not answer in time.
        case serviceUnavailable
        /// The reader is gone (unplugged) or unknown, or there is no reader at all.
        case readerGone
        /// There is no card in the reader.
        case noCard
        /// The card was removed or lost power during the operation.
        case cardRemoved
        /// The card was reset under the connection (by another program): its state is gone.
        case cardReset
        /// Another connection holds the card exclusively.
        case sharingViolation
        /// The reader or the card did not answer in time.
        case timeout
        /// The card does not respond, or the communication with it failed.
        case unresponsive
        /// The transport answered something that is not an answer (a reader's keypad answer without a status word).
        case malformedAnswer(APDUError)
        /// The connection, or the application session on it, was closed.
        case closed
        /// Anything else the transport reported (`code` and `message` say what).
        case other
    }

    /// What happened.
    public var kind: Kind
    /// The transport's own words: `Card was removed. (0x80100069)`.
    public var message: String
    /// The PC/SC code (`SCARD_E_`, `SCARD_W_`, ..., `0x8010xxxx`) where pcsc-lite reported the failure; nil otherwise.
    public var code: UInt32?
    /// What the person can do about it, in plain words; nil when the transport has nothing to say.
    public var hint: String?
    /// The deadline that passed when tokenpin's own deadline on the call ended it (`card-timeout`: the kind is then
    /// `.timeout`, or `.serviceUnavailable` for pcscd itself); nil otherwise.
    public var deadline: CardTimeoutError?

    /// Creates the error.
    public init(_ kind: Kind, _ message: String, code: UInt32? = nil, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.code = code
        self.hint = hint
    }

    /// A deadline that passed: pcscd's own (no reader named) makes the service unavailable, a reader's a timeout.
    public init(_ timeout: CardTimeoutError) {
        self.init(timeout.reader == nil ? .serviceUnavailable : .timeout, timeout.description)
        deadline = timeout
    }

    /// A malformed answer from the transport itself.
    public init(malformed error: APDUError) {
        self.init(.malformedAnswer(error), error.description)
    }

    /// The application session on the connection was closed (`application`: `OpenPGP`, `PIV`).
    public static func sessionClosed(_ application: String) -> CardTransportError {
        CardTransportError(.closed, "the \(application) session was closed")
    }

    /// The transport's own words.
    public var description: String { message }

    /// What a person reads: the hint, then the transport's words in parentheses; the words alone without a hint.
    public var explanation: String { hint.map { "\($0) (\(message))" } ?? message }
}
