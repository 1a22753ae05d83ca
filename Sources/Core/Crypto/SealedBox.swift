internal import CSodium

/// libsodium's sealed boxes: a message encrypted to an X25519 public key by an anonymous sender (an ephemeral key
/// pair, XSalsa20-Poly1305), which only the holder of the secret key opens. No verification is needed to seal.
public enum SealedBox {
    /// The bytes a sealed box adds to its message: the ephemeral public key and the tag.
    public static let overhead = Int(crypto_box_sealbytes())

    /// Seals `message` to `publicKey` (32 bytes); the box is `message.count + overhead` bytes.
    ///
    /// The message is read in place from guarded memory; the box holds nothing that opens without the secret key.
    /// The corresponding C function is `crypto_box_seal`.
    public static func seal(_ message: borrowing SecretBytes, to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard publicKey.count == X25519.keyLength else {
            throw CryptoError(.invalidLength, "a sealed box's public key must be 32 bytes")
        }
        guard !X25519.isSmallOrder(publicKey) else {
            throw CryptoError(.invalidPublicKey, "a sealed box's public key is a low-order point")
        }
        var box = [UInt8](repeating: 0, count: message.count + overhead)
        let status = message.withUnsafeBytes { bytes in
            crypto_box_seal(
                &box, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count), publicKey)
        }
        guard status == 0 else { throw CryptoError(.operationFailed, "crypto_box_seal failed") }
        return box
    }

    /// Opens `box` with the key pair (`publicKey`, `secretKey`) into guarded memory; a box that was not sealed to
    /// this key, or was changed in any byte, is refused (`.operationFailed`).
    ///
    /// The corresponding C function is `crypto_box_seal_open`.
    public static func open(
        _ box: [UInt8], publicKey: [UInt8], secretKey: borrowing SecretBytes
    ) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard publicKey.count == X25519.keyLength, secretKey.count == X25519.keyLength else {
            throw CryptoError(.invalidLength, "a sealed box's keys must be 32 bytes")
        }
        guard box.count >= overhead else {
            throw CryptoError(.invalidLength, "a sealed box is at least \(overhead) bytes, not \(box.count)")
        }
        let message = SecretBytes(count: box.count - overhead)
        let status = message.withUnsafeMutableBytes { out in
            secretKey.withUnsafeBytes { secret in
                crypto_box_seal_open(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    box, UInt64(box.count), publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else {
            throw CryptoError(.operationFailed, "the sealed box does not open with this key (another key, or damaged)")
        }
        return message
    }
}
