import Testing
import TokenpinAPDU
import TokenpinPCSC

/// PC/SC codes in the transport's terms: each `SCARD_*` code becomes the `CardTransportError` kind that says what
/// happened, with pcsc-lite's words, the code and the hint kept as they are.
@Suite("PC/SC codes as transport errors")
struct PCSCTransportErrorTests {
    static let kinds: [(PCSCError, CardTransportError.Kind)] = [
        (.noService, .serviceUnavailable), (.serviceStopped, .serviceUnavailable), (.shutdown, .serviceUnavailable),
        (.unknownReader, .readerGone), (.readerUnavailable, .readerGone), (.noReadersAvailable, .readerGone),
        (.noSmartCard, .noCard), (.removedCard, .cardRemoved), (.unpoweredCard, .cardRemoved),
        (.resetCard, .cardReset), (.sharingViolation, .sharingViolation), (.timeout, .timeout),
        (.unresponsiveCard, .unresponsive), (.notReady, .unresponsive), (.communicationError, .unresponsive),
        (.communicationDataLost, .unresponsive), (.unsupportedCard, .unresponsive), (.invalidHandle, .closed),
        (.notTransacted, .other), (.internalError, .other), (.unexpected, .other), (.cancelled, .other),
        (PCSCError(rawValue: 0x8010_00FF), .other),
    ]

    @Test("each code maps to its kind, keeping pcsc-lite's words, the code and the hint", arguments: kinds)
    func kind(error: PCSCError, kind: CardTransportError.Kind) {
        let transport = CardTransportError(error)
        #expect(transport.kind == kind)
        #expect(transport.code == error.rawValue)
        #expect(transport.pcscError == error)
        #expect(transport.message == error.description)
        #expect(transport.description == error.description)
        #expect(transport.hint == error.hint)
        #expect(transport.explanation == (error.hint.map { "\($0) (\(error.description))" } ?? error.description))
    }

    @Test("a card pulled: the words carry the code in hex, the explanation the hint first")
    func removedCard() throws {
        let transport = CardTransportError(PCSCError.removedCard)
        #expect(transport.message.hasSuffix("(0x80100069)"))
        let hint = try #require(PCSCError.removedCard.hint)
        #expect(transport.explanation == "\(hint) (\(transport.message))")
    }

    @Test("errors that did not come from pcsc-lite have no PC/SC code")
    func notFromPCSC() {
        let deadline = CardTransportError(CardTimeoutError(reader: "R", timeout: .seconds(10), call: "SCardTransmit"))
        #expect(deadline.kind == .timeout)
        #expect(deadline.code == nil && deadline.pcscError == nil && deadline.hint == nil)
        #expect(deadline.message == "the reader \"R\" did not answer within 10 s (SCardTransmit)")
        #expect(deadline.deadline == CardTimeoutError(reader: "R", timeout: .seconds(10), call: "SCardTransmit"))
        #expect(CardTransportError(PCSCError.timeout).deadline == nil, "pcsc-lite's own timeout is not a deadline")
        let pcscd = CardTransportError(
            CardTimeoutError(reader: nil, timeout: .seconds(2), call: "SCardGetStatusChange"))
        #expect(pcscd.kind == .serviceUnavailable)
        #expect(pcscd.message == "pcscd did not answer within 2 s (SCardGetStatusChange)")
    }
}
