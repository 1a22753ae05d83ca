internal import COpenSSL
package import TokenpinCore

/// The signatures an OpenPGP card makes with RSA and ECDSA keys (OpenPGP card 3.4.1, §7.2.10 PSO:COMPUTE
/// DIGITAL SIGNATURE and §7.2.13 INTERNAL AUTHENTICATE): what the simulated card needs so that gpg can
/// create and certify keys on it.
package enum CardSignatures {
    /// Signs `digestInfo` (the DigestInfo the host sends, or raw data for authentication) with PKCS#1 v1.5
    /// type 1 padding: the card's RSA signature, as long as the modulus.
    ///
    /// The corresponding C functions are `EVP_PKEY_sign_init`, `EVP_PKEY_CTX_set_rsa_padding` and
    /// `EVP_PKEY_sign`. Throws `.invalidLength` for input longer than 40% of the modulus (the card's limit).
    package static func rsaSign(_ digestInfo: [UInt8], with key: borrowing RSAKeys.PrivateKey) throws(CardCryptoError)
        -> [UInt8]
    {
        let length = (key.modulusBits + 7) / 8
        guard !digestInfo.isEmpty, digestInfo.count <= length * 2 / 5 else {
            throw CardCryptoError(.invalidLength, "\(digestInfo.count) bytes to sign with a \(length)-byte modulus")
        }
        let parts = try CRTParts(publicExponent: key.publicExponent, prime1: key.prime1, prime2: key.prime2)
        let object = try parts.keyObject()
        let context = try PKeyContext(key: object)
        guard EVP_PKEY_sign_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_PADDING) == 1
        else { throw libcryptoError("RSA signing setup") }
        var signature = [UInt8](repeating: 0, count: length)
        var written = length
        guard EVP_PKEY_sign(context.pointer, &signature, &written, digestInfo, digestInfo.count) == 1, written == length
        else {
            throw libcryptoError("EVP_PKEY_sign")
        }
        return signature
    }

    /// Signs `digest` with ECDSA: `r || s`, each the curve's coordinate length, as cards answer.
    ///
    /// The corresponding C functions are `EVP_PKEY_sign_init` and `EVP_PKEY_sign` (which answer DER, taken
    /// apart here). Throws `.invalidLength` for an empty digest or one over 64 bytes.
    package static func ecdsaSign(
        _ digest: [UInt8], privateKey: borrowing SecretBytes,
        on curve: WeierstrassCurve
    ) throws(CardCryptoError) -> [UInt8] {
        guard (1...64).contains(digest.count) else {
            throw CardCryptoError(.invalidLength, "a digest of \(digest.count) bytes")
        }
        let key = try EllipticCurveDH.privateKeyObject(privateKey, curve: curve)
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_sign_init(context.pointer) == 1 else { throw libcryptoError("EVP_PKEY_sign_init") }
        var length = 0
        guard EVP_PKEY_sign(context.pointer, nil, &length, digest, digest.count) == 1 else {
            throw libcryptoError("EVP_PKEY_sign")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_sign(context.pointer, &der, &length, digest, digest.count) == 1 else {
            throw libcryptoError("EVP_PKEY_sign")
        }
        return try rawSignature(fromDER: Array(der.prefix(length)), coordinateLength: curve.coordinateLength)
    }

    /// `r || s` from a DER `SEQUENCE { INTEGER r, INTEGER s }`.
    static func rawSignature(fromDER der: [UInt8], coordinateLength: Int) throws(CardCryptoError) -> [UInt8] {
        var index = 0
        func length() throws(CardCryptoError) -> Int {
            guard index < der.count else { throw CardCryptoError(.operationFailed, "truncated ECDSA signature") }
            let first = Int(der[index])
            index += 1
            if first < 0x80 { return first }
            let count = first & 0x7F
            guard count <= 2, index + count <= der.count else {
                throw CardCryptoError(.operationFailed, "bad DER length")
            }
            var value = 0
            for _ in 0..<count {
                value = value << 8 | Int(der[index])
                index += 1
            }
            return value
        }
        guard der.first == 0x30 else {
            throw CardCryptoError(.operationFailed, "ECDSA signature is not a DER sequence")
        }
        index = 1
        _ = try length()
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard index < der.count, der[index] == 0x02 else {
                throw CardCryptoError(.operationFailed, "bad ECDSA integer")
            }
            index += 1
            let count = try length()
            guard index + count <= der.count else { throw CardCryptoError(.operationFailed, "truncated ECDSA integer") }
            let value = Array(der[index..<(index + count)].drop { $0 == 0 })
            index += count
            guard value.count <= coordinateLength else {
                throw CardCryptoError(.operationFailed, "ECDSA integer too long")
            }
            out += [UInt8](repeating: 0, count: coordinateLength - value.count) + value
        }
        return out
    }
}
