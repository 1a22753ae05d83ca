package import TokenpinAPDU

// PC/SC's codes in the transport's terms: the one place a `PCSCError` becomes the `CardTransportError` every card
// connection throws.

extension CardTransportError {
    /// What a PC/SC code means for the connection: pcsc-lite's words with the code, the hint, and the kind.
    package init(_ error: PCSCError) {
        self.init(Self.kind(of: error), error.description, code: error.rawValue, hint: error.hint)
    }

    /// The PC/SC error this came from; nil when pcsc-lite did not report it (a deadline, the simulator).
    package var pcscError: PCSCError? { code.map(PCSCError.init(rawValue:)) }

    static func kind(of error: PCSCError) -> Kind {
        switch error {
        case .noService, .serviceStopped, .shutdown: .serviceUnavailable
        case .unknownReader, .readerUnavailable, .noReadersAvailable: .readerGone
        case .noSmartCard: .noCard
        case .removedCard, .unpoweredCard: .cardRemoved
        case .resetCard: .cardReset
        case .sharingViolation: .sharingViolation
        case .timeout: .timeout
        case .unresponsiveCard, .notReady, .communicationError, .communicationDataLost, .unsupportedCard: .unresponsive
        case .invalidHandle: .closed
        default: .other
        }
    }
}
