internal import CSodium

/// libsodium's one-time initialisation, done before the first use of any primitive.
enum Sodium {
    /// Runs `sodium_init` once per process; it is thread safe and idempotent.
    static let ready: Bool = {
        sodium_init() >= 0
    }()

    /// Ensures libsodium is initialised; a failure (no entropy source) is unrecoverable for a PIN service.
    @inline(__always)
    static func ensureReady() {
        precondition(ready, "libsodium could not initialise (no entropy source?)")
    }
}

/// Random bytes from libsodium's CSPRNG (`getrandom` on Linux).
public enum SecureRandom {
    /// Returns `count` random bytes for public values (salts, nonces, serials).
    ///
    /// The corresponding C function is `randombytes_buf`.
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ensureReady()
        var buffer = [UInt8](repeating: 0, count: count)
        buffer.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return buffer
    }

    /// Returns `count` random bytes in guarded memory, for keys.
    public static func secret(_ count: Int) -> SecretBytes {
        let secret = SecretBytes(count: count)
        secret.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return secret
    }

    /// A uniform random integer in `0..<upperBound`.
    ///
    /// The corresponding C function is `randombytes_uniform`.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ensureReady()
        return randombytes_uniform(upperBound)
    }
}
