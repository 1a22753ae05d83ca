import CSodium
import Testing

@testable import TokenpinCore

/// `X25519.knownLogarithm(of:)`'s prefix table against libsodium's own walk, and its confirmation.
@Suite struct X25519KnownLogarithmTests {
    /// The u-coordinates of B, 2B, ... `count`·B by libsodium: the Edwards curve walked one addition at a time and
    /// each point mapped to Montgomery u (what `knownLogarithm` computed at its first use before the table).
    static func referenceMultiples(count: Int) -> [[UInt8]] {
        var one = [UInt8](repeating: 0, count: 32)
        one[0] = 1  // little-endian scalar 1
        var base = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_ed25519_base_noclamp(&base, one) == 0 else { return [] }
        var multiples: [[UInt8]] = []
        var point = base
        for _ in 1...count {
            var u = [UInt8](repeating: 0, count: 32)
            guard crypto_sign_ed25519_pk_to_curve25519(&u, point) == 0 else { return multiples }
            multiples.append(u)
            var next = [UInt8](repeating: 0, count: 32)
            guard crypto_core_ed25519_add(&next, point, base) == 0 else { return multiples }
            point = next
        }
        return multiples
    }

    /// The walk up to one beyond the bound, computed once for the suite.
    static let reference = referenceMultiples(count: X25519.smallMultipleBound + 1)

    /// The table's prefix of a key: its first 8 bytes as a little-endian integer.
    static func prefix(_ key: [UInt8]) -> UInt64 {
        key[..<8].reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The key of the all-zero secret, by libsodium.
    static func zeroSecretKey() throws -> [UInt8] {
        var zero = [UInt8](repeating: 0, count: 32)
        return try X25519.publicKey(for: SecretBytes(consuming: &zero))
    }

    @Test func everyTableEntryIsThePrefixOfLibsodiumsMultiple() {
        #expect(Self.reference.count == X25519.smallMultipleBound + 1)
        #expect(X25519.baseMultiplePrefixes.count == X25519.smallMultipleBound)
        for (index, prefix) in X25519.baseMultiplePrefixes.enumerated() {
            #expect(prefix == Self.prefix(Self.reference[index]), "\(index + 1)·B")
            #expect(X25519.baseMultiple(index + 1) == Self.reference[index], "\(index + 1)·B")
        }
    }

    @Test func everySmallMultipleIsKnownWithItsLogarithmAndTheNextIsNot() {
        for (index, key) in Self.reference.prefix(X25519.smallMultipleBound).enumerated() {
            #expect(X25519.knownLogarithm(of: key) == String(index + 1))
        }
        #expect(X25519.knownLogarithm(of: Self.reference[X25519.smallMultipleBound]) == nil)
    }

    @Test func theZeroSecretsKeyIsTwoToThe254() throws {
        let zeroKey = try Self.zeroSecretKey()
        #expect(X25519.zeroSecretKeyPrefix == Self.prefix(zeroKey))
        #expect(X25519.knownLogarithm(of: zeroKey) == "2^254")
        var changed = zeroKey
        changed[31] ^= 0x01
        #expect(X25519.knownLogarithm(of: changed) == nil)
    }

    @Test func aKeyWithATablePrefixButAnotherRestIsNotKnown() {
        for k in [1, 2, 3, 255, 1000, X25519.smallMultipleBound] {
            for byte in [8, 20, 31] {
                var key = Self.reference[k - 1]
                key[byte] ^= 0x40
                #expect(Self.prefix(key) == X25519.baseMultiplePrefixes[k - 1])
                #expect(X25519.knownLogarithm(of: key) == nil, "\(k)·B with byte \(byte) changed")
            }
        }
        // 1·B with the top bit set: the same u for RFC 7748, not the same key bytes (as before the table).
        var high = Self.reference[0]
        high[31] |= 0x80
        #expect(X25519.knownLogarithm(of: high) == nil)
    }

    @Test func aSharedPrefixThatIsNotConfirmedIsPassedOverAndTheScanGoesOn() {
        let fiveB = Self.reference[4]
        let prefix = Self.prefix(fiveB)
        // Entry 0 (k = 1) claims 5·B's prefix: libsodium's 1·B is not 5·B, so the scan goes on to entry 4.
        #expect(X25519.knownMultiple(of: fiveB, prefix: prefix, among: [prefix, 0, 0, 0, prefix]) == 5)
        #expect(X25519.knownMultiple(of: fiveB, prefix: prefix, among: [prefix, prefix, prefix]) == nil)
        #expect(X25519.knownMultiple(of: fiveB, prefix: prefix, among: []) == nil)
    }

    @Test func randomKeysAreNeverKnown() throws {
        for _ in 0..<200 {
            #expect(X25519.knownLogarithm(of: try X25519.generateKeyPair().publicKey) == nil)
        }
        for _ in 0..<5_000 {
            #expect(X25519.knownLogarithm(of: SecureRandom.bytes(32)) == nil)
        }
    }

    @Test func keysOfAnotherLengthAreNotJudged() {
        #expect(X25519.knownLogarithm(of: Array(Self.reference[0].prefix(31))) == nil)
        #expect(X25519.knownLogarithm(of: Self.reference[0] + [0]) == nil)
        #expect(X25519.knownLogarithm(of: []) == nil)
    }
}
