/// The keys that bind a vault slot to a card.
///
/// At binding, tokenpin makes an ephemeral key pair, agrees a secret with the card's decryption key (X25519
/// for cv25519, ECDH for the NIST and brainpool curves) and keeps only the ephemeral public key; for an RSA
/// card key it encrypts 32 random bytes to the card's key and keeps the cryptogram. At unlock the card
/// recomputes the same secret with PSO:DECIPHER after its own PIN was verified. The secret never leaves
/// guarded memory.
public enum TokenKeys {
    /// The token slot's key-encryption key: keyed BLAKE2b over the shared secret, with a context naming the
    /// slot's salt, the card's identity (`serial`), both public keys and, for PIV, the application and slot, so
    /// a secret agreed with another card, slot or ephemeral key derives a different key.
    ///
    /// A secret longer than a BLAKE2b key (64 bytes: the 66-byte P-521 x coordinate) is first hashed whole into
    /// 64 bytes, keyed with its first 32.
    public static func tokenKey(
        sharedSecret: borrowing SecretBytes, binding: TokenBinding,
        salt: [UInt8]
    ) throws(CryptoError) -> SecretBytes {
        let context = context(label: "tokenpin/token/v1", binding: binding, salt: salt)
        guard sharedSecret.count > maximumKeyLength else { return try BLAKE2b.keyedHash(context, key: sharedSecret) }
        let compressed = try BLAKE2b.keyedHash(
            context: Array("tokenpin/token/long-secret/v1".utf8),
            secretMessage: sharedSecret, key: sharedSecret.prefix(32),
            length: maximumKeyLength)
        return try BLAKE2b.keyedHash(context, key: compressed)
    }

    /// The longest BLAKE2b key, in bytes.
    static let maximumKeyLength = 64

    /// The composite slot's key-encryption key (`mode = both`): the card's key and the PIN's Argon2id key
    /// mixed with keyed BLAKE2b, so neither alone opens the slot.
    public static func compositeKey(
        tokenKey: borrowing SecretBytes, pinKey: borrowing SecretBytes,
        binding: TokenBinding, salt: [UInt8]
    ) throws(CryptoError) -> SecretBytes {
        try BLAKE2b.keyedHash(
            context: context(label: "tokenpin/composite/v1", binding: binding, salt: salt),
            secretMessage: pinKey, key: tokenKey)
    }

    static func context(label: String, binding: TokenBinding, salt: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        func field(_ bytes: some Collection<UInt8>) {
            out += [UInt8((bytes.count >> 8) & 0xFF), UInt8(bytes.count & 0xFF)]
            out += bytes
        }
        field(Array(label.utf8))
        field(salt)
        field(Array(binding.serial.utf8))
        field(binding.cardPublicKey)
        field(binding.ephemeralPublicKey)
        // The algorithm (and an RSA key's exponent) only for bindings that name one: cv25519 contexts are unchanged.
        if let algorithm = binding.algorithm {
            field(Array(algorithm.utf8))
            field(binding.cardPublicExponent.map { [UInt8]($0) } ?? [])
        }
        // The application and slot only for bindings that name an application: OpenPGP contexts are unchanged.
        if let application = binding.application {
            field(Array(application.utf8))
            field(Array((binding.slot ?? "").utf8))
        }
        return out
    }
}
