import TokenpinCardCrypto

/// The public attributes of a key as PKCS#11 encodes them (PKCS#11 2.40 §2.3), parsed strictly.
enum PKCS11KeyAttributes {
    /// The DER encodings of the named curves tokenpin supports (`CKA_EC_PARAMS`, an `OBJECT IDENTIFIER`).
    static let curveParameters: [(WeierstrassCurve, [UInt8])] = [
        (.nistP256, [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]),
        (.nistP384, [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]),
        (.nistP521, [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x23]),
        (.brainpoolP256r1, [0x06, 0x09, 0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07]),
        (.brainpoolP384r1, [0x06, 0x09, 0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0B]),
        (.brainpoolP512r1, [0x06, 0x09, 0x2B, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0D]),
    ]

    /// The curve `CKA_EC_PARAMS` names; only a named curve's OID, exactly, is taken (no explicit parameters).
    static func curve(parameters: [UInt8]) throws(PKCS11ModuleError) -> WeierstrassCurve {
        guard let (curve, _) = curveParameters.first(where: { $0.1 == parameters }) else {
            throw PKCS11ModuleError(
                .malformedAttribute, "the EC parameters (\(hex(parameters.prefix(24)))) name no curve tokenpin supports"
            )
        }
        return curve
    }

    /// The uncompressed point in `CKA_EC_POINT`: as the specification has it, a DER `OCTET STRING` holding
    /// `04 || x || y`, or (as some modules return it) the bare point; checked to lie on `curve`.
    ///
    /// The two forms differ in length for every curve, so neither can be taken for the other.
    static func point(_ value: [UInt8], on curve: WeierstrassCurve) throws(PKCS11ModuleError) -> [UInt8] {
        let length = curve.pointLength
        var point: [UInt8]?
        if value.count == length {
            point = value
        } else if value.count >= 2, value[0] == 0x04 {
            // DER: tag 04, then the length in short form or in one or two long-form bytes.
            var index = 1
            var content = Int(value[index])
            index += 1
            if content & 0x80 != 0 {
                let bytes = content & 0x7F
                guard (1...2).contains(bytes), value.count >= index + bytes else {
                    throw PKCS11ModuleError(.malformedAttribute, "the EC point's DER length does not parse")
                }
                content = value[index..<(index + bytes)].reduce(0) { $0 << 8 | Int($1) }
                index += bytes
            }
            if content == length, value.count == index + content { point = Array(value[index...]) }
        }
        guard let point, point.first == 0x04 else {
            throw PKCS11ModuleError(
                .malformedAttribute,
                "the EC point has \(value.count) bytes; a \(curve.rawValue) point is \(length) bytes uncompressed")
        }
        do {
            try EllipticCurveDH.validate(point: point, on: curve)
        } catch {
            throw PKCS11ModuleError(.malformedAttribute, "the EC point is not on \(curve.rawValue): \(error.detail)")
        }
        return point
    }

    /// The RSA modulus and exponent without leading zeros, checked for a size tokenpin supports (2048, 3072 or 4096
    /// bits, the top bit set) and an exponent of 1 to 8 bytes.
    static func rsa(modulus: [UInt8], exponent: [UInt8]) throws(PKCS11ModuleError) -> (
        modulus: [UInt8], exponent: [UInt8], bits: Int
    ) {
        let n = Array(modulus.drop { $0 == 0 })
        let e = Array(exponent.drop { $0 == 0 })
        let bits = n.count * 8
        guard let first = n.first, first & 0x80 != 0, RSAKeys.supportedModulusBits.contains(bits) else {
            let actual = n.first.map { n.count * 8 - $0.leadingZeroBitCount } ?? 0
            throw PKCS11ModuleError(
                .malformedAttribute,
                "an RSA \(actual)-bit key; tokenpin supports \(RSAKeys.supportedModulusBits.map(String.init).joined(separator: ", ")) bits"
            )
        }
        guard (1...8).contains(e.count), e.last.map({ $0 & 1 == 1 }) == true else {
            throw PKCS11ModuleError(.malformedAttribute, "the RSA public exponent is \(e.count) bytes or even")
        }
        return (n, e, bits)
    }

    /// Lower-case hex, for messages.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { $0 < 0x10 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// Text from a fixed-size, space-padded `CK_UTF8CHAR` field (or a `CKA_LABEL`): trailing spaces and NULs
    /// dropped, invalid UTF-8 replaced, control characters removed, so that nothing a module says can forge a line.
    static func text(_ bytes: some Collection<UInt8>) -> String {
        var bytes = Array(bytes)
        while let last = bytes.last, last == 0x20 || last == 0x00 { bytes.removeLast() }
        let decoded = String(decoding: bytes, as: UTF8.self)
        return String(String.UnicodeScalarView(decoded.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
    }
}
