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

    /// Whether `publicKey` is a point of small order: every clamped scalar sends it to zero, so an agreement with
    /// it has no secret. Found by libsodium's own check (`crypto_scalarmult` refuses an all-zero result).
    public static func isSmallOrder(_ publicKey: [UInt8]) -> Bool {
        guard publicKey.count == keyLength else { return false }
        let probe = SecureRandom.secret(keyLength)
        return (try? sharedSecret(secretKey: probe, peerPublicKey: publicKey)) == nil
    }

    /// The largest multiple of the base point `knownLogarithm(of:)` looks for.
    public static let smallMultipleBound = 1024

    /// The discrete logarithm of `publicKey` when anyone can know it, as messages show it: `3` for the
    /// u-coordinate of 3·B (k·B with 1 ≤ k ≤ `smallMultipleBound`; B the base point, u = 9), `2^254` for the public
    /// key of the all-zero secret (clamped to 2^254). Nil for any other key.
    ///
    /// An agreement with such a key is computed by anyone from the challenge alone. The key's first 8 bytes are
    /// looked up in constant tables (`baseMultiplePrefixes`, `zeroSecretKeyPrefix`, written by
    /// scripts/known-multiples); a prefix found is confirmed by libsodium, all 32 bytes, before the key is called
    /// known (`crypto_scalarmult_base`, `crypto_scalarmult_ed25519_base_noclamp`,
    /// `crypto_sign_ed25519_pk_to_curve25519`). A few microseconds for a key that is not known.
    public static func knownLogarithm(of publicKey: [UInt8]) -> String? {
        guard publicKey.count == keyLength else { return nil }
        let prefix = publicKey[..<8].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        if prefix == zeroSecretKeyPrefix, zeroSecretKey() == publicKey { return "2^254" }
        return knownMultiple(of: publicKey, prefix: prefix, among: baseMultiplePrefixes).map { String($0) }
    }

    /// The k of the first entry of `prefixes` (entry i is for k = i + 1) that equals `prefix` and whose k·B is
    /// `publicKey`; nil when none is. A prefix shared with a key that is not k·B is passed over, and the scan goes
    /// on. `prefixes` is a parameter for the tests.
    static func knownMultiple(of publicKey: [UInt8], prefix: UInt64, among prefixes: [UInt64]) -> Int? {
        for (index, candidate) in prefixes.enumerated() where candidate == prefix {
            if baseMultiple(index + 1) == publicKey { return index + 1 }
        }
        return nil
    }

    /// The u-coordinate of k·B, through the birationally equivalent Edwards curve; nil if libsodium refuses.
    ///
    /// The corresponding C functions are `crypto_scalarmult_ed25519_base_noclamp` and
    /// `crypto_sign_ed25519_pk_to_curve25519`.
    static func baseMultiple(_ k: Int) -> [UInt8]? {
        Sodium.ensureReady()
        var scalar = [UInt8](repeating: 0, count: keyLength)
        for index in 0..<8 { scalar[index] = UInt8(truncatingIfNeeded: k >> (8 * index)) }  // little-endian
        var edwards = [UInt8](repeating: 0, count: keyLength)
        var u = [UInt8](repeating: 0, count: keyLength)
        guard crypto_scalarmult_ed25519_base_noclamp(&edwards, scalar) == 0,
            crypto_sign_ed25519_pk_to_curve25519(&u, edwards) == 0
        else { return nil }
        return u
    }

    /// The public key of the all-zero secret; nil if libsodium refuses.
    private static func zeroSecretKey() -> [UInt8]? {
        var zero = [UInt8](repeating: 0, count: keyLength)
        return try? publicKey(for: SecretBytes(consuming: &zero))
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
