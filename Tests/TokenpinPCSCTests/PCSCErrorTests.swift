import Foundation
import Testing
import TokenpinPCSC

@Suite("PCSCError")
struct PCSCErrorTests {
    /// Every code tokenpin gives a hint for, with a word the hint must contain.
    static let hints: [(PCSCError, UInt32, String)] = [
        (.noService, 0x8010_001D, "systemctl start pcscd.socket"),
        (.serviceStopped, 0x8010_001E, "pcscd"),
        (.noReadersAvailable, 0x8010_002E, "reader"),
        (.noSmartCard, 0x8010_000C, "no card"),
        (.removedCard, 0x8010_0069, "removed"),
        (.resetCard, 0x8010_0068, "reset"),
        (.unpoweredCard, 0x8010_0067, "power"),
        (.sharingViolation, 0x8010_000B, "gpgconf --kill scdaemon"),
        (.timeout, 0x8010_000A, "in time"),
        (.unresponsiveCard, 0x8010_0066, "does not respond"),
        (.communicationError, 0x8010_0013, "does not respond"),
        (.unknownReader, 0x8010_0009, "reader"),
        (.readerUnavailable, 0x8010_0017, "reader"),
        (.cancelled, 0x8010_0002, "cancelled"),
        (.notTransacted, 0x8010_0016, "may have been removed"),
    ]

    @Test("codes, texts and hints", arguments: hints)
    func mapping(error: PCSCError, code: UInt32, hintWord: String) throws {
        #expect(error.rawValue == code)
        #expect(PCSCError(rawValue: code) == error)
        let hint = try #require(error.hint)
        #expect(hint.lowercased().contains(hintWord.lowercased()))
        // pcsc-lite's own text, then the code in hex.
        #expect(error.description.hasSuffix("(0x\(String(code, radix: 16, uppercase: true)))"))
        #expect(!error.description.hasPrefix("("))
    }

    @Test("the sharing violation names the likely holders")
    func sharingViolationNamesHolders() throws {
        let hint = try #require(PCSCError.sharingViolation.hint)
        #expect(hint.contains("scdaemon"))
        #expect(hint.contains("tokenpin"))
    }

    @Test("pcsc-lite's text for known codes")
    func stringify() {
        #expect(PCSCError.noService.description.contains("Service not available"))
        #expect(PCSCError.removedCard.description.contains("removed"))
        #expect(PCSCError.sharingViolation.description.contains("Sharing violation"))
    }

    @Test("unknown codes describe themselves and have no hint", arguments: [UInt32(0), 1, 0x8010_00FF, 0xFFFF_FFFF])
    func unknownCode(code: UInt32) {
        let error = PCSCError(rawValue: code)
        #expect(error.hint == nil)
        #expect(error.description.contains("0x"))
    }

    @Test(
        "gone cards are recognised",
        arguments: [
            (PCSCError.removedCard, true), (.noSmartCard, true), (.resetCard, true), (.unpoweredCard, true),
            (.sharingViolation, false), (.timeout, false), (.noService, false),
        ])
    func cardGone(error: PCSCError, gone: Bool) {
        #expect(error.isCardGone == gone)
    }
}
