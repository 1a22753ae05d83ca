import Testing
import TokenpinAPDU
import TokenpinPCSC

@Suite("Reader list and ATR parsing")
struct ReaderListTests {
    static func multiString(_ names: [String]) -> [UInt8] {
        names.flatMap { Array($0.utf8) + [0] } + [0]
    }

    @Test("a well-formed multi-string")
    func wellFormed() {
        let names = ["Yubico YubiKey OTP+FIDO+CCID 00 00", "Virtual PCD 00 00", "Virtual PCD 00 01"]
        #expect(ReaderList.parse(Self.multiString(names)) == names)
    }

    @Test("empty and nearly empty buffers", arguments: [[UInt8](), [0], [0, 0], [0, 65, 0]])
    func empty(buffer: [UInt8]) {
        #expect(ReaderList.parse(buffer).isEmpty)
    }

    @Test("every truncation of a valid buffer parses to a prefix of the names")
    func truncation() {
        let names = ["Reader A 00 00", "Reader B 00 01", "Reader C 00 02"]
        let buffer = Self.multiString(names)
        for length in 0...buffer.count {
            let parsed = ReaderList.parse(Array(buffer.prefix(length)))
            #expect(parsed.count <= names.count)
            for (index, name) in parsed.enumerated() {
                // The last name may be cut short; the ones before it are whole.
                if index < parsed.count - 1 {
                    #expect(name == names[index])
                } else {
                    #expect(names[index].hasPrefix(name))
                }
            }
        }
    }

    @Test("garbage: invalid UTF-8, control characters, duplicates, missing terminator")
    func garbage() {
        let buffer: [UInt8] =
            [0xFF, 0xFE, 0x41, 0] + [0x42, 0x07, 0x43, 0] + Array("X".utf8) + [0] + Array("X".utf8) + [0]
            + Array("tail".utf8)
        let parsed = ReaderList.parse(buffer)
        #expect(parsed == ["\u{FFFD}\u{FFFD}A", "BC", "X", "tail"])
    }

    // Random buffers are the readers fuzz target's (Tests/Fuzz/reader_list.swift), which checks what parses.

    /// A YubiKey 5 NFC's ATR: T=1, historical bytes `80 73 C0 21 C0 57 59 75 62 69 4B 65 79`.
    static let yubiKeyATR = Hex.decode("3B FD 13 00 00 81 31 FE 15 80 73 C0 21 C0 57 59 75 62 69 4B 65 79 40")!

    @Test("a YubiKey ATR announces extended length and chaining")
    func yubiKey() throws {
        let atr = try #require(ATR(Self.yubiKeyATR))
        #expect(atr.historicalBytes == Hex.decode("80 73 C0 21 C0 57 59 75 62 69 4B 65 79"))
        #expect(atr.protocols == [1])
        let caps = try #require(atr.lengthCapabilities)
        #expect(caps.extendedLength)
        #expect(caps.commandChaining)
    }

    @Test("historical bytes with a status indicator (category 00)")
    func categoryZero() throws {
        // OpenPGP card 3.4 style: card capabilities 00 00 E0 then life cycle 05 and 90 00.
        let caps = try #require(HistoricalBytes.lengthCapabilities(Hex.decode("00 73 00 00 E0 05 90 00")!))
        #expect(caps.extendedLength && caps.commandChaining)
        // A Nitrokey-style card: extended length without chaining.
        let other = try #require(HistoricalBytes.lengthCapabilities(Hex.decode("00 31 F5 73 C0 01 40 05 90 00")!))
        #expect(other.extendedLength && !other.commandChaining)
    }

    @Test(
        "ATRs that do not add up",
        arguments: [
            "", "3B", "3C 00", "3B 8F", "3B 81 80", "3B 0F 41 42", "3B F0 00 00 00",
        ])
    func badATR(hex: String) {
        #expect(ATR(Hex.decode(hex) ?? []) == nil)
    }

    @Test("a minimal T=0 ATR without historical bytes says nothing about lengths")
    func minimal() throws {
        let atr = try #require(ATR([0x3B, 0x00]))
        #expect(atr.protocols == [0])
        #expect(atr.historicalBytes.isEmpty)
        #expect(atr.lengthCapabilities == nil)
    }
}
