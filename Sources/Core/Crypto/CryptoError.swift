/// A cryptographic operation that could not be carried out.
public struct CryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed.
    public enum Code: String, Sendable, Hashable {
        /// Key, nonce or salt of the wrong size.
        case invalidLength
        /// Argon2id could not run (out of memory, parameters out of range).
        case kdfFailed
        /// A public key that yields an all-zero shared secret, or is not on the curve.
        case invalidPublicKey
        /// A signature or key generation failed inside libsodium.
        case operationFailed
    }

    /// What failed.
    public var code: Code
    /// A human description, never containing secret bytes.
    public var detail: String

    /// Creates an error.
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail }
}
