import Testing

@testable import TokenpinAge

/// BIP 173's test vectors, and age's own use of Bech32 (no length limit).
@Suite struct Bech32Tests {
    static let valid = [
        "A12UEL5L", "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "11" + String(repeating: "q", count: 82) + "c8247j",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", "?1ezyfcl",
    ]

    @Test(arguments: valid)
    func validChecksums(_ text: String) throws {
        let (human, groups) = try Bech32.decodeGroups(text)
        // Encoding again gives the same string, in lower case.
        #expect(Bech32.encode(human: human, groups: groups) == text.lowercased())
    }

    @Test func validVectorParts() throws {
        let decoded = try Bech32.decodeGroups("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw")
        #expect(decoded.human == "abcdef")
        #expect(decoded.groups == Array(0..<32))
        #expect(try Bech32.decodeGroups("A12UEL5L").human == "a")
    }

    static let invalid: [(String, Bech32.Failure)] = [
        ("\u{20}1nwldj5", .humanPartCharacter),
        ("\u{7F}1axkwrx", .humanPartCharacter),
        ("an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx", .tooLong(90)),
        ("pzry9x0s0muk", .noSeparator),
        ("1pzry9x0s0muk", .noSeparator),
        ("x1b4n0q5v", .dataCharacter("b")),
        ("li1dgmt3", .tooShort),
        ("A1G7SGD8", .checksum),
        ("10a06t8", .noSeparator),
        ("1qzzfhee", .noSeparator),
        ("A12uEL5L", .mixedCase),
        ("a12uel5m", .checksum),
    ]

    @Test(arguments: invalid)
    func invalidStrings(_ text: String, _ failure: Bech32.Failure) {
        #expect(throws: failure) { try Bech32.decodeGroups(text) }
    }

    @Test func characterOutsideASCII() {
        // BIP 173's 0x80 and 0xFF vectors: a byte outside printable ASCII is never Bech32.
        #expect(throws: Bech32.Failure.humanPartCharacter) { try Bech32.decodeGroups("\u{80}1eym55h") }
        #expect(throws: Bech32.Failure.self) { try Bech32.decodeGroups("de1lg7wt\u{FF}") }
    }

    @Test func bytesRoundTripWithoutLimit() throws {
        let bytes = (0..<200).map { UInt8($0 & 0xFF) }
        let text = Bech32.encode(human: "age-plugin-tokenpin-", bytes: bytes)
        #expect(text.count > 90)
        #expect(throws: Bech32.Failure.tooLong(90)) { try Bech32.decode(text) }
        let decoded = try Bech32.decode(text.uppercased(), limit: nil)
        #expect(decoded.human == "age-plugin-tokenpin-")
        #expect(decoded.bytes == bytes)
    }

    @Test func paddingThatIsNotZeroIsRefused() {
        // One byte is two groups with 2 bits of padding; a 1 in them is no byte.
        let text = Bech32.encode(human: "a", groups: [0, 1])
        #expect(throws: Bech32.Failure.padding) { try Bech32.decode(text) }
        // Three groups hold 15 bits: more than 4 bits of padding.
        #expect(throws: Bech32.Failure.padding) { try Bech32.decode(Bech32.encode(human: "a", groups: [0, 0, 0])) }
    }
}
