/// A card-algorithm operation (RSA, NIST or brainpool ECDH) that could not be carried out.
///
/// Tests compare `code`; `detail` is for people and never holds secret bytes.
package struct CardCryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed.
    package enum Code: String, Sendable, Hashable {
        /// A point, scalar, modulus or message of the wrong size.
        case invalidLength
        /// A public point that is not an uncompressed point on the curve.
        case pointNotOnCurve
        /// An RSA modulus below the smallest size tokenpin accepts.
        case keyTooSmall
        /// A key whose parts do not make a key: an even or tiny exponent, factors with no inverse, a scalar
        /// outside `1..<order`.
        case invalidKey
        /// A cryptogram that does not decrypt to a PKCS#1 v1.5 message under the key.
        case decryptionFailed
        /// libcrypto failed for another reason (its message is in `detail`).
        case operationFailed
    }

    /// What failed.
    package var code: Code
    /// A human description, never containing secret bytes.
    package var detail: String

    /// Creates an error.
    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    package var description: String { detail }
}
