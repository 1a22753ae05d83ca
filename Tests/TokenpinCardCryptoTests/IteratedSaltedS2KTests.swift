import Testing
import TokenpinCardCrypto
import TokenpinCore

@Suite struct IteratedSaltedS2KTests {
    /// Digests computed with an independent implementation (Python's hashlib over the repeated salt || PIN).
    @Test func knownDigests() throws {
        let sha256 = try IteratedSaltedS2K.derive(
            pin: secret(Array("123456".utf8)), salt: [1, 2, 3, 4, 5, 6, 7, 8],
            count: 100_000, hash: .sha256)
        #expect(
            sha256.isEqual(to: secret(hex("8fc77436ded3825377da921acc4fb1e0c619e426b926c30f06fbb428c6ac9701"))) == true)
        // A count below one salt || PIN hashes it once, whole.
        let sha512 = try IteratedSaltedS2K.derive(
            pin: secret(Array("12345678".utf8)), salt: [8, 7, 6, 5, 4, 3, 2, 1],
            count: 3, hash: .sha512)
        #expect(
            sha512.isEqual(
                to: secret(
                    hex(
                        "df46e166ca1fb2c732070b0746f46ab3872390a496a5fc5fb2befd3775b86da5"
                            + "495a2e2aaee5498793c033e9e61afa7c226044357d1a189c60b7167cdfd5d747"))) == true)
    }

    @Test func badParametersAreRefused() throws {
        let hostile = #expect(throws: CardCryptoError.self) {
            _ = try IteratedSaltedS2K.derive(pin: secret([0x31]), salt: [1], count: Int(UInt32.max), hash: .sha256)
        }
        #expect(hostile?.code == .invalidLength)
        let noSalt = #expect(throws: CardCryptoError.self) {
            _ = try IteratedSaltedS2K.derive(pin: secret([0x31]), salt: [], count: 1000, hash: .sha256)
        }
        #expect(noSalt?.code == .invalidLength)
    }
}
