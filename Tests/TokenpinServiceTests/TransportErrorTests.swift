import Testing
import TokenpinAPDU

@testable import TokenpinService

/// A card transport's failure as the service reports it, in one place (`ServiceError.init(_:)`): the smart-card
/// service unavailable is exit 69 with the transport's words; everything else makes the token unavailable, exit 6.
@Suite("Transport errors as service errors")
struct TransportErrorTests {
    static let words = "Card was removed. (0x80100069)"
    static let hint = "The card was removed during the operation. Insert it again and retry."

    static let kinds: [CardTransportError.Kind] = [
        .readerGone, .noCard, .cardRemoved, .cardReset, .sharingViolation, .timeout, .unresponsive,
        .malformedAnswer(APDUError(.invalidStructure, "1 byte")), .closed, .other,
    ]

    @Test("the service not running is serviceUnavailable, exit 69, its hint and words")
    func serviceUnavailable() {
        let error = ServiceError(
            CardTransportError(
                .serviceUnavailable, "Service not available. (0x8010001D)", code: 0x8010_001D,
                hint: "pcscd, the smart card service, is not running."))
        #expect(
            error
                == .serviceUnavailable(
                    "pcscd, the smart card service, is not running. (Service not available. (0x8010001D))"))
        #expect(ExitCode(error) == .serviceUnavailable)
        #expect(ExitCode(error).rawValue == 69)
        #expect(error.message == "pcscd, the smart card service, is not running. (Service not available. (0x8010001D))")
        #expect(error.code == "service-unavailable")
    }

    @Test("pcscd not answering in time is the service unavailable too, in the deadline's words")
    func pcscdDeadline() {
        let error = ServiceError(
            CardTransportError(CardTimeoutError(reader: nil, timeout: .seconds(10), call: "SCardGetStatusChange")))
        #expect(error == .serviceUnavailable("pcscd did not answer within 10 s (SCardGetStatusChange)"))
        #expect(ExitCode(error) == .serviceUnavailable)
    }

    @Test("every other kind makes the token unavailable, exit 6: the hint, then the words", arguments: kinds)
    func tokenUnavailable(kind: CardTransportError.Kind) {
        let error = ServiceError(CardTransportError(kind, Self.words, code: 0x8010_0069, hint: Self.hint))
        #expect(error == .tokenUnavailable("\(Self.hint) (\(Self.words))"))
        #expect(ExitCode(error) == .tokenUnavailable)
        #expect(ExitCode(error).rawValue == 6)
        #expect(error.message == "token unavailable: \(Self.hint) (\(Self.words))")
        #expect(error.code == "token-unavailable")
    }

    @Test("without a hint the message is the transport's words alone")
    func withoutHint() {
        let error = ServiceError(CardTransportError(.cardRemoved, "the simulated card was removed from the reader"))
        #expect(error == .tokenUnavailable("the simulated card was removed from the reader"))
        #expect(error.message == "token unavailable: the simulated card was removed from the reader")
        let deadline = ServiceError(
            CardTransportError(CardTimeoutError(reader: "R 00 00", timeout: .seconds(2), call: "SCardTransmit")))
        #expect(deadline == .tokenUnavailable("the reader \"R 00 00\" did not answer within 2 s (SCardTransmit)"))
        #expect(ExitCode(deadline) == .tokenUnavailable)
    }

    @Test("a closed session and a malformed transport answer say so")
    func descriptions() {
        #expect(CardTransportError.sessionClosed("OpenPGP").description == "the OpenPGP session was closed")
        #expect(CardTransportError.sessionClosed("PIV").kind == .closed)
        let malformed = APDUError(.invalidStructure, "answer of 1 bytes has no status word")
        let error = CardTransportError(malformed: malformed)
        #expect(error.kind == .malformedAnswer(malformed))
        #expect(error.description == malformed.description)
    }

    @Test("a token failure names the card: a deadline in its own words, anything else as the service error says it")
    func tokenFailure() {
        let service = makeService()
        let removed = service.failure(
            .transport(CardTransportError(.cardRemoved, Self.words, code: 0x8010_0069, hint: Self.hint)), card: "C")
        #expect(removed.kind == .unavailable)
        #expect(removed.reason == "card C: token unavailable: \(Self.hint) (\(Self.words))")
        #expect(removed.serviceError == .tokenUnavailable(removed.reason))
        let late = service.failure(
            .transport(CardTransportError(CardTimeoutError(reader: "R", timeout: .seconds(2), call: "SCardTransmit"))),
            card: "C")
        #expect(late.kind == .unavailable)
        #expect(late.reason == "card C: the reader \"R\" did not answer within 2 s (SCardTransmit)")
        let down = service.failure(
            .transport(CardTransportError(.serviceUnavailable, "Service not available. (0x8010001D)", hint: "h")),
            card: "C")
        #expect(down.kind == .service)
        #expect(down.serviceError == .serviceUnavailable("h (Service not available. (0x8010001D))"))
        #expect(ExitCode(down.serviceError) == .serviceUnavailable)
    }
}
