internal import CSodium

/// One IETF ChaCha20-Poly1305 construction of libsodium: its sizes and its two C functions, which share a signature.
///
/// Both public wrappers below go through this one path, so the guarded-memory handling and the length checks are
/// written once.
private struct AEADConstruction {
    typealias Encrypt =
        @Sendable (
            UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt64>?, UnsafePointer<UInt8>?, UInt64,
            UnsafePointer<UInt8>?, UInt64, UnsafePointer<UInt8>?, UnsafePointer<UInt8>, UnsafePointer<UInt8>
        ) -> Int32
    typealias Decrypt =
        @Sendable (
            UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>, UInt64, UnsafePointer<UInt8>?, UInt64, UnsafePointer<UInt8>, UnsafePointer<UInt8>
        ) -> Int32

    let name: String
    let keyLength: Int
    let nonceLength: Int
    let tagLength: Int
    let encrypt: Encrypt
    let decrypt: Decrypt

    static var xchacha: AEADConstruction {
        AEADConstruction(
            name: "XChaCha20-Poly1305",
            keyLength: Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES),
            nonceLength: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES),
            tagLength: Int(crypto_aead_xchacha20poly1305_ietf_ABYTES),
            encrypt: crypto_aead_xchacha20poly1305_ietf_encrypt,
            decrypt: crypto_aead_xchacha20poly1305_ietf_decrypt)
    }

    static var chacha: AEADConstruction {
        AEADConstruction(
            name: "ChaCha20-Poly1305",
            keyLength: Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES),
            nonceLength: Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES),
            tagLength: Int(crypto_aead_chacha20poly1305_ietf_ABYTES),
            encrypt: crypto_aead_chacha20poly1305_ietf_encrypt,
            decrypt: crypto_aead_chacha20poly1305_ietf_decrypt)
    }

    func seal(
        _ plaintext: borrowing SecretBytes, key: borrowing SecretBytes, nonce: [UInt8], associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard key.count == keyLength, nonce.count == nonceLength else {
            throw CryptoError(.invalidLength, "\(name) key or nonce of the wrong size")
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var outLength: UInt64 = 0
        out.withUnsafeMutableBytes { outBytes in
            plaintext.withUnsafeBytes { message in
                key.withUnsafeBytes { keyBytes in
                    _ = encrypt(
                        outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), &outLength,
                        message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
                        associatedData, UInt64(associatedData.count), nil,
                        nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return out
    }

    func open(
        _ ciphertext: [UInt8], key: borrowing SecretBytes, nonce: [UInt8], associatedData: [UInt8]
    ) -> SecretBytes? {
        Sodium.ensureReady()
        guard key.count == keyLength, nonce.count == nonceLength, ciphertext.count >= tagLength else { return nil }
        let plaintext = SecretBytes(count: ciphertext.count - tagLength)
        var plainLength: UInt64 = 0
        let status = plaintext.withUnsafeMutableBytes { out in
            key.withUnsafeBytes { keyBytes in
                decrypt(
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self), &plainLength, nil,
                    ciphertext, UInt64(ciphertext.count), associatedData, UInt64(associatedData.count),
                    nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else { return nil }
        return .some(plaintext)
    }
}

/// XChaCha20-Poly1305 (IETF), the cipher that wraps the vault key in every key slot.
public enum XChaCha20Poly1305 {
    /// The key size.
    public static var keyLength: Int { AEADConstruction.xchacha.keyLength }
    /// The nonce size; 24 bytes, so random nonces are safe.
    public static var nonceLength: Int { AEADConstruction.xchacha.nonceLength }
    /// The authentication tag size.
    public static var tagLength: Int { AEADConstruction.xchacha.tagLength }

    /// Encrypts `plaintext` under `key` with `nonce`, authenticating `associatedData`.
    ///
    /// The corresponding C function is `crypto_aead_xchacha20poly1305_ietf_encrypt`.
    public static func seal(
        _ plaintext: borrowing SecretBytes, key: borrowing SecretBytes, nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try AEADConstruction.xchacha.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
    }

    /// Decrypts and authenticates; returns nil when the key is wrong or anything was altered.
    ///
    /// The corresponding C function is `crypto_aead_xchacha20poly1305_ietf_decrypt`.
    public static func open(
        _ ciphertext: [UInt8], key: borrowing SecretBytes, nonce: [UInt8],
        associatedData: [UInt8]
    ) -> SecretBytes? {
        AEADConstruction.xchacha.open(ciphertext, key: key, nonce: nonce, associatedData: associatedData)
    }
}

/// ChaCha20-Poly1305 (IETF, RFC 8439: a 12-byte nonce), as the age file format wraps file keys with it.
public enum ChaCha20Poly1305 {
    /// The key size.
    public static var keyLength: Int { AEADConstruction.chacha.keyLength }
    /// The nonce size, 12 bytes.
    public static var nonceLength: Int { AEADConstruction.chacha.nonceLength }
    /// The authentication tag size.
    public static var tagLength: Int { AEADConstruction.chacha.tagLength }

    /// Encrypts `plaintext` under `key` with `nonce` (no associated data).
    ///
    /// The corresponding C function is `crypto_aead_chacha20poly1305_ietf_encrypt`.
    public static func seal(_ plaintext: borrowing SecretBytes, key: borrowing SecretBytes, nonce: [UInt8])
        throws(CryptoError) -> [UInt8]
    {
        try AEADConstruction.chacha.seal(plaintext, key: key, nonce: nonce, associatedData: [])
    }

    /// Decrypts and authenticates into guarded memory; nil when the key is wrong or anything was altered.
    ///
    /// The corresponding C function is `crypto_aead_chacha20poly1305_ietf_decrypt`.
    public static func open(_ ciphertext: [UInt8], key: borrowing SecretBytes, nonce: [UInt8]) -> SecretBytes? {
        AEADConstruction.chacha.open(ciphertext, key: key, nonce: nonce, associatedData: [])
    }
}
