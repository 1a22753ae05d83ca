internal import CSodium

/// BLAKE2b, keyed or not (`crypto_generichash`): key derivation from a shared secret or a recovery key.
public enum BLAKE2b {
    /// Hashes `message` under `key` into `length` bytes of guarded memory (16...64).
    ///
    /// The corresponding C function is `crypto_generichash`.
    public static func keyedHash(_ message: [UInt8], key: borrowing SecretBytes,
                                 length: Int = 32) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard (Int(crypto_generichash_BYTES_MIN)...Int(crypto_generichash_BYTES_MAX)).contains(length),
              (Int(crypto_generichash_KEYBYTES_MIN)...Int(crypto_generichash_KEYBYTES_MAX)).contains(key.count)
        else { throw CryptoError(.invalidLength, "BLAKE2b key or output length out of range") }
        let out = SecretBytes(count: length)
        out.withUnsafeMutableBytes { outBytes in
            key.withUnsafeBytes { keyBytes in
                _ = crypto_generichash(outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), outBytes.count,
                                       message, UInt64(message.count),
                                       keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
            }
        }
        return out
    }

    /// An unkeyed digest of public data (checksums, fingerprints).
    public static func hash(_ message: [UInt8], length: Int = 32) -> [UInt8] {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { outBytes in
            _ = crypto_generichash(outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), outBytes.count,
                                   message, UInt64(message.count), nil, 0)
        }
        return out
    }
}
