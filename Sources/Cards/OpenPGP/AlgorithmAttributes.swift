package import TokenpinAPDU

/// An elliptic curve, named by its object identifier as OpenPGP (RFC 9580) and the card use it.
package struct Curve: Sendable, Hashable, CustomStringConvertible {
    /// The OID's DER content bytes (without tag and length).
    package let oid: [UInt8]

    /// Creates a curve from its OID bytes.
    package init(oid: [UInt8]) { self.oid = oid }

    /// Curve25519 for ECDH (X25519): OID 1.3.6.1.4.1.3029.1.5.1, `2B 06 01 04 01 97 55 01 05 01`.
    package static let curve25519 = Curve(oid: [0x2B, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01])
    /// Ed25519 for EdDSA: OID 1.3.6.1.4.1.11591.15.1, `2B 06 01 04 01 DA 47 0F 01`.
    package static let ed25519 = Curve(oid: [0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01])
    /// X448: OID 1.3.101.111.
    package static let x448 = Curve(oid: [0x2B, 0x65, 0x6F])
    /// Ed448: OID 1.3.101.113.
    package static let ed448 = Curve(oid: [0x2B, 0x65, 0x71])
    /// NIST P-256: OID 1.2.840.10045.3.1.7.
    package static let nistP256 = Curve(oid: [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07])
    /// NIST P-384: OID 1.3.132.0.34.
    package static let nistP384 = Curve(oid: [0x2B, 0x81, 0x04, 0x00, 0x22])
    /// NIST P-521: OID 1.3.132.0.35.
    package static let nistP521 = Curve(oid: [0x2B, 0x81, 0x04, 0x00, 0x23])
    /// brainpoolP256r1: OID 1.3.36.3.3.2.8.1.1.7.
    package static let brainpoolP256r1 = Curve(oid: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07])
    /// brainpoolP384r1: OID 1.3.36.3.3.2.8.1.1.11.
    package static let brainpoolP384r1 = Curve(oid: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B])
    /// brainpoolP512r1: OID 1.3.36.3.3.2.8.1.1.13.
    package static let brainpoolP512r1 = Curve(oid: [0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D])

    /// The curves tokenpin can name.
    package static let known: [Curve] = [
        .curve25519, .ed25519, .x448, .ed448, .nistP256, .nistP384, .nistP521,
        .brainpoolP256r1, .brainpoolP384r1, .brainpoolP512r1,
    ]

    /// The curve's usual name, or nil for an OID tokenpin does not know.
    package var name: String? {
        switch self {
        case .curve25519: "cv25519"
        case .ed25519: "ed25519"
        case .x448: "x448"
        case .ed448: "ed448"
        case .nistP256: "nistp256"
        case .nistP384: "nistp384"
        case .nistP521: "nistp521"
        case .brainpoolP256r1: "brainpoolP256r1"
        case .brainpoolP384r1: "brainpoolP384r1"
        case .brainpoolP512r1: "brainpoolP512r1"
        default: nil
        }
    }

    package var description: String { name ?? "OID " + Hex.encode(oid, separator: " ") }
}

/// The algorithm a key slot is set up for: the algorithm attributes `C1`, `C2`, `C3`.
///
/// OpenPGP card 3.4.1, §4.4.3.9. The first byte is the OpenPGP algorithm ID (`01` RSA, `12` ECDH, `13`
/// ECDSA, `16` EdDSA); RSA then gives modulus and exponent sizes and an import format, the curves their
/// OID and optionally the import format `FF` (public key included on import).
package enum AlgorithmAttributes: Sendable, Hashable, CustomStringConvertible {
    /// RSA with a modulus of `modulusBits` bits.
    case rsa(modulusBits: Int, exponentBits: Int, importFormat: UInt8?)
    /// ECDH on `curve` (decryption keys).
    case ecdh(Curve, importFormat: UInt8?)
    /// ECDSA on `curve` (signature and authentication keys).
    case ecdsa(Curve, importFormat: UInt8?)
    /// EdDSA on `curve`.
    case eddsa(Curve, importFormat: UInt8?)
    /// An algorithm ID tokenpin does not know; the raw attribute bytes.
    case other([UInt8])

    /// `01`: RSA.
    package static let rsaAlgorithmID: UInt8 = 0x01
    /// `12`: ECDH.
    package static let ecdhAlgorithmID: UInt8 = 0x12
    /// `13`: ECDSA.
    package static let ecdsaAlgorithmID: UInt8 = 0x13
    /// `16`: EdDSA.
    package static let eddsaAlgorithmID: UInt8 = 0x16
    /// `FF`: the import format byte that says the public key comes with an imported private key.
    package static let importWithPublicKey: UInt8 = 0xFF

    /// cv25519 ECDH, `12 2B 06 01 04 01 97 55 01 05 01`: what tokenpin needs in the decryption slot.
    package static let cv25519 = AlgorithmAttributes.ecdh(.curve25519, importFormat: nil)
    /// Ed25519 EdDSA, `16 2B 06 01 04 01 DA 47 0F 01`.
    package static let ed25519 = AlgorithmAttributes.eddsa(.ed25519, importFormat: nil)

    /// Parses attribute bytes (the value of `C1`, `C2` or `C3`).
    ///
    /// Throws `APDUError` for empty attributes, RSA attributes of the wrong length and empty or
    /// malformed OIDs. An unknown algorithm ID is `.other`, not an error.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        guard let algorithm = bytes.first else { throw APDUError(.truncated, "empty algorithm attributes") }
        let rest = Array(bytes.dropFirst())
        switch algorithm {
        case Self.rsaAlgorithmID:
            guard rest.count == 4 || rest.count == 5 else {
                throw APDUError(.invalidLength, "RSA attributes of \(bytes.count) bytes, expected 5 or 6")
            }
            let modulus = Int(rest[0]) << 8 | Int(rest[1])
            let exponent = Int(rest[2]) << 8 | Int(rest[3])
            guard modulus > 0, exponent > 0 else { throw APDUError(.invalidLength, "RSA attributes with a zero size") }
            self = .rsa(modulusBits: modulus, exponentBits: exponent, importFormat: rest.count == 5 ? rest[4] : nil)
        case Self.ecdhAlgorithmID, Self.ecdsaAlgorithmID, Self.eddsaAlgorithmID:
            let (curve, importFormat) = try Self.parseCurve(rest)
            switch algorithm {
            case Self.ecdhAlgorithmID: self = .ecdh(curve, importFormat: importFormat)
            case Self.ecdsaAlgorithmID: self = .ecdsa(curve, importFormat: importFormat)
            default: self = .eddsa(curve, importFormat: importFormat)
            }
        default:
            self = .other(bytes)
        }
    }

    /// Splits an OID from an optional trailing import-format byte `FF`.
    private static func parseCurve(_ bytes: [UInt8]) throws(APDUError) -> (Curve, UInt8?) {
        guard !bytes.isEmpty else { throw APDUError(.truncated, "curve attributes without an OID") }
        var oid = bytes
        var importFormat: UInt8?
        if bytes.count >= 2, bytes.last == importWithPublicKey {
            oid = Array(bytes.dropLast())
            importFormat = importWithPublicKey
        }
        // The last byte of an OID ends a sub-identifier, so its top bit is clear.
        guard let last = oid.last, last & 0x80 == 0, oid.count <= 32 else {
            throw APDUError(.invalidStructure, "malformed curve OID \(Hex.encode(oid, separator: " "))")
        }
        return (Curve(oid: oid), importFormat)
    }

    /// The attribute bytes for PUT DATA.
    package var encoded: [UInt8] {
        switch self {
        case .rsa(let modulus, let exponent, let importFormat):
            var bytes = [
                Self.rsaAlgorithmID, UInt8((modulus >> 8) & 0xFF), UInt8(modulus & 0xFF),
                UInt8((exponent >> 8) & 0xFF), UInt8(exponent & 0xFF),
            ]
            if let importFormat { bytes.append(importFormat) }
            return bytes
        case .ecdh(let curve, let importFormat):
            return [Self.ecdhAlgorithmID] + curve.oid + (importFormat.map { [$0] } ?? [])
        case .ecdsa(let curve, let importFormat):
            return [Self.ecdsaAlgorithmID] + curve.oid + (importFormat.map { [$0] } ?? [])
        case .eddsa(let curve, let importFormat):
            return [Self.eddsaAlgorithmID] + curve.oid + (importFormat.map { [$0] } ?? [])
        case .other(let bytes):
            return bytes
        }
    }

    /// Whether this is ECDH on Curve25519, whatever the import format: a key tokenpin can bind to.
    package var isCurve25519ECDH: Bool {
        if case .ecdh(.curve25519, _) = self { return true }
        return false
    }

    package var description: String {
        switch self {
        case .rsa(let modulus, _, _): "rsa\(modulus)"
        case .ecdh(let curve, _): "ECDH \(curve)"
        case .ecdsa(let curve, _): "ECDSA \(curve)"
        case .eddsa(let curve, _): "EdDSA \(curve)"
        case .other(let bytes): "algorithm \(Hex.encode(bytes, separator: " "))"
        }
    }
}
