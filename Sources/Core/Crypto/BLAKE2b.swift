internal import CSodium

/// BLAKE2b, keyed or not (`crypto_generichash`): key derivation from a shared secret or a recovery key.
public enum BLAKE2b {
    /// Hashes `message` under `key` into `length` bytes of guarded memory (16...64).
    ///
    /// The corresponding C function is `crypto_generichash`.
    public static func keyedHash(
        _ message: [UInt8], key: borrowing SecretBytes,
        length: Int = 32
    ) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard (Int(crypto_generichash_BYTES_MIN)...Int(crypto_generichash_BYTES_MAX)).contains(length),
            (Int(crypto_generichash_KEYBYTES_MIN)...Int(crypto_generichash_KEYBYTES_MAX)).contains(key.count)
        else { throw CryptoError(.invalidLength, "BLAKE2b key or output length out of range") }
        let out = SecretBytes(count: length)
        out.withUnsafeMutableBytes { outBytes in
            key.withUnsafeBytes { keyBytes in
                _ = crypto_generichash(
                    outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), outBytes.count,
                    message, UInt64(message.count),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
            }
        }
        return out
    }

    /// Hashes a public `context` and then the secret `message` under `key`, into `length` bytes of guarded
    /// memory: for mixing two secrets (the composite slot's PIN key and card key) without copying either out
    /// of guarded memory. The hash state is wiped before this returns.
    ///
    /// The corresponding C functions are `crypto_generichash_init`, `_update` and `_final`.
    public static func keyedHash(
        context: [UInt8], secretMessage: borrowing SecretBytes, key: borrowing SecretBytes,
        length: Int = 32
    ) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard (Int(crypto_generichash_BYTES_MIN)...Int(crypto_generichash_BYTES_MAX)).contains(length),
            (Int(crypto_generichash_KEYBYTES_MIN)...Int(crypto_generichash_KEYBYTES_MAX)).contains(key.count)
        else { throw CryptoError(.invalidLength, "BLAKE2b key or output length out of range") }
        let state = SecretBytes(count: crypto_generichash_statebytes())
        let out = SecretBytes(count: length)
        state.withUnsafeMutableBytes { stateBytes in
            let statePointer = OpaquePointer(stateBytes.baseAddress!)
            key.withUnsafeBytes { keyBytes in
                _ = crypto_generichash_init(
                    statePointer, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    keyBytes.count, length)
            }
            _ = crypto_generichash_update(statePointer, context, UInt64(context.count))
            secretMessage.withUnsafeBytes { message in
                _ = crypto_generichash_update(
                    statePointer, message.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    UInt64(message.count))
            }
            out.withUnsafeMutableBytes { outBytes in
                _ = crypto_generichash_final(
                    statePointer, outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    outBytes.count)
            }
        }
        return out
    }

    /// An unkeyed digest of public data (checksums, fingerprints).
    public static func hash(_ message: [UInt8], length: Int = 32) -> [UInt8] {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { outBytes in
            _ = crypto_generichash(
                outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), outBytes.count,
                message, UInt64(message.count), nil, 0)
        }
        return out
    }
}
