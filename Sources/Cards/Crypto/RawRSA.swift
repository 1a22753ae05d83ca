internal import COpenSSL
package import TokenpinCore

extension RSAKeys {
    /// The raw RSA private-key operation, `m = c^d mod n`, on a block exactly as long as the modulus: what a
    /// PIV card does in GENERAL AUTHENTICATE for both signing and decryption, the host having padded the block
    /// (SP 800-73-4, part 2, §3.2.4). The answer is as long as the modulus, padding still in place.
    ///
    /// The corresponding C functions are `EVP_PKEY_decrypt_init`, `EVP_PKEY_CTX_set_rsa_padding`
    /// (`RSA_NO_PADDING`) and `EVP_PKEY_decrypt`. Throws `.invalidLength` for a block of another length and
    /// `.operationFailed` for one not below the modulus.
    package static func rawPrivate(_ block: [UInt8], with key: borrowing PrivateKey) throws(CardCryptoError)
        -> SecretBytes
    {
        let length = (key.modulusBits + 7) / 8
        guard block.count == length else {
            throw CardCryptoError(.invalidLength, "a block of \(block.count) bytes for a \(length)-byte modulus")
        }
        var written = 0
        guard let buffer = try privateOperation(block, with: key, padding: RSA_NO_PADDING, written: &written),
            written == length
        else { throw libcryptoError("raw RSA") }
        return buffer
    }

    /// The raw RSA public-key operation, `c = m^e mod n`, on a block exactly as long as the modulus (the host's
    /// side of `rawPrivate`, for a PIV client that pads a block itself and for tests).
    ///
    /// The corresponding C functions are `EVP_PKEY_encrypt_init`, `EVP_PKEY_CTX_set_rsa_padding`
    /// (`RSA_NO_PADDING`) and `EVP_PKEY_encrypt`.
    package static func rawPublic(_ block: borrowing SecretBytes, modulus: [UInt8], publicExponent: [UInt8])
        throws(CardCryptoError) -> [UInt8]
    {
        let key = try publicKeyObject(modulus: modulus, publicExponent: publicExponent)
        let length = (bitCount(modulus) + 7) / 8
        guard block.count == length else {
            throw CardCryptoError(.invalidLength, "a block of \(block.count) bytes for a \(length)-byte modulus")
        }
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_encrypt_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_NO_PADDING) == 1
        else { throw libcryptoError("raw RSA setup") }
        var out = [UInt8](repeating: 0, count: length)
        var written = length
        let status = block.withUnsafeBytes { input in
            EVP_PKEY_encrypt(
                context.pointer, &out, &written, input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count)
        }
        guard status == 1, written == length else { throw libcryptoError("raw RSA") }
        return out
    }
}
