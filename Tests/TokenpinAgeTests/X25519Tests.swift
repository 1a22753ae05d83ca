import CSodium
import Testing
import TokenpinCardCrypto
import TokenpinCore

@testable import TokenpinAge

/// age's X25519 recipient type against what age itself makes, and the primitives under it.
@Suite struct X25519Tests {
    @Test func ageSpecVector() throws {
        // c2sp.org/age's example identity and recipient.
        let identity = try Bech32.decode(
            "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX", limit: nil)
        #expect(identity.human == "age-secret-key-")
        var bytes = identity.bytes
        let recipient = try AgeX25519.recipient(of: SecretBytes(consuming: &bytes))
        #expect(recipient.description == "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj")
    }

    /// docs/security.md's vector: the application key of alice/age (vault key 00 01 ... 1f) as an age identity.
    /// The recipient was checked independently: the key as AGE-SECRET-KEY-1… through `age-keygen -y`.
    @Test func applicationKeyVector() throws {
        var vault = Array(0..<32).map(UInt8.init)
        let key = try ApplicationKeys.key(
            vaultKey: SecretBytes(consuming: &vault), user: "alice", application: ApplicationName("age")!)
        let recipient = try AgeX25519.recipient(of: key)
        #expect(recipient.description == "age1hfu2ekakmj5877kqk83a748r0wrdtqxddv4ttke96duz7cg93upqj2edyk")
        #expect(
            TokenpinAgeIdentity(recipient: recipient, user: "alice").description
                == "AGE-PLUGIN-TOKENPIN-1QXA83TXMKMW2SLM6CZC78H65UDACD4VQE44J4DWMYHFHSTMPQK8SYCTVD93K23P2AZD")
    }

    /// The file key of the fixture's native stanza, and the check that it is the file's: the header MAC.
    @Test func unwrapsWhatAgeMade() throws {
        var secretBytes = Fixture.secret
        let secret = SecretBytes(consuming: &secretBytes)
        let recipient = try AgeX25519.recipient(of: secret)
        #expect(recipient.description == Fixture.nativeRecipient)
        let other = Fixture.stanzas[0]
        let notOurs = bytes(
            AgeX25519.unwrap(
                share: AgeBase64.decode(other.share)!, body: AgeBase64.decode(other.body)!, identity: secret,
                recipient: recipient))
        #expect(notOurs == nil)
        let ours = Fixture.stanzas[1]
        let unwrapped = bytes(
            AgeX25519.unwrap(
                share: AgeBase64.decode(ours.share)!, body: AgeBase64.decode(ours.body)!, identity: secret,
                recipient: recipient))
        let fileKey = try #require(unwrapped)
        #expect(fileKey.count == 16)
        var copy = fileKey
        #expect(Self.headerMAC(fileKey: SecretBytes(consuming: &copy)) == AgeBase64.decode(Fixture.mac))
    }

    /// HMAC-SHA256 under HKDF-SHA256(file key, "", "header") over the header through `---` (c2sp.org/age).
    static func headerMAC(fileKey: borrowing SecretBytes) -> [UInt8] {
        let key = try! HKDFSHA256.derive(key: fileKey, salt: [], info: Array("header".utf8), length: 32)
        let header = Array(Fixture.header.utf8)
        var mac = [UInt8](repeating: 0, count: 32)
        var state = crypto_auth_hmacsha256_state()
        key.withUnsafeBytes { keyBytes in
            _ = crypto_auth_hmacsha256_init(
                &state, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
        }
        _ = crypto_auth_hmacsha256_update(&state, header, UInt64(header.count))
        _ = crypto_auth_hmacsha256_final(&state, &mac)
        return mac
    }

    @Test func alteredBodyOpensNothing() throws {
        var secretBytes = Fixture.secret
        let secret = SecretBytes(consuming: &secretBytes)
        let recipient = try AgeX25519.recipient(of: secret)
        var body = AgeBase64.decode(Fixture.stanzas[1].body)!
        body[0] ^= 1
        let altered = bytes(
            AgeX25519.unwrap(
                share: AgeBase64.decode(Fixture.stanzas[1].share)!, body: body, identity: secret, recipient: recipient))
        #expect(altered == nil)
        // A low-order share (zero) gives an all-zero secret: refused, never a key.
        let lowOrder = bytes(
            AgeX25519.unwrap(
                share: [UInt8](repeating: 0, count: 32), body: AgeBase64.decode(Fixture.stanzas[1].body)!,
                identity: secret, recipient: recipient))
        #expect(lowOrder == nil)
    }

    @Test func wrapThenUnwrap() throws {
        var secretBytes = [UInt8](repeating: 7, count: 32)
        let secret = SecretBytes(consuming: &secretBytes)
        let recipient = try AgeX25519.recipient(of: secret)
        var key = Array(0..<16).map(UInt8.init)
        let fileKey = SecretBytes(consuming: &key)
        let (share, body) = try AgeX25519.wrap(fileKey, to: recipient)
        let opened = bytes(AgeX25519.unwrap(share: share, body: body, identity: secret, recipient: recipient))
        #expect(opened == Array(0..<16).map(UInt8.init))
    }

    @Test func hkdfRFC5869() throws {
        var ikm = [UInt8](repeating: 0x0b, count: 22)
        let key = SecretBytes(consuming: &ikm)
        let one = try HKDFSHA256.derive(
            key: key, salt: Array(0...0x0c), info: Array(0xf0...0xf9), length: 42)
        #expect(
            one.withUnsafeBytes { Array($0) }
                == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        // Test case 3: no salt, no info.
        let three = try HKDFSHA256.derive(key: key, salt: [], info: [], length: 42)
        #expect(
            three.withUnsafeBytes { Array($0) }
                == hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
        #expect(throws: CardCryptoError.self) { _ = try HKDFSHA256.derive(key: key, salt: [], info: [], length: 0) }
    }

    @Test func chaCha20Poly1305RFC8439() throws {
        // RFC 8439 §2.8.2's AEAD vector has associated data; this checks the no-AD form against a round trip and
        // a tag that libsodium's own check refuses when altered.
        var keyBytes = Array(0x80...0x9f).map(UInt8.init)
        let key = SecretBytes(consuming: &keyBytes)
        var plain = Array("age file key....".utf8)
        let message = SecretBytes(consuming: &plain)
        let nonce = [UInt8](repeating: 0, count: 12)
        var sealed = try ChaCha20Poly1305.seal(message, key: key, nonce: nonce)
        #expect(sealed.count == 32)
        let opened = bytes(ChaCha20Poly1305.open(sealed, key: key, nonce: nonce))
        #expect(opened == message.withUnsafeBytes { Array($0) })
        sealed[31] ^= 0x80
        let refused = bytes(ChaCha20Poly1305.open(sealed, key: key, nonce: nonce))
        #expect(refused == nil)
    }

    func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
