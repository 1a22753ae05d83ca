/// The keys that bind a vault slot to a card.
///
/// At binding, tokenpin makes an ephemeral X25519 key pair, agrees a secret with the card's cv25519
/// decryption key, and keeps only the ephemeral public key; at unlock the card recomputes the same secret
/// with PSO:DECIPHER after its own PIN was verified. The shared secret never leaves guarded memory.
public enum TokenKeys {
    /// The token slot's key-encryption key: keyed BLAKE2b over the shared secret, with a context naming the
    /// slot's salt, the card serial and both public keys, so a secret agreed with another card or another
    /// ephemeral key derives a different key.
    public static func tokenKey(sharedSecret: borrowing SecretBytes, binding: TokenBinding,
                                salt: [UInt8]) throws(CryptoError) -> SecretBytes {
        try BLAKE2b.keyedHash(context(label: "tokenpin/token/v1", binding: binding, salt: salt), key: sharedSecret)
    }

    /// The composite slot's key-encryption key (`mode = both`): the card's key and the PIN's Argon2id key
    /// mixed with keyed BLAKE2b, so neither alone opens the slot.
    public static func compositeKey(tokenKey: borrowing SecretBytes, pinKey: borrowing SecretBytes,
                                    binding: TokenBinding, salt: [UInt8]) throws(CryptoError) -> SecretBytes {
        try BLAKE2b.keyedHash(context: context(label: "tokenpin/composite/v1", binding: binding, salt: salt),
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
        return out
    }
}
