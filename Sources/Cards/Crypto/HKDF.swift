internal import COpenSSL
package import TokenpinCore

/// HKDF-SHA256 (RFC 5869) through libcrypto's `EVP_KDF` "HKDF": libsodium 1.0.18 has none. The age file format
/// wraps each file key with a key made this way (`age-plugin-tokenpin`).
package enum HKDFSHA256 {
    /// The parameter names and the digest, as C strings that live as long as the process (the parameters keep
    /// the pointers while libcrypto reads them).
    private static let names: (digest: Int, key: Int, salt: Int, info: Int, sha256: Int, hkdf: Int) = (
        Int(bitPattern: strdup("digest")), Int(bitPattern: strdup("key")), Int(bitPattern: strdup("salt")),
        Int(bitPattern: strdup("info")), Int(bitPattern: strdup("SHA256")), Int(bitPattern: strdup("HKDF"))
    )

    private static func name(_ bits: Int) -> UnsafeMutablePointer<CChar> {
        UnsafeMutablePointer(bitPattern: bits)!
    }

    /// `length` bytes (1 to 255·32) of HKDF-SHA256 (extract and expand) of `key` with `salt` and `info`, in
    /// guarded memory.
    ///
    /// The corresponding C functions are `EVP_KDF_fetch`, `EVP_KDF_CTX_new` and `EVP_KDF_derive`.
    package static func derive(key: borrowing SecretBytes, salt: [UInt8], info: [UInt8], length: Int)
        throws(CardCryptoError) -> SecretBytes
    {
        guard length > 0, length <= 255 * 32 else {
            throw CardCryptoError(.invalidLength, "HKDF-SHA256 gives 1 to 8160 bytes, not \(length)")
        }
        guard let kdf = EVP_KDF_fetch(nil, name(names.hkdf), nil) else { throw libcryptoError("EVP_KDF_fetch HKDF") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw libcryptoError("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }
        // libcrypto wants somewhere to point at even for an empty salt or info.
        let saltLength = salt.count
        let infoLength = info.count
        var salt = salt.isEmpty ? [0] : salt
        var info = info.isEmpty ? [0] : info
        let out = SecretBytes(count: length)
        let status = key.withUnsafeBytes { keyBytes -> Int32 in
            salt.withUnsafeMutableBytes { saltBytes -> Int32 in
                info.withUnsafeMutableBytes { infoBytes -> Int32 in
                    out.withUnsafeMutableBytes { outBytes -> Int32 in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(name(names.digest), name(names.sha256), 0),
                            OSSL_PARAM_construct_octet_string(
                                name(names.key), UnsafeMutableRawPointer(mutating: keyBytes.baseAddress),
                                keyBytes.count),
                            OSSL_PARAM_construct_octet_string(
                                name(names.salt), saltBytes.baseAddress, saltLength),
                            OSSL_PARAM_construct_octet_string(
                                name(names.info), infoBytes.baseAddress, infoLength),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_KDF_derive(
                            context, outBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), outBytes.count,
                            &parameters)
                    }
                }
            }
        }
        guard status == 1 else { throw libcryptoError("HKDF-SHA256") }
        return out
    }
}
