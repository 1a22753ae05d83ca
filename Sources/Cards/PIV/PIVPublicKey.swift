package import TokenpinAPDU

/// The public key of a PIV slot, read from the slot's certificate or a YubiKey's metadata.
package enum PIVPublicKey: Sendable, Hashable {
    /// A NIST P-256 or P-384 key: `04 || x || y`.
    case ecc(algorithm: PIVAlgorithm, point: [UInt8])
    /// An RSA key.
    case rsa(modulus: [UInt8], exponent: [UInt8])

    /// The algorithm identifier GENERAL AUTHENTICATE takes for this key.
    package var algorithm: PIVAlgorithm? {
        switch self {
        case .ecc(let algorithm, _): return algorithm
        case .rsa(let modulus, _):
            let significant = modulus.drop { $0 == 0 }.count
            return PIVAlgorithm.allCases.first { $0.modulusLength == significant }
        }
    }

    // OIDs, DER content bytes.
    static let ecPublicKeyOID: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    static let p256OID: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let p384OID: [UInt8] = [0x2B, 0x81, 0x04, 0x00, 0x22]
    static let rsaEncryptionOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]

    /// The key in a public key template's content (`81 n 82 e` or `86 point`), as GENERATE answers inside
    /// `7F49` and YubiKey metadata in its tag `04`; `algorithm` says which curve a point is on.
    package init(templateContent bytes: [UInt8], algorithm: PIVAlgorithm) throws(APDUError) {
        let objects = try TLV.parseAll(bytes)
        if let coordinate = algorithm.coordinateLength {
            guard let point = objects.first(where: { $0.tag == 0x86 })?.value, point.count == 1 + 2 * coordinate,
                point[0] == 0x04
            else { throw APDUError(.invalidStructure, "no uncompressed \(algorithm) point in the public key") }
            self = .ecc(algorithm: algorithm, point: point)
            return
        }
        guard algorithm.modulusLength != nil, let modulus = objects.first(where: { $0.tag == 0x81 })?.value,
            let exponent = objects.first(where: { $0.tag == 0x82 })?.value, !modulus.isEmpty, !exponent.isEmpty
        else { throw APDUError(.invalidStructure, "no RSA modulus and exponent in the public key") }
        self = .rsa(modulus: modulus, exponent: exponent)
    }

    /// The key in an X.509 certificate (DER): the TLV walk `Certificate → tbsCertificate →
    /// subjectPublicKeyInfo` (RFC 5280, §4.1), for id-ecPublicKey on P-256 or P-384 and rsaEncryption.
    ///
    /// Throws `APDUError` for anything else: truncated DER, another key type, a curve PIV does not use.
    package init(certificate der: [UInt8]) throws(APDUError) {
        let certificate = try TLV.parseOne(der)
        guard certificate.tag == 0x30, let tbs = try certificate.children().first, tbs.tag == 0x30 else {
            throw APDUError(.invalidStructure, "not an X.509 certificate")
        }
        var fields = try tbs.children()
        if fields.first?.tag == 0xA0 { fields.removeFirst() }  // [0] version
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        guard fields.count >= 6, fields[0].tag == 0x02, fields[5].tag == 0x30 else {
            throw APDUError(.invalidStructure, "the certificate has no subjectPublicKeyInfo")
        }
        try self.init(subjectPublicKeyInfo: fields[5].value)
    }

    /// The common name (`CN`, 2.5.4.3) of an X.509 certificate's subject, nil when it has none or does not parse.
    package static func subjectCommonName(certificate der: [UInt8]) -> String? {
        guard let certificate = try? TLV.parseOne(der), let tbs = try? certificate.children().first,
            var fields = try? tbs.children()
        else { return nil }
        if fields.first?.tag == 0xA0 { fields.removeFirst() }
        guard fields.count >= 5, fields[4].tag == 0x30, let names = try? fields[4].children() else { return nil }
        for set in names {
            for attribute in (try? set.children()) ?? [] {
                guard let parts = try? attribute.children(), parts.count == 2, parts[0].value == [0x55, 0x04, 0x03]
                else { continue }
                return String(decoding: parts[1].value, as: UTF8.self)
            }
        }
        return nil
    }

    /// The key in the content of a SubjectPublicKeyInfo: `SEQUENCE { algorithm, BIT STRING key }`.
    init(subjectPublicKeyInfo content: [UInt8]) throws(APDUError) {
        let parts = try TLV.parseAll(content)
        guard parts.count == 2, parts[0].tag == 0x30, parts[1].tag == 0x03, parts[1].value.first == 0x00 else {
            throw APDUError(.invalidStructure, "malformed subjectPublicKeyInfo")
        }
        let algorithm = try parts[0].children()
        let key = Array(parts[1].value.dropFirst())
        guard let oid = algorithm.first, oid.tag == 0x06 else {
            throw APDUError(.invalidStructure, "no key algorithm OID")
        }
        switch oid.value {
        case Self.ecPublicKeyOID:
            guard algorithm.count == 2, algorithm[1].tag == 0x06 else {
                throw APDUError(.invalidStructure, "no named curve")
            }
            let curve: PIVAlgorithm
            switch algorithm[1].value {
            case Self.p256OID: curve = .eccP256
            case Self.p384OID: curve = .eccP384
            default: throw APDUError(.invalidStructure, "a curve PIV does not use")
            }
            guard key.count == 1 + 2 * (curve.coordinateLength ?? 0), key.first == 0x04 else {
                throw APDUError(.invalidLength, "the EC point is not uncompressed on \(curve)")
            }
            self = .ecc(algorithm: curve, point: key)
        case Self.rsaEncryptionOID:
            let sequence = try TLV.parseOne(key)
            let integers = try sequence.children()
            guard sequence.tag == 0x30, integers.count == 2,
                integers.allSatisfy({ $0.tag == 0x02 && !$0.value.isEmpty })
            else {
                throw APDUError(.invalidStructure, "malformed RSA public key")
            }
            self = .rsa(
                modulus: Array(integers[0].value.drop { $0 == 0 }), exponent: Array(integers[1].value.drop { $0 == 0 }))
        default:
            throw APDUError(.invalidStructure, "a key type PIV does not use")
        }
    }
}

/// What a YubiKey's GET METADATA says about a slot. piv-facts.md, YubiKey extensions.
package struct PIVSlotMetadata: Sendable, Hashable {
    /// The key's algorithm.
    package var algorithm: PIVAlgorithm
    /// PIN policy (`01` never, `02` once, `03` always) and touch policy.
    package var pinPolicy: UInt8
    package var touchPolicy: UInt8
    /// Generated on the card (`true`) or imported.
    package var generated: Bool
    /// The public key.
    package var publicKey: PIVPublicKey

    /// Parses the answer: `01` algorithm, `02` policies, `03` origin, `04` public key.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        let objects = try TLV.parseAll(bytes)
        func value(_ tag: UInt32, _ count: Int? = nil) throws(APDUError) -> [UInt8] {
            guard let found = objects.first(where: { $0.tag == tag })?.value, count.map({ found.count == $0 }) ?? true
            else {
                throw APDUError(.invalidStructure, "metadata without tag \(String(tag, radix: 16))")
            }
            return found
        }
        guard let algorithm = PIVAlgorithm(rawValue: try value(0x01, 1)[0]) else {
            throw APDUError(.invalidStructure, "metadata names an unknown algorithm")
        }
        let policy = try value(0x02, 2)
        self.algorithm = algorithm
        pinPolicy = policy[0]
        touchPolicy = policy[1]
        generated = try value(0x03, 1)[0] == 0x01
        publicKey = try PIVPublicKey(templateContent: value(0x04), algorithm: algorithm)
    }
}

/// The card holder unique identifier (CHUID, `5FC102`): the parts tokenpin uses to name a card.
package struct PIVCHUID: Sendable, Hashable {
    /// `30`: the FASC-N, 25 bytes (government cards), or empty.
    package var fascn: [UInt8]
    /// `34`: the GUID, 16 bytes, or empty.
    package var guid: [UInt8]
    /// `35`: the expiry date, `YYYYMMDD`.
    package var expiry: String

    /// Parses the value of the CHUID's `53` template.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        let objects = try TLV.parseAll(bytes)
        fascn = objects.first { $0.tag == 0x30 }?.value ?? []
        guid = objects.first { $0.tag == 0x34 }?.value ?? []
        expiry = String(decoding: objects.first { $0.tag == 0x35 }?.value ?? [], as: UTF8.self)
        guard !fascn.isEmpty || !guid.isEmpty else {
            throw APDUError(.invalidStructure, "a CHUID with neither FASC-N nor GUID")
        }
        guard guid.isEmpty || guid.count == 16 else { throw APDUError(.invalidLength, "a GUID of \(guid.count) bytes") }
    }
}
