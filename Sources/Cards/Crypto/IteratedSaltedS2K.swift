internal import COpenSSL
package import TokenpinCore

/// OpenPGP's iterated and salted S2K (RFC 4880, §3.7.1.3) with SHA-256 or SHA-512, as the OpenPGP card's
/// KDF-DO (`F9`) uses it to turn a PIN into what the card stores and compares.
///
/// The hash runs over `salt || PIN` repeated until exactly `count` bytes were hashed (at least one whole
/// `salt || PIN`). The PIN and the digest stay in guarded memory; libcrypto's hash state is cleared when freed.
package enum IteratedSaltedS2K {
    /// The hash the KDF-DO names.
    package enum Hash: Sendable, Hashable {
        /// SHA-256 (KDF-DO hash `08`): a 32-byte digest.
        case sha256
        /// SHA-512 (KDF-DO hash `0A`): a 64-byte digest.
        case sha512

        /// The digest size in bytes.
        package var digestLength: Int { self == .sha256 ? 32 : 64 }
    }

    /// The largest byte count accepted: the largest OpenPGP S2K count (65,011,712), so a hostile card cannot
    /// make tokenpin hash for minutes.
    package static let maximumCount = 65_011_712

    /// The digest of `pin` under `salt` and `count`.
    ///
    /// The corresponding C functions are `EVP_DigestInit_ex`, `EVP_DigestUpdate` and `EVP_DigestFinal_ex`.
    /// Throws `.invalidLength` for an empty PIN or salt, or a count above `maximumCount`.
    package static func derive(
        pin: borrowing SecretBytes, salt: [UInt8], count: Int,
        hash: Hash
    ) throws(CardCryptoError) -> SecretBytes {
        guard pin.count > 0, !salt.isEmpty, count <= maximumCount else {
            throw CardCryptoError(.invalidLength, "S2K needs a PIN, a salt and a count up to \(maximumCount)")
        }
        guard let context = EVP_MD_CTX_new() else { throw libcryptoError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, hash == .sha256 ? EVP_sha256() : EVP_sha512(), nil) == 1 else {
            throw libcryptoError("EVP_DigestInit_ex")
        }
        let unit = salt.count + pin.count
        var remaining = max(count, unit)
        var ok = true
        pin.withUnsafeBytes { pinBytes in
            while remaining > 0, ok {
                let saltPart = min(remaining, salt.count)
                ok = ok && EVP_DigestUpdate(context, salt, saltPart) == 1
                remaining -= saltPart
                let pinPart = min(remaining, pinBytes.count)
                if pinPart > 0 { ok = ok && EVP_DigestUpdate(context, pinBytes.baseAddress, pinPart) == 1 }
                remaining -= pinPart
            }
        }
        guard ok else { throw libcryptoError("EVP_DigestUpdate") }
        let digest = SecretBytes(count: hash.digestLength)
        var written: UInt32 = 0
        let status = digest.withUnsafeMutableBytes { out in
            EVP_DigestFinal_ex(context, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &written)
        }
        guard status == 1, Int(written) == hash.digestLength else { throw libcryptoError("EVP_DigestFinal_ex") }
        return digest
    }
}
