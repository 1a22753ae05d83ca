internal import COpenSSL

/// Digests of public data (a card's public key, to name the card by), through libcrypto.
package enum PublicDigest {
    /// The SHA-256 digest of `data`, 32 bytes.
    ///
    /// For public data only: the input and the digest live in ordinary memory. The corresponding C function is
    /// `EVP_Digest`.
    package static func sha256(_ data: [UInt8]) throws(CardCryptoError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var written: UInt32 = 0
        let status = data.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { output in
                EVP_Digest(
                    input.baseAddress, input.count, output.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    &written, EVP_sha256(), nil)
            }
        }
        guard status == 1, written == 32 else { throw libcryptoError("EVP_Digest") }
        return digest
    }
}
