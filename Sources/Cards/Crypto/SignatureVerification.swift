internal import COpenSSL

extension CardSignatures {
    /// Whether `der` (a DER `SEQUENCE { r, s }`, as a PIV card answers) is an ECDSA signature of `digest` by the
    /// public key `publicPoint` (`04 || x || y`) on `curve`: how a host checks a card's signature.
    ///
    /// The corresponding C functions are `EVP_PKEY_verify_init` and `EVP_PKEY_verify`. Throws
    /// `.pointNotOnCurve` for a point that is not on the curve; a signature that does not verify is `false`.
    package static func ecdsaVerify(
        der: [UInt8], digest: [UInt8], publicPoint: [UInt8],
        on curve: WeierstrassCurve
    ) throws(CardCryptoError) -> Bool {
        let key = try EllipticCurveDH.publicKeyObject(publicPoint, curve: curve)
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_verify_init(context.pointer) == 1 else { throw libcryptoError("EVP_PKEY_verify_init") }
        let result = EVP_PKEY_verify(context.pointer, der, der.count, digest, digest.count)
        ERR_clear_error()
        return result == 1
    }
}
