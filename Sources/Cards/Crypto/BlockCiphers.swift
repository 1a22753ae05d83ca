internal import COpenSSL
package import TokenpinCore

/// The block ciphers a PIV card's management key uses (SP 800-78-4, table 5): 3DES (three-key TDEA) and
/// AES-128/192/256, one or more blocks in ECB mode without padding, as the challenge-response of GENERAL
/// AUTHENTICATE with the key `9B` takes them. Through libcrypto's EVP cipher API.
package enum BlockCiphers {
    /// A management key algorithm, by its PIV algorithm identifier.
    package enum Algorithm: UInt8, Sendable, CaseIterable, Codable {
        /// Three-key TDEA (`03`), 24-byte key, 8-byte blocks.
        case tripleDES = 0x03
        /// AES-128 (`08`).
        case aes128 = 0x08
        /// AES-192 (`0A`).
        case aes192 = 0x0A
        /// AES-256 (`0C`).
        case aes256 = 0x0C

        /// The key length in bytes.
        package var keyLength: Int {
            switch self {
            case .tripleDES, .aes192: 24
            case .aes128: 16
            case .aes256: 32
            }
        }

        /// The block length in bytes: the challenge's length.
        package var blockLength: Int { self == .tripleDES ? 8 : 16 }

        /// The name people know it by: 3DES, AES-128, AES-192, AES-256.
        package var name: String {
            switch self {
            case .tripleDES: "3DES"
            case .aes128: "AES-128"
            case .aes192: "AES-192"
            case .aes256: "AES-256"
            }
        }

        var cipherName: String {
            switch self {
            case .tripleDES: "DES-EDE3-ECB"
            case .aes128: "AES-128-ECB"
            case .aes192: "AES-192-ECB"
            case .aes256: "AES-256-ECB"
            }
        }
    }

    /// Encrypts whole blocks with `key` in ECB mode.
    ///
    /// The corresponding C functions are `EVP_CIPHER_fetch`, `EVP_EncryptInit_ex2`, `EVP_CIPHER_CTX_set_padding`,
    /// `EVP_EncryptUpdate` and `EVP_EncryptFinal_ex`. Throws `.invalidLength` for a key of the wrong length or
    /// data that is not a whole number of blocks.
    package static func encrypt(_ data: [UInt8], key: borrowing SecretBytes, algorithm: Algorithm)
        throws(CardCryptoError) -> [UInt8]
    {
        try run(data, key: key, algorithm: algorithm, encrypt: true)
    }

    /// Decrypts whole blocks with `key` in ECB mode; see `encrypt`.
    package static func decrypt(_ data: [UInt8], key: borrowing SecretBytes, algorithm: Algorithm)
        throws(CardCryptoError) -> [UInt8]
    {
        try run(data, key: key, algorithm: algorithm, encrypt: false)
    }

    private static func run(
        _ data: [UInt8], key: borrowing SecretBytes, algorithm: Algorithm,
        encrypt: Bool
    ) throws(CardCryptoError) -> [UInt8] {
        guard key.count == algorithm.keyLength else {
            throw CardCryptoError(
                .invalidLength, "\(algorithm.name) keys have \(algorithm.keyLength) bytes, not \(key.count)")
        }
        guard !data.isEmpty, data.count % algorithm.blockLength == 0 else {
            throw CardCryptoError(
                .invalidLength, "\(data.count) bytes are not whole \(algorithm.blockLength)-byte blocks")
        }
        guard let cipher = EVP_CIPHER_fetch(nil, algorithm.cipherName, nil) else {
            throw libcryptoError("EVP_CIPHER_fetch(\(algorithm.cipherName))")
        }
        defer { EVP_CIPHER_free(cipher) }
        guard let context = EVP_CIPHER_CTX_new() else { throw libcryptoError("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }  // clears the key schedule
        let initialised = key.withUnsafeBytes { keyBytes in
            EVP_CipherInit_ex2(
                context, cipher, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), nil,
                encrypt ? 1 : 0, nil)
        }
        guard initialised == 1, EVP_CIPHER_CTX_set_padding(context, 0) == 1 else {
            throw libcryptoError("EVP_CipherInit_ex2")
        }
        var out = [UInt8](repeating: 0, count: data.count + algorithm.blockLength)
        var written: Int32 = 0
        var final: Int32 = 0
        let status = out.withUnsafeMutableBufferPointer { buffer in
            guard EVP_CipherUpdate(context, buffer.baseAddress, &written, data, Int32(data.count)) == 1 else {
                return Int32(0)
            }
            return EVP_CipherFinal_ex(context, buffer.baseAddress! + Int(written), &final)
        }
        guard status == 1, Int(written + final) == data.count else { throw libcryptoError("EVP_CipherUpdate") }
        return Array(out.prefix(data.count))
    }
}
