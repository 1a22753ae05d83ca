internal import COpenSSL
package import TokenpinCore

/// RSA as OpenPGP cards use it for decryption: PKCS#1 v1.5 encryption to a public key (n, e), and the card's
/// side, decryption with the private key (OpenPGP card 3.4.1, §7.2.11 PSO:DECIPHER with padding indicator
/// `00`). Through libcrypto's EVP API; private parts in guarded memory, libcrypto's copies cleared when freed.
package enum RSAKeys {
    /// The smallest modulus accepted, in bits: what tokenpin binds to (RSA 2048, 3072, 4096).
    package static let minimumModulusBits = 2048
    /// The largest modulus accepted, in bits.
    package static let maximumModulusBits = 4096
    /// The key sizes OpenPGP cards generate and tokenpin binds to.
    package static let supportedModulusBits = [2048, 3072, 4096]
    /// The public exponent generated keys get: 65537.
    package static let defaultExponent: [UInt8] = [0x01, 0x00, 0x01]

    /// An RSA private key as a card keeps it: the public modulus and exponent, the two primes secret.
    package struct PrivateKey: ~Copyable, Sendable {
        /// n, big-endian, without leading zeros.
        package let modulus: [UInt8]
        /// e, big-endian, without leading zeros.
        package let publicExponent: [UInt8]
        /// p, big-endian, in guarded memory.
        package let prime1: SecretBytes
        /// q, big-endian, in guarded memory.
        package let prime2: SecretBytes

        /// The size of the modulus in bits.
        package var modulusBits: Int { RSAKeys.bitCount(modulus) }
    }

    /// A new key of `bits` bits (2048, 3072 or 4096) with e = 65537.
    ///
    /// The corresponding C functions are `EVP_PKEY_keygen_init`, `EVP_PKEY_CTX_set_rsa_keygen_bits` and
    /// `EVP_PKEY_generate`.
    package static func generate(bits: Int) throws(CardCryptoError) -> PrivateKey {
        guard supportedModulusBits.contains(bits) else {
            throw CardCryptoError(
                bits < minimumModulusBits ? .keyTooSmall : .invalidLength,
                "RSA keys of \(bits) bits are not supported (2048, 3072 or 4096)")
        }
        let context = try PKeyContext(algorithm: "RSA")
        guard EVP_PKEY_keygen_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_keygen_bits(context.pointer, Int32(bits)) == 1
        else { throw libcryptoError("RSA key generation setup") }
        let key = try context.generate()
        return PrivateKey(
            modulus: try key.number("n", secret: false).bytes(),
            publicExponent: try key.number("e", secret: false).bytes(),
            prime1: try key.number("rsa-factor1", secret: true).secretBytes(),
            prime2: try key.number("rsa-factor2", secret: true).secretBytes())
    }

    /// The key with public exponent `e` and primes `p` and `q` (as a card imports it, OpenPGP card 3.4.1,
    /// §4.4.3.12): n = p·q is computed and checked against the sizes accepted.
    ///
    /// Throws `.keyTooSmall` or `.invalidLength` for a modulus outside 2048–4096 bits and `.invalidKey` when
    /// the parts do not make a key (an even exponent, e not invertible, p = q).
    package static func privateKey(
        publicExponent: [UInt8], prime1: borrowing SecretBytes,
        prime2: borrowing SecretBytes
    ) throws(CardCryptoError) -> PrivateKey {
        let parts = try CRTParts(publicExponent: publicExponent, prime1: prime1, prime2: prime2)
        return PrivateKey(
            modulus: try parts.n.bytes(), publicExponent: try parts.e.bytes(),
            prime1: prime1.duplicate(), prime2: prime2.duplicate())
    }

    /// Encrypts `message` to the public key (n, e) with PKCS#1 v1.5 padding (RFC 8017, §7.2.1).
    ///
    /// The result has exactly the modulus's length. The corresponding C functions are `EVP_PKEY_encrypt_init`,
    /// `EVP_PKEY_CTX_set_rsa_padding` and `EVP_PKEY_encrypt`.
    /// - Throws: `.keyTooSmall` for a modulus under 2048 bits, `.invalidLength` for a larger one than 4096
    ///   bits or a message longer than the modulus's length less 11, `.invalidKey` for an even or tiny exponent.
    package static func encrypt(
        _ message: borrowing SecretBytes, modulus: [UInt8],
        publicExponent: [UInt8]
    ) throws(CardCryptoError) -> [UInt8] {
        let key = try publicKeyObject(modulus: modulus, publicExponent: publicExponent)
        let length = (bitCount(modulus) + 7) / 8
        guard message.count <= length - 11 else {
            throw CardCryptoError(
                .invalidLength, "a message of \(message.count) bytes does not fit a \(length)-byte modulus")
        }
        let context = try PKeyContext(key: key)
        guard EVP_PKEY_encrypt_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context.pointer, RSA_PKCS1_PADDING) == 1
        else { throw libcryptoError("RSA encryption setup") }
        return try encrypt(message, in: context, length: length)
    }

    /// `message` encrypted in `context`, already set up for encryption with its padding: exactly `length` bytes,
    /// the modulus's. The corresponding C function is `EVP_PKEY_encrypt`.
    static func encrypt(_ message: borrowing SecretBytes, in context: borrowing PKeyContext, length: Int)
        throws(CardCryptoError) -> [UInt8]
    {
        var out = [UInt8](repeating: 0, count: length)
        var written = out.count
        let status = message.withUnsafeBytes { input in
            EVP_PKEY_encrypt(
                context.pointer, &out, &written, input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                input.count)
        }
        guard status == 1, written == length else { throw libcryptoError("EVP_PKEY_encrypt") }
        return out
    }

    /// Decrypts a PKCS#1 v1.5 cryptogram with `key`: the message, padding removed, in guarded memory.
    ///
    /// A cryptogram shorter than the modulus is taken as the number with its leading zeros stripped (as gpg
    /// may send it). The corresponding C functions are `EVP_PKEY_decrypt_init`, `EVP_PKEY_CTX_set_rsa_padding`
    /// and `EVP_PKEY_decrypt`; every intermediate buffer is wiped.
    /// - Throws: `.invalidLength` for an empty cryptogram or one longer than the modulus, `.decryptionFailed`
    ///   when the padding is wrong (another key, a corrupted cryptogram).
    package static func decrypt(_ cryptogram: [UInt8], with key: borrowing PrivateKey) throws(CardCryptoError)
        -> SecretBytes
    {
        let length = (key.modulusBits + 7) / 8
        guard !cryptogram.isEmpty, cryptogram.count <= length else {
            throw CardCryptoError(
                .invalidLength, "a cryptogram of \(cryptogram.count) bytes for a \(length)-byte modulus")
        }
        let padded = [UInt8](repeating: 0, count: length - cryptogram.count) + cryptogram
        var written = 0
        guard let buffer = try privateOperation(padded, with: key, padding: RSA_PKCS1_PADDING, written: &written)
        else {
            ERR_clear_error()
            throw CardCryptoError(.decryptionFailed, "the cryptogram does not decrypt under this key")
        }
        return buffer.prefix(written)
    }

    /// The private-key operation on `input` (as long as the modulus) with `padding` (`RSA_PKCS1_PADDING` or
    /// `RSA_NO_PADDING`) into guarded memory; `written` is the answer's length. Nil when libcrypto refuses the
    /// input (wrong padding, a block not below the modulus); a failed setup throws.
    ///
    /// The corresponding C functions are `EVP_PKEY_decrypt_init`, `EVP_PKEY_CTX_set_rsa_padding` and
    /// `EVP_PKEY_decrypt`.
    static func privateOperation(
        _ input: [UInt8], with key: borrowing PrivateKey, padding: Int32, written: inout Int
    ) throws(CardCryptoError) -> SecretBytes? {
        let length = (key.modulusBits + 7) / 8
        let parts = try CRTParts(publicExponent: key.publicExponent, prime1: key.prime1, prime2: key.prime2)
        let object = try parts.keyObject()
        let context = try PKeyContext(key: object)
        guard EVP_PKEY_decrypt_init(context.pointer) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context.pointer, padding) == 1
        else { throw libcryptoError("RSA private-key operation setup") }
        let buffer = SecretBytes(count: length)
        var count = length
        let status = buffer.withUnsafeMutableBytes { out in
            EVP_PKEY_decrypt(
                context.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &count, input, input.count)
        }
        guard status == 1, count <= length else { return nil }
        written = count
        return buffer
    }

    // MARK: Internals

    /// The significant bits of a big-endian number.
    static func bitCount(_ bytes: [UInt8]) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (bytes.count - first - 1) * 8 + (8 - bytes[first].leadingZeroBitCount)
    }

    /// Checks the modulus size and exponent shared by public and private keys.
    static func checkPublic(modulusBits: Int, exponent: borrowing BigNumber) throws(CardCryptoError) {
        guard modulusBits >= minimumModulusBits else {
            throw CardCryptoError(
                .keyTooSmall, "an RSA modulus of \(modulusBits) bits is too small (at least \(minimumModulusBits))")
        }
        guard modulusBits <= maximumModulusBits else {
            throw CardCryptoError(
                .invalidLength, "an RSA modulus of \(modulusBits) bits is too large (at most \(maximumModulusBits))")
        }
        guard exponent.isOdd, exponent.bitCount >= 2, exponent.bitCount <= 64 else {
            throw CardCryptoError(.invalidKey, "the RSA public exponent must be odd, at least 3 and at most 64 bits")
        }
    }

    /// Checks that (n, e) is a public key tokenpin encrypts to: a modulus of 2048 to 4096 bits that is odd, and
    /// an odd exponent of at least 3 and at most 64 bits. Throws `.keyTooSmall`, `.invalidLength` or
    /// `.invalidKey` saying which.
    package static func validatePublicKey(modulus: [UInt8], publicExponent: [UInt8]) throws(CardCryptoError) {
        _ = try publicKeyObject(modulus: modulus, publicExponent: publicExponent)
    }

    /// A public key object for (n, e).
    static func publicKeyObject(modulus: [UInt8], publicExponent: [UInt8]) throws(CardCryptoError) -> PKey {
        let n = try BigNumber(modulus)
        let e = try BigNumber(publicExponent)
        try checkPublic(modulusBits: n.bitCount, exponent: e)
        guard n.isOdd else { throw CardCryptoError(.invalidKey, "the RSA modulus is even: a modulus must be odd") }
        let parameters = try ParameterList { builder throws(CardCryptoError) in
            try builder.push("n", number: n)
            try builder.push("e", number: e)
        }
        return try PKey(algorithm: "RSA", selection: KeySelection.publicKey, parameters: parameters)
    }
}

/// Every part of an RSA private key computed from e, p and q, in secure numbers.
struct CRTParts: ~Copyable {
    let n: BigNumber
    let e: BigNumber
    let d: BigNumber
    let p: BigNumber
    let q: BigNumber
    let dp: BigNumber
    let dq: BigNumber
    let qInverse: BigNumber

    /// The corresponding C functions are `BN_mul`, `BN_sub`, `BN_mod_inverse` and `BN_div`.
    init(publicExponent: [UInt8], prime1: borrowing SecretBytes, prime2: borrowing SecretBytes) throws(CardCryptoError)
    {
        let e = try BigNumber(publicExponent)
        let p = try BigNumber(secret: prime1)
        let q = try BigNumber(secret: prime2)
        let context = try BigNumberContext()
        let n = try BigNumber(secret: false)
        guard BN_mul(n.pointer, p.pointer, q.pointer, context.pointer) == 1 else { throw libcryptoError("BN_mul") }
        try RSAKeys.checkPublic(modulusBits: n.bitCount, exponent: e)
        guard p.isOdd, q.isOdd, BN_cmp(p.pointer, q.pointer) != 0 else {
            throw CardCryptoError(.invalidKey, "the RSA primes must be odd and distinct")
        }
        let pMinus1 = try BigNumber(secret: true)
        let qMinus1 = try BigNumber(secret: true)
        let phi = try BigNumber(secret: true)
        guard BN_sub(pMinus1.pointer, p.pointer, BN_value_one()) == 1,
            BN_sub(qMinus1.pointer, q.pointer, BN_value_one()) == 1,
            BN_mul(phi.pointer, pMinus1.pointer, qMinus1.pointer, context.pointer) == 1
        else { throw libcryptoError("RSA key arithmetic") }
        let d = try BigNumber(secret: true)
        let dp = try BigNumber(secret: true)
        let dq = try BigNumber(secret: true)
        let qInverse = try BigNumber(secret: true)
        guard BN_mod_inverse(d.pointer, e.pointer, phi.pointer, context.pointer) != nil,
            BN_mod_inverse(qInverse.pointer, q.pointer, p.pointer, context.pointer) != nil
        else {
            ERR_clear_error()
            throw CardCryptoError(.invalidKey, "the RSA exponent or primes do not make a key (no inverse)")
        }
        guard BN_div(nil, dp.pointer, d.pointer, pMinus1.pointer, context.pointer) == 1,
            BN_div(nil, dq.pointer, d.pointer, qMinus1.pointer, context.pointer) == 1
        else { throw libcryptoError("RSA key arithmetic") }
        self.n = n
        self.e = e
        self.p = p
        self.q = q
        self.d = d
        self.dp = dp
        self.dq = dq
        self.qInverse = qInverse
    }

    /// The key as a libcrypto object.
    func keyObject() throws(CardCryptoError) -> PKey {
        let parameters = try ParameterList { builder throws(CardCryptoError) in
            try builder.push("n", number: n)
            try builder.push("e", number: e)
            try builder.push("d", number: d)
            try builder.push("rsa-factor1", number: p)
            try builder.push("rsa-factor2", number: q)
            try builder.push("rsa-exponent1", number: dp)
            try builder.push("rsa-exponent2", number: dq)
            try builder.push("rsa-coefficient1", number: qInverse)
        }
        return try PKey(algorithm: "RSA", selection: KeySelection.keyPair, parameters: parameters)
    }
}
