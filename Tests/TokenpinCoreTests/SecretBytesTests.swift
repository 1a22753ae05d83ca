import Testing
import TokenpinTestSupport

@testable import TokenpinCore

@Suite struct SecretBytesTests {
    @Test func equalityIsByContent() {
        #expect(Bool(same(secret("123456"), secret("123456"))))
        #expect(Bool(!same(secret("123456"), secret("123457"))))
        #expect(Bool(!same(secret("123456"), secret("1234567"))))
        #expect(Bool(same(SecretBytes(count: 0), SecretBytes(count: 0))))
    }

    @Test func descriptionIsRedacted() {
        let value = secret("482916")
        #expect(!value.description.contains("482916"))
        #expect(value.description.contains("redacted"))
        #expect(!pin("482916").description.contains("482916"))
    }

    @Test func consumingWipesTheSource() {
        var bytes = Array("482916".utf8)
        let value = SecretBytes(consuming: &bytes)
        #expect(bytes.isEmpty)
        #expect(text(value) == "482916")
    }

    @Test func prefixAndDuplicateCopy() {
        let value = secret("abcdef")
        #expect(text(value.prefix(3)) == "abc")
        #expect(text(value.duplicate()) == "abcdef")
    }

    @Test func randomSecretsDiffer() {
        #expect(Bool(!same(SecureRandom.secret(32), SecureRandom.secret(32))))
        #expect(SecureRandom.bytes(16).count == 16)
    }
}

@Suite struct PrimitiveTests {
    @Test func aeadRoundTripAndTamper() throws {
        let key = SecureRandom.secret(32)
        let plain = secret("vault-key-0123456789abcdef012345")
        let nonce = SecureRandom.bytes(24)
        var sealed = try XChaCha20Poly1305.seal(plain, key: key, nonce: nonce, associatedData: [1, 2, 3])
        func open(_ bytes: [UInt8], _ ad: [UInt8]) -> String? {
            guard let plain = XChaCha20Poly1305.open(bytes, key: key, nonce: nonce, associatedData: ad) else {
                return nil
            }
            return text(plain)
        }
        #expect(open(sealed, [1, 2, 3]) == text(plain))
        #expect(open(sealed, [1, 2, 4]) == nil)
        sealed[0] ^= 1
        #expect(open(sealed, [1, 2, 3]) == nil)
        #expect(open([1, 2], []) == nil)
    }

    @Test func x25519AgreesBothWays() throws {
        let a = try X25519.generateKeyPair()
        let b = try X25519.generateKeyPair()
        let ab = try X25519.sharedSecret(secretKey: a.secretKey, peerPublicKey: b.publicKey)
        let ba = try X25519.sharedSecret(secretKey: b.secretKey, peerPublicKey: a.publicKey)
        #expect(Bool(same(ab, ba)))
        #expect {
            _ = try X25519.sharedSecret(secretKey: a.secretKey, peerPublicKey: [UInt8](repeating: 0, count: 32))
        } throws: { ($0 as? CryptoError)?.code == .invalidPublicKey }
        #expect {
            _ = try X25519.sharedSecret(secretKey: a.secretKey, peerPublicKey: [1, 2])
        } throws: { ($0 as? CryptoError)?.code == .invalidLength }
    }

    @Test func ed25519SignsAndVerifies() throws {
        let seed = SecureRandom.secret(32)
        let publicKey = try Ed25519.publicKey(forSeed: seed)
        let signature = try Ed25519.sign([1, 2, 3], seed: seed)
        #expect(Ed25519.isValidSignature(signature, for: [1, 2, 3], publicKey: publicKey))
        #expect(!Ed25519.isValidSignature(signature, for: [1, 2, 4], publicKey: publicKey))
    }

    @Test func argon2idIsDeterministicPerSalt() throws {
        let salt = SecureRandom.bytes(16)
        let a = try Argon2id.deriveKey(password: secret("482916"), salt: salt, memoryBytes: 8 << 20, passes: 1)
        let b = try Argon2id.deriveKey(password: secret("482916"), salt: salt, memoryBytes: 8 << 20, passes: 1)
        let c = try Argon2id.deriveKey(password: secret("482917"), salt: salt, memoryBytes: 8 << 20, passes: 1)
        #expect(Bool(same(a, b)))
        #expect(Bool(!same(a, c)))
        #expect {
            _ = try Argon2id.deriveKey(password: secret("1"), salt: [1], memoryBytes: 8 << 20, passes: 1)
        } throws: { ($0 as? CryptoError)?.code == .invalidLength }
    }
}
