import Testing
import TokenpinAPDU
import TokenpinCore

@testable import TokenpinSimulator

/// Short and extended length, chaining, `61xx` and GET RESPONSE, hostile command bytes. ISO/IEC 7816-4, §5.
@Suite("Transport")
struct TransportTests {
    @Test("extended and short forms of the same GET DATA agree")
    func extendedLength() throws {
        let harness = try Harness()
        let short = harness.raw("00CA006E00")
        let extended = harness.raw("00CA006E000000")
        #expect(short == extended)
        #expect(short.suffix(2) == [0x90, 0x00])
    }

    @Test("a short Le smaller than the answer yields 61xx and GET RESPONSE fetches the rest")
    func getResponse() throws {
        let harness = try Harness()
        let whole = harness.raw("00CA006E00")
        let first = harness.raw("00CA006E10")
        #expect(first.count == 18 && first[16] == 0x61)
        let rest = whole.count - 2 - 16
        #expect(Int(first[17]) == rest)
        let second = harness.raw("00C0000000")
        #expect(Array(first.prefix(16)) + second == whole)
        #expect(harness.raw("00C0000000") == [0x69, 0x85], "nothing pending any more")
        #expect(harness.raw("00C0010000") == [0x6A, 0x86])
    }

    @Test("an answer beyond 256 bytes goes through 61 00 and send() reassembles it")
    func longAnswer() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        let certificate = SecureRandom.bytes(1500)
        // 1500 bytes do not fit a short APDU: send() chains them (the card announces chaining).
        harness.connection.lengthCapabilities = LengthCapabilities(extendedLength: false, commandChaining: true)
        #expect(try harness.putData(0x7F21, certificate) == .success)
        let raw = harness.raw("00CA7F2100")
        #expect(raw.count == 258 && raw.suffix(2) == [0x61, 0x00])
        harness.card.reset()
        try requireSuccess(harness.select())
        #expect(try harness.getData(0x7F21).data == certificate)
        harness.connection.lengthCapabilities = CardProfile.lengthCapabilities
        #expect(try harness.send(CardInstruction.getData, 0x7F, 0x21, le: 65536).data == certificate)
    }

    @Test("chaining: parts accumulate; a different command mid-chain is 6883")
    func chaining() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        #expect(harness.raw("10DA005B03446F65") == [0x90, 0x00])
        #expect(harness.raw("00DA005B023C3C") == [0x90, 0x00])
        #expect(try harness.getData(0x5B).data == Array("Doe<<".utf8))
        #expect(harness.raw("10DA005B0141") == [0x90, 0x00])
        #expect(harness.raw("00DA005E0141") == [0x68, 0x83])
        #expect(harness.raw("10DA005B0141") == [0x90, 0x00])
        #expect(harness.raw("10DA005E0141") == [0x68, 0x83])
    }

    @Test("a chain longer than the card reassembles is 6700")
    func chainTooLong() throws {
        let harness = try Harness()
        let part = "10DA7F21FF" + String(repeating: "41", count: 255)
        var answers: [[UInt8]] = []
        for _ in 0..<20 { answers.append(harness.raw(part)) }
        #expect(answers[0] == [0x90, 0x00])
        #expect(answers.contains([0x67, 0x00]))
    }

    @Test("every prefix of a command is answered with a status word, never a trap")
    func truncatedCommands() throws {
        let harness = try Harness()
        try requireSuccess(harness.verify(0x83, "12345678"))
        let commands = [
            "00A4040006D27600012401", "00DA005B05416C69636500", "00200082063132333435360000",
            "00DA005B000005416C696365", "002A8086" + "27A625" + "7F4922" + "8620" + String(repeating: "11", count: 32),
        ]
        for hex in commands {
            let bytes = Hex.decode(hex) ?? []
            for length in 0...bytes.count {
                let response = harness.card.process(Array(bytes.prefix(length)))
                #expect(response.count >= 2, "prefix \(length) of \(hex)")
            }
        }
        #expect(harness.raw("") == [0x67, 0x00])
        #expect(harness.raw("00") == [0x67, 0x00])
        #expect(harness.raw("00CA") == [0x67, 0x00])
        #expect(harness.raw("00DA005B05414243") == [0x67, 0x00], "Lc past the end")
        #expect(harness.raw("00DA005B0141424344") == [0x67, 0x00], "trailing bytes")
    }

    @Test("random byte strings never trap and always get two status bytes", arguments: 0..<4)
    func fuzz(seed: Int) throws {
        let harness = try Harness()
        _ = seed
        for _ in 0..<500 {
            let length = Int(SecureRandom.uniform(40))
            var bytes = SecureRandom.bytes(length)
            if bytes.count > 1 && SecureRandom.uniform(2) == 0 { bytes[0] = 0x00 }
            let response = harness.card.process(bytes)
            #expect(response.count >= 2)
        }
    }

    @Test("the connection announces the card's extended length and chaining")
    func connectionCapabilities() throws {
        let harness = try Harness()
        #expect(harness.connection.lengthCapabilities == CardProfile.lengthCapabilities)
        #expect(harness.connection.atr == CardProfile.atr)
        #expect(
            CardProfile.atr == [
                0x3B, 0x88, 0x81, 0x31, 0xFE, 0x15, 0x00, 0x73, 0xC0, 0x01, 0xC0, 0x05, 0x90, 0x00,
                CardProfile.atr.last ?? 0,
            ])
    }
}
