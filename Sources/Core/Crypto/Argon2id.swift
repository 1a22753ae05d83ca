internal import CSodium

/// Argon2id, version 1.3, through libsodium (`crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`).
///
/// libsodium runs it with one lane (p = 1).
public enum Argon2id {
    /// The salt size libsodium requires.
    public static var saltLength: Int { Int(crypto_pwhash_SALTBYTES) }
    /// The smallest memory libsodium accepts, in bytes.
    public static var minimumMemory: Int { Int(crypto_pwhash_MEMLIMIT_MIN) }
    /// The smallest number of passes libsodium accepts for Argon2id.
    public static var minimumPasses: Int { Int(crypto_pwhash_argon2id_OPSLIMIT_MIN) }

    /// Derives `length` key bytes from `password` and `salt`.
    ///
    /// The corresponding C function is `crypto_pwhash`. The password stays in guarded memory; the derived
    /// key is returned in guarded memory.
    public static func deriveKey(
        password: borrowing SecretBytes, salt: [UInt8], memoryBytes: Int, passes: Int,
        length: Int = 32
    ) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard salt.count == saltLength else {
            throw CryptoError(.invalidLength, "Argon2id salt must be \(saltLength) bytes, not \(salt.count)")
        }
        // Compared with libsodium's bounds before any conversion, so no input traps.
        guard memoryBytes >= minimumMemory, passes >= max(1, minimumPasses) else {
            throw CryptoError(.kdfFailed, "Argon2id parameters below libsodium's minimum")
        }
        guard memoryBytes <= crypto_pwhash_memlimit_max(), passes <= crypto_pwhash_opslimit_max() else {
            throw CryptoError(.kdfFailed, "Argon2id parameters above libsodium's maximum")
        }
        guard (16...1024).contains(length) else {
            throw CryptoError(.invalidLength, "Argon2id output must be 16 to 1024 bytes, not \(length)")
        }
        let key = SecretBytes(count: length)
        let status = key.withUnsafeMutableBytes { out in
            password.withUnsafeBytes { pin in
                salt.withUnsafeBytes { saltBytes in
                    crypto_pwhash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                        pin.baseAddress!.assumingMemoryBound(to: CChar.self),
                        UInt64(pin.count),
                        saltBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        UInt64(passes), memoryBytes, crypto_pwhash_ALG_ARGON2ID13)
                }
            }
        }
        guard status == 0 else {
            throw CryptoError(.kdfFailed, "Argon2id failed (\(memoryBytes >> 20) MiB, t=\(passes)): out of memory?")
        }
        return key
    }
}
