import TokenpinCardCrypto
package import TokenpinCore

/// An age X25519 recipient, `age1…`: the public key anyone encrypts to with plain `age -r`.
package struct AgeRecipient: Equatable, Sendable, CustomStringConvertible {
    /// The X25519 public key, 32 bytes.
    package let publicKey: [UInt8]

    /// The recipient of `publicKey` (32 bytes).
    package init?(publicKey: [UInt8]) {
        guard publicKey.count == 32 else { return nil }
        self.publicKey = publicKey
    }

    /// The recipient `text` writes, or why it is none.
    package init(parsing text: String) throws(AgeKeyError) {
        let decoded: (human: String, bytes: [UInt8])
        do { decoded = try Bech32.decode(text, limit: nil) } catch {
            throw AgeKeyError("not an age recipient: \(error)")
        }
        guard decoded.human == "age", decoded.bytes.count == 32 else {
            throw AgeKeyError("not an X25519 age recipient (age1 and 32 bytes)")
        }
        publicKey = decoded.bytes
    }

    /// `age1…`, in lower case.
    package var description: String { Bech32.encode(human: "age", bytes: publicKey) }
}

/// Why a recipient or an identity could not be read.
package struct AgeKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What is wrong, for people.
    package var message: String
    /// An error saying `message`.
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// tokenpin's age identity, `AGE-PLUGIN-TOKENPIN-1…`: the line of an identity file that makes `age -d` run
/// `age-plugin-tokenpin`. It holds no secret: a version byte (1), the X25519 recipient it opens (32 bytes), and the
/// user whose record derives its key (UTF-8, the rest). The secret is the application key of `age`, released only
/// after a tokenpin verification; the recipient lets the plugin tell a stale identity (a new enrolment since) from
/// a file that is not for it, and `tokenpin age recipient --identity FILE` print the recipient without a PIN.
package struct TokenpinAgeIdentity: Equatable, Sendable, CustomStringConvertible {
    /// The plugin's name, as age finds it (`age-plugin-tokenpin`).
    package static let pluginName = "tokenpin"
    /// The Bech32 human-readable part, in lower case (age writes identities in upper case).
    package static let human = "age-plugin-tokenpin-"
    /// The version of the data this writes.
    package static let version: UInt8 = 1

    /// The recipient the identity opens.
    package let recipient: AgeRecipient
    /// The user whose record it uses.
    package let user: String

    /// The identity of `user` opening `recipient`.
    package init(recipient: AgeRecipient, user: String) {
        self.recipient = recipient
        self.user = user
    }

    /// The identity `text` writes, or why it is not one of tokenpin's.
    package init(parsing text: String) throws(AgeKeyError) {
        let decoded: (human: String, bytes: [UInt8])
        do { decoded = try Bech32.decode(text, limit: nil) } catch {
            throw AgeKeyError("not an age identity: \(error)")
        }
        guard decoded.human == Self.human else {
            throw AgeKeyError("not a tokenpin identity (\(decoded.human.uppercased())…, not AGE-PLUGIN-TOKENPIN-…)")
        }
        guard text == text.uppercased() else { throw AgeKeyError("an age identity is written in upper case") }
        let bytes = decoded.bytes
        guard let version = bytes.first, version == Self.version else {
            throw AgeKeyError(
                "a tokenpin identity of version \(bytes.first.map(String.init) ?? "none"); this plugin reads version 1"
            )
        }
        guard bytes.count > 33, let user = String(validating: bytes[33...], as: UTF8.self) else {
            throw AgeKeyError("a tokenpin identity too short for its recipient and user")
        }
        recipient = AgeRecipient(publicKey: Array(bytes[1..<33]))!
        self.user = user
    }

    /// `AGE-PLUGIN-TOKENPIN-1…`, in upper case.
    package var description: String {
        Bech32.encode(human: Self.human, bytes: [Self.version] + recipient.publicKey + Array(user.utf8)).uppercased()
    }
}

/// age's X25519 recipient type (c2sp.org/age): the stanza `-> X25519 SHARE` and a 32-byte body, the file key
/// sealed under HKDF-SHA256(X25519(secret, share), share ‖ recipient, "age-encryption.org/v1/X25519").
package enum AgeX25519 {
    /// The stanza's type.
    package static let stanzaType = "X25519"
    /// The HKDF info.
    static let info = Array("age-encryption.org/v1/X25519".utf8)
    /// A file key's length.
    package static let fileKeyLength = 16
    /// The body's length: the file key and Poly1305's tag.
    package static let bodyLength = 32

    /// The recipient of an identity secret (any 32 bytes: X25519 clamps).
    package static func recipient(of identity: borrowing SecretBytes) throws(CryptoError) -> AgeRecipient {
        AgeRecipient(publicKey: try X25519.publicKey(for: identity))!
    }

    /// The wrap key of a stanza with `share` to `recipient`, from the shared secret.
    static func wrapKey(shared: borrowing SecretBytes, share: [UInt8], recipient: AgeRecipient) throws(CardCryptoError)
        -> SecretBytes
    {
        try HKDFSHA256.derive(key: shared, salt: share + recipient.publicKey, info: info, length: 32)
    }

    /// The file key of an X25519 stanza (`share` the ephemeral share, `body` 32 bytes) under `identity`, whose
    /// recipient is `recipient`; nil when the stanza is not for this identity (or was altered).
    package static func unwrap(
        share: [UInt8], body: [UInt8], identity: borrowing SecretBytes, recipient: AgeRecipient
    ) -> SecretBytes? {
        guard share.count == 32, body.count == bodyLength else { return nil }
        // An all-zero shared secret (a low-order share) is refused by libsodium: the stanza opens nothing.
        guard let shared = try? X25519.sharedSecret(secretKey: identity, peerPublicKey: share),
            let key = try? wrapKey(shared: shared, share: share, recipient: recipient)
        else { return nil }
        return ChaCha20Poly1305.open(body, key: key, nonce: [UInt8](repeating: 0, count: 12))
    }

    /// A stanza wrapping `fileKey` to `recipient` (`share`, `body`), as `age -r` makes it.
    package static func wrap(_ fileKey: borrowing SecretBytes, to recipient: AgeRecipient) throws(CryptoError)
        -> (share: [UInt8], body: [UInt8])
    {
        let ephemeral = try X25519.generateKeyPair()
        let shared = try X25519.sharedSecret(secretKey: ephemeral.secretKey, peerPublicKey: recipient.publicKey)
        let key: SecretBytes
        do {
            key = try wrapKey(shared: shared, share: ephemeral.publicKey, recipient: recipient)
        } catch {
            throw CryptoError(.operationFailed, error.detail)
        }
        let body = try ChaCha20Poly1305.seal(fileKey, key: key, nonce: [UInt8](repeating: 0, count: 12))
        return (ephemeral.publicKey, body)
    }
}
