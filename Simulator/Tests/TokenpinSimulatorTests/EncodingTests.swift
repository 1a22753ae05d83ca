import Testing
import TokenpinAPDU

@testable import TokenpinSimulator

/// The APDU encodings real cards accept beyond the strict ISO cases, and 6700 for the malformed ones.
@Suite struct EncodingTests {
    static let selectData = "06 D2 76 00 01 24 01"

    static func statusWord(_ answer: [UInt8]) -> [UInt8] { Array(answer.suffix(2)) }

    @Test("an extended header with Lc 0000 then Le is case 2E: same answer as 00 00 00")
    func extendedZeroLcThenLe() throws {
        let harness = try Harness()
        let strict = harness.raw("00 CA 00 6E 00 00 00")
        #expect(Self.statusWord(strict) == [0x90, 0x00])
        #expect(harness.raw("00 CA 00 6E 00 00 00 00 00") == strict)
        // With a small Le the card sends what fits and says how much is left, as for 2E.
        #expect(harness.raw("00 CA 00 6E 00 00 00 00 04").count == 4 + 2)
    }

    @Test("short Lc with an extended Le, and extended Lc with a short Le, are taken")
    func mixedLengths() throws {
        let harness = try Harness(select: false)
        #expect(harness.raw("00 A4 04 00 \(Self.selectData) 00 00") == [0x90, 0x00])
        #expect(harness.raw("00 A4 04 00 00 00 06 D2 76 00 01 24 01 00") == [0x90, 0x00])
        #expect(harness.raw("00 A4 04 00 00 00 06 D2 76 00 01 24 01") == [0x90, 0x00])
    }

    @Test(
        "malformed commands are 6700, and the card goes on",
        arguments: [
            "00 CA 00",  // header cut short
            "00 A4 04 00 06 D2 76",  // Lc announces more than came
            "00 A4 04 00 02 D2 76 00 00 00",  // bytes after Le
            "00 CA 00 6E 00 00 00 05",  // Lc 0000 followed by one byte
            "00 A4 04 00 00 00 06 D2 76 00 01 24 01 00 00 00",  // extended: bytes after Le
            "00 A4 04 00 00 00 09 D2 76 00 01 24 01",  // extended Lc announces more than came
        ])
    func malformed(hex: String) throws {
        let harness = try Harness()
        #expect(harness.raw(hex) == [0x67, 0x00])
        #expect(Self.statusWord(harness.raw("00 CA 00 6E 00")) != [0x67, 0x00])
    }

    @Test("a card without extended length (Gnuk) answers 6700 to every extended encoding, takes short ones")
    func shortOnlyCard() throws {
        let harness = try Harness(card: SimulatedCard(stateFile: nil, serial: 1, profile: .gnuk), select: false)
        #expect(harness.raw("00 A4 04 00 \(Self.selectData)") == [0x90, 0x00])
        #expect(harness.raw("00 CA 00 6E 00 00 00") == [0x67, 0x00])
        #expect(harness.raw("00 CA 00 6E 00 00 00 00 00") == [0x67, 0x00])
        #expect(harness.raw("00 A4 04 00 \(Self.selectData) 00 00") == [0x67, 0x00])
        #expect(harness.raw("00 A4 04 00 00 00 06 D2 76 00 01 24 01") == [0x67, 0x00])
        #expect([0x90, 0x61].contains(harness.raw("00 CA 00 6E 00").suffix(2).first))
    }
}
