package import TokenpinAPDU

/// A public key as the card returns it from GENERATE ASYMMETRIC KEY PAIR.
///
/// OpenPGP card 3.4.1, §7.2.14: a public key template `7F49` holding `81` (modulus) and `82` (exponent)
/// for RSA, or `86` (the public point) for elliptic curves.
package enum CardPublicKey: Sendable, Hashable {
    /// An RSA key.
    case rsa(modulus: [UInt8], exponent: [UInt8])
    /// An elliptic curve key: the point, 32 bytes for Curve25519 and Ed25519, `04 || x || y` otherwise.
    case ecc(point: [UInt8])

    /// Parses the answer: one `7F49` object, nothing after it.
    ///
    /// Throws `APDUError` for anything else: another tag, a template with neither a point nor a modulus
    /// and exponent, empty values.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        let template = try TLV.parseOne(bytes)
        guard template.tag == DataObject.publicKey else {
            throw APDUError(.invalidTag, "expected a public key template (7F49), got \(Hex.encode(template.tagBytes))")
        }
        let objects = try template.children()
        if let point = objects.first(where: { $0.tag == DataObject.eccPoint }) {
            guard !point.value.isEmpty else { throw APDUError(.invalidLength, "empty public point") }
            self = .ecc(point: point.value)
            return
        }
        guard let modulus = objects.first(where: { $0.tag == DataObject.rsaModulus }),
            let exponent = objects.first(where: { $0.tag == DataObject.rsaExponent }),
            !modulus.value.isEmpty, !exponent.value.isEmpty
        else { throw APDUError(.invalidStructure, "public key template without a point or an RSA key") }
        self = .rsa(modulus: modulus.value, exponent: exponent.value)
    }

    /// The 32-byte Curve25519 (X25519 or Ed25519) public key, or nil when this is not one.
    ///
    /// Takes a 32-byte point, or a 33-byte point in the `40 || x` native form some cards return.
    package var curve25519: [UInt8]? {
        guard case .ecc(let point) = self else { return nil }
        if point.count == 32 { return point }
        if point.count == 33, point[0] == 0x40 { return Array(point.dropFirst()) }
        return nil
    }
}
