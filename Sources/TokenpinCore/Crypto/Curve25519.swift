internal import CSodium

/// X25519 key agreement (RFC 7748) through libsodium; keys and shared secrets are raw little-endian bytes.
public enum X25519 {
    /// The size of keys and shared secrets.
    public static let keyLength = 32

    /// A key pair: the public key, and the secret scalar in guarded memory.
    public struct KeyPair: ~Copyable, Sendable {
        /// The public key, 32 bytes.
        public let publicKey: [UInt8]
        /// The secret scalar, 32 bytes of guarded memory.
        public let secretKey: SecretBytes
    }

    /// A new key pair from libsodium's CSPRNG.
    ///
    /// A random 32-byte string is a valid X25519 scalar; clamping happens inside the multiplication.
    public static func generateKeyPair() throws(CryptoError) -> KeyPair {
        let secret = SecureRandom.secret(keyLength)
        let publicKey = try publicKey(for: secret)
        return KeyPair(publicKey: publicKey, secretKey: secret)
    }

    /// The public key of a secret scalar.
    ///
    /// The corresponding C function is `crypto_scalarmult_base`.
    public static func publicKey(for secretKey: borrowing SecretBytes) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard secretKey.count == keyLength else {
            throw CryptoError(.invalidLength, "X25519 secret key must be 32 bytes")
        }
        var out = [UInt8](repeating: 0, count: keyLength)
        let status = secretKey.withUnsafeBytes { scalar in
            crypto_scalarmult_base(&out, scalar.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else { throw CryptoError(.operationFailed, "X25519 base multiplication failed") }
        return out
    }

    /// The shared secret of `secretKey` and `peerPublicKey`, in guarded memory.
    ///
    /// The corresponding C function is `crypto_scalarmult`; a low-order point (all-zero result) is refused.
    public static func sharedSecret(
        secretKey: borrowing SecretBytes,
        peerPublicKey: [UInt8]
    ) throws(CryptoError) -> SecretBytes {
        Sodium.ensureReady()
        guard secretKey.count == keyLength, peerPublicKey.count == keyLength else {
            throw CryptoError(.invalidLength, "X25519 keys must be 32 bytes")
        }
        let shared = SecretBytes(count: keyLength)
        let status = shared.withUnsafeMutableBytes { out in
            secretKey.withUnsafeBytes { scalar in
                crypto_scalarmult(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    scalar.baseAddress!.assumingMemoryBound(to: UInt8.self), peerPublicKey)
            }
        }
        guard status == 0 else { throw CryptoError(.invalidPublicKey, "X25519 peer key is a low-order point") }
        return shared
    }
}

/// Ed25519 signatures (RFC 8032) through libsodium.
public enum Ed25519 {
    /// The size of the seed and of public keys.
    public static let keyLength = 32
    /// The size of a signature.
    public static let signatureLength = 64

    /// The public key for a 32-byte seed (the secret key as OpenPGP cards and RFC 8032 store it).
    ///
    /// The corresponding C function is `crypto_sign_seed_keypair`.
    public static func publicKey(forSeed seed: borrowing SecretBytes) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard seed.count == keyLength else { throw CryptoError(.invalidLength, "Ed25519 seed must be 32 bytes") }
        var publicKey = [UInt8](repeating: 0, count: keyLength)
        let expanded = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        let status = expanded.withUnsafeMutableBytes { sk in
            seed.withUnsafeBytes { seedBytes in
                crypto_sign_seed_keypair(
                    &publicKey, sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    seedBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard status == 0 else { throw CryptoError(.operationFailed, "Ed25519 key derivation failed") }
        return publicKey
    }

    /// Signs `message` with the key for `seed`.
    ///
    /// The corresponding C function is `crypto_sign_detached`.
    public static func sign(_ message: [UInt8], seed: borrowing SecretBytes) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard seed.count == keyLength else { throw CryptoError(.invalidLength, "Ed25519 seed must be 32 bytes") }
        var publicKey = [UInt8](repeating: 0, count: keyLength)
        var signature = [UInt8](repeating: 0, count: signatureLength)
        let expanded = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES))
        let status = expanded.withUnsafeMutableBytes { sk -> Int32 in
            let skPointer = sk.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let derived = seed.withUnsafeBytes { seedBytes in
                crypto_sign_seed_keypair(
                    &publicKey, skPointer, seedBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard derived == 0 else { return derived }
            return crypto_sign_detached(&signature, nil, message, UInt64(message.count), skPointer)
        }
        guard status == 0 else { throw CryptoError(.operationFailed, "Ed25519 signing failed") }
        return signature
    }

    /// Whether `signature` is valid for `message` under `publicKey`.
    ///
    /// The corresponding C function is `crypto_sign_verify_detached`.
    public static func isValidSignature(_ signature: [UInt8], for message: [UInt8], publicKey: [UInt8]) -> Bool {
        Sodium.ensureReady()
        guard signature.count == signatureLength, publicKey.count == keyLength else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
