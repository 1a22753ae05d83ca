import Foundation
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// The application keys `derive` releases: the published test vectors (docs/security.md, computed independently
/// with Python's hashlib.blake2b), the context's encoding, the names accepted, and the encoders.
@Suite struct ApplicationKeyTests {
    /// The vault key of the vectors: the bytes 00 01 ... 1f.
    func vectorVaultKey() -> SecretBytes {
        SecretBytes(count: 32) { bytes in for index in 0..<32 { bytes[index] = UInt8(index) } }
    }

    func hexKey(user: String, application: String, vaultKey: borrowing SecretBytes) throws -> String {
        let key = try ApplicationKeys.key(
            vaultKey: vaultKey, user: user, application: #require(ApplicationName(application)))
        return key.withUnsafeBytes { hexText($0) }
    }

    @Test(arguments: [
        ("alice", "restic", "fbb1c81c71de579dffff850399c1cb4fec95b12d7a66596483f12e997b26c7c4"),
        ("alice", "ssh:work", "8690e0a0f204b90a8fbca7895532d349f907caff58c79266911bd6ad40ae10e4"),
        ("bob", "restic", "19c4a6dd03c36494c85df2c29b904430978ceda4ef2526df901914b9a72866d1"),
        ("alice", "age", "07901ab0a2a85d5b044cd747175893ae112fd6d42df29f3466e51c602fade7ac"),
    ])
    func matchesThePublishedVectors(user: String, application: String, expected: String) throws {
        #expect(try hexKey(user: user, application: application, vaultKey: vectorVaultKey()) == expected)
    }

    @Test func anotherVaultKeyGivesAnotherKey() throws {
        let other = SecretBytes(count: 32) { bytes in for index in 0..<32 { bytes[index] = 0xFF } }
        #expect(
            try hexKey(user: "alice", application: "restic", vaultKey: other)
                == "1ecd8c17172acac78471de09fe30bc7688dba5a7ed58556a33d92f30fb0e9594")
    }

    @Test func theContextIsLengthPrefixedAndVersioned() throws {
        let context = ApplicationKeys.context(user: "alice", application: try #require(ApplicationName("restic")))
        #expect(
            hexText(context)
                == "001b746f6b656e70696e2f6170706c69636174696f6e2d6b65792f76310005616c6963650006726573746963")
        // The lengths keep the fields apart: ("ab", "c") and ("a", "bc") are different messages.
        #expect(
            ApplicationKeys.context(user: "ab", application: try #require(ApplicationName("c")))
                != ApplicationKeys.context(user: "a", application: try #require(ApplicationName("bc"))))
    }

    @Test(arguments: ["restic", "ssh:work", "age", "0", "a.b_c:d-e", String(repeating: "a", count: 64)])
    func acceptsNames(_ name: String) {
        #expect(ApplicationName(name)?.rawValue == name)
    }

    @Test(arguments: [
        "", "Restic", "-restic", ".hidden", ":x", "_x", "a/b", "a b", "a\u{0}b", "ä", "a\n",
        String(repeating: "a", count: 65), "restic\u{301}", "ssh:WORK",
    ])
    func refusesNames(_ name: String) {
        #expect(ApplicationName(name) == nil)
    }

    @Test func encodesInGuardedMemory() throws {
        let key = vectorVaultKey()
        func text(_ encoding: KeyEncoding) -> String {
            let encoded = encoding.encode(key)
            return encoded.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        }
        #expect(text(.hex) == hexText(0..<32))
        #expect(text(.base64) == Data(0..<32).base64EncodedString())
        #expect(KeyEncoding.raw.encode(key).withUnsafeBytes { [UInt8]($0) } == Array(0..<32))
    }

    @Test func decodesHexOfTheRightLengthOnly() throws {
        func decode(_ text: String) -> [UInt8]? {
            var bytes = Array(text.utf8)
            let secret = SecretBytes(consuming: &bytes)
            guard let key = KeyEncoding.decodeHex(secret, count: 4) else { return nil }
            return key.withUnsafeBytes { [UInt8]($0) }
        }
        #expect(decode("0a1b2c3d") == [0x0A, 0x1B, 0x2C, 0x3D])
        #expect(decode("0a1b2c") == nil)
        #expect(decode("0a1b2c3d4e") == nil)
        #expect(decode("0a1b2cxx") == nil)
        #expect(decode("0a 1b2c3") == nil)
    }
}

/// Lower-case hex of `bytes`.
private func hexText(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] })
}
