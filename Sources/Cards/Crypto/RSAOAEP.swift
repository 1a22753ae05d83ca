internal import COpenSSL
package import TokenpinCore

extension RSAKeys {
    /// Encrypts `message` to the public key (n, e) with RSAES-OAEP (RFC 8017, §7.1.1), SHA-1 and MGF1-SHA-1, no
    /// label: the OAEP every PKCS#11 module with `CKM_RSA_PKCS_OAEP` decrypts.
    ///
    /// The result has exactly the modulus's length. The corresponding C functions are `EVP_PKEY_encrypt_init`,
    /// `EVP_PKEY_CTX_set_rsa_padding`, `EVP_PKEY_CTX_set_rsa_oaep_md`, `EVP_PKEY_CTX_set_rsa_mgf1_md` and
    /// `EVP_PKEY_encrypt`.
    /// - Throws: as `encrypt(_:modulus:publicExponent:)`; `.invalidLength` for a message longer than the modulus's
    ///   length less 42.
    package static func encryptOAEP(
        _ message: borrowing SecretBytes, modulus: [UInt8], publicExponent: [UInt8]
    ) throws(CardCryptoError) -> [UInt8] {
        let key = try publicKeyObject(modulus: modulus, publicExponent: publicExponent)
        let length = (bitCount(modulus) + 7) / 8
        guard message.count <= length - 42 else {
            throw CardCryptoError(
                .invalidLength, "a message of \(message.count) bytes does not fit OAEP under a \(length)-byte modulus")
        }
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_encrypt_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_OAEP_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_oaep_md(context.pointer, EVP_sha1()) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md(context.pointer, EVP_sha1()) == 1
        else { throw libcryptoError("RSA-OAEP encryption setup") }
        return try encrypt(message, in: context, length: length)
    }
}
