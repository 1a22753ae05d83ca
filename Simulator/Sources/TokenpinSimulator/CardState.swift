import FoundationEssentials
import TokenpinCardCrypto

/// One of the card's three key slots. OpenPGP card 3.4.1, §4.4.3.7 and §7.2.14.
package enum KeySlot: Int, CaseIterable, Sendable, Codable {
    /// The signature key (PSO:COMPUTE DIGITAL SIGNATURE).
    case signature = 0
    /// The decryption key (PSO:DECIPHER).
    case decryption = 1
    /// The authentication key (INTERNAL AUTHENTICATE).
    case authentication = 2

    /// The control reference template tag that names the slot: `B6`, `B8`, `A4`.
    package var crtTag: UInt8 { [0xB6, 0xB8, 0xA4][rawValue] }
    /// The algorithm attributes data object: `C1`, `C2`, `C3`.
    package var attributesTag: UInt32 { [0xC1, 0xC2, 0xC3][rawValue] }
    /// The fingerprint data object: `C7`, `C8`, `C9`.
    package var fingerprintTag: UInt32 { [0xC7, 0xC8, 0xC9][rawValue] }
    /// The CA fingerprint data object: `CA`, `CB`, `CC`.
    package var caFingerprintTag: UInt32 { [0xCA, 0xCB, 0xCC][rawValue] }
    /// The generation time data object: `CE`, `CF`, `D0`.
    package var generationTimeTag: UInt32 { [0xCE, 0xCF, 0xD0][rawValue] }

    /// The slot a control reference template tag names.
    package init?(crtTag: UInt8) {
        guard let index = [0xB6, 0xB8, 0xA4].firstIndex(of: crtTag) else { return nil }
        self.init(rawValue: index)
    }
}

/// Algorithm attributes as the card stores them (`C1`-`C3`). OpenPGP card 3.4.1, §4.4.3.10.
package struct AlgorithmAttributes: Sendable, Equatable {
    /// The raw bytes: algorithm ID, then parameters.
    package var bytes: [UInt8]

    /// What the simulator can do with a key of these attributes.
    package enum Kind: Sendable, Equatable {
        /// RSA with a modulus of 2048, 3072 or 4096 bits, in any slot.
        case rsa(bits: Int)
        /// ECDH on Curve25519 (cv25519), for the decryption slot.
        case x25519
        /// EdDSA on Ed25519, for the signature and authentication slots.
        case ed25519
        /// ECDH on a NIST or brainpool curve, for the decryption slot.
        case ecdh(WeierstrassCurve)
        /// ECDSA on a NIST or brainpool curve, for the signature and authentication slots.
        case ecdsa(WeierstrassCurve)
    }

    /// The cv25519 curve OID, `1.3.6.1.4.1.3029.1.5.1`.
    package static let curve25519OID: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01]
    /// The Ed25519 curve OID, `1.3.6.1.4.1.11591.15.1`.
    package static let ed25519OID: [UInt8] = [0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01]
    /// Algorithm ID `01`: RSA.
    package static let rsaAlgorithm: UInt8 = 0x01
    /// Algorithm ID `12`: ECDH.
    package static let ecdhAlgorithm: UInt8 = 0x12
    /// Algorithm ID `13`: ECDSA.
    package static let ecdsaAlgorithm: UInt8 = 0x13
    /// Algorithm ID `16`: EdDSA.
    package static let eddsaAlgorithm: UInt8 = 0x16

    /// RSA 2048 with a 17-bit exponent field, standard import format: what a YubiKey 5 ships with.
    package static let rsa2048 = AlgorithmAttributes(bytes: [rsaAlgorithm, 0x08, 0x00, 0x00, 0x11, 0x00])
    /// ECDH on cv25519.
    package static let cv25519 = AlgorithmAttributes(bytes: [ecdhAlgorithm] + curve25519OID)
    /// EdDSA on Ed25519.
    package static let ed25519 = AlgorithmAttributes(bytes: [eddsaAlgorithm] + ed25519OID)

    /// Creates attributes from their bytes without checking them.
    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// What these attributes describe, or nil when the simulator does not support them.
    ///
    /// An ECC OID may be followed by one import-format byte (`00` or `FF`), as some hosts send. RSA takes
    /// `01 nnnn eeee [fmt]` (gpg also writes the 5-byte form) with n 2048, 3072 or 4096 and e at most 32 bits.
    package var kind: Kind? {
        guard let algorithm = bytes.first else { return nil }
        let parameters = Array(bytes.dropFirst())
        switch algorithm {
        case Self.rsaAlgorithm:
            guard parameters.count == 4 || parameters.count == 5 && [0, 1, 2, 3].contains(parameters[4]) else {
                return nil
            }
            let bits = Int(parameters[0]) << 8 | Int(parameters[1])
            let exponentBits = Int(parameters[2]) << 8 | Int(parameters[3])
            guard RSAKeys.supportedModulusBits.contains(bits), (17...32).contains(exponentBits) else { return nil }
            return .rsa(bits: bits)
        case Self.ecdhAlgorithm where Self.matches(parameters, oid: Self.curve25519OID):
            return .x25519
        case Self.eddsaAlgorithm where Self.matches(parameters, oid: Self.ed25519OID):
            return .ed25519
        case Self.ecdhAlgorithm, Self.ecdsaAlgorithm:
            guard let curve = WeierstrassCurve.allCases.first(where: { Self.matches(parameters, oid: $0.oid) }) else {
                return nil
            }
            return algorithm == Self.ecdhAlgorithm ? .ecdh(curve) : .ecdsa(curve)
        default:
            return nil
        }
    }

    /// Whether these attributes fit `slot`: ECDH only for decryption, EdDSA only for signing and authentication.
    package func isAllowed(in slot: KeySlot) -> Bool {
        switch (kind, slot) {
        case (.rsa?, _): return true
        case (.x25519?, .decryption), (.ecdh?, .decryption): return true
        case (.ed25519?, .signature), (.ed25519?, .authentication): return true
        case (.ecdsa?, .signature), (.ecdsa?, .authentication): return true
        default: return false
        }
    }

    private static func matches(_ parameters: [UInt8], oid: [UInt8]) -> Bool {
        if parameters == oid { return true }
        return parameters.count == oid.count + 1 && Array(parameters.prefix(oid.count)) == oid
            && (parameters.last == 0x00 || parameters.last == 0xFF)
    }
}

/// Where a key on the card came from, as the key information DO `DE` reports it.
package enum KeyOrigin: UInt8, Sendable, Codable {
    /// No key in the slot.
    case none = 0x00
    /// Generated on the card.
    case generated = 0x01
    /// Imported with PUT DATA (odd INS `DB`).
    case imported = 0x02
}

/// Everything the card remembers across power cycles: PINs, counters, keys and data objects.
///
/// This is what the state file holds. Canonical byte order of secrets: an X25519 secret scalar is stored as
/// RFC 7748 little-endian bytes (the order libsodium takes), an Ed25519 secret as the 32-byte RFC 8032 seed,
/// NIST and brainpool scalars big-endian, RSA keys as `91 e 92 p 93 q` (CardKeys.swift).
/// gpg imports a cv25519 scalar big-endian; the card reverses it on import, never in the file.
struct CardState: Equatable, Sendable {
    /// The state file format this code writes.
    static let currentVersion = 1

    struct Key: Equatable, Sendable {
        var attributes: AlgorithmAttributes
        var secret: [UInt8]
        var origin: KeyOrigin
        var fingerprint: [UInt8]
        var caFingerprint: [UInt8]
        var generationTime: [UInt8]

        static let factoryNew = Key(
            attributes: .rsa2048, secret: [], origin: .none,
            fingerprint: zeros(20), caFingerprint: zeros(20), generationTime: zeros(4))
    }

    enum LifeCycle: String, Codable, Sendable {
        case operational
        case terminated
    }

    var manufacturer: UInt16
    var serial: UInt32
    var lifeCycle: LifeCycle
    var pw1: [UInt8]
    var pw3: [UInt8]
    var resetCode: [UInt8]
    var pw1Retries: Int
    var resetCodeRetries: Int
    var pw3Retries: Int
    /// `C4` byte 1: `00` means PW1 (81) is valid for one signature only, `01` for several.
    var pw1ValidForSeveralSignatures: Bool
    var name: [UInt8]
    var language: [UInt8]
    var sex: [UInt8]
    var url: [UInt8]
    var loginData: [UInt8]
    var privateDOs: [[UInt8]]
    /// The cardholder certificates (`7F21`), one per instance: 0 authentication, 1 decryption, 2 signature.
    var certificates: [[UInt8]]
    var signatureCounter: Int
    var keys: [Key]
    /// The KDF-DO `F9` as last written; empty when never written (the KDF is off).
    var kdf: [UInt8] = []
    /// The PIV application's state (PIVState.swift); nil on a card without one (the OpenPGP profile).
    var piv: PIVState? = nil

    /// Factory PINs, counters and attributes, as a YubiKey 5 ships: RSA 2048 everywhere, no keys.
    static func factoryNew(serial: UInt32, manufacturer: UInt16 = CardProfile.manufacturer) -> CardState {
        CardState(
            manufacturer: manufacturer, serial: serial, lifeCycle: .operational,
            pw1: Array("123456".utf8), pw3: Array("12345678".utf8), resetCode: [],
            pw1Retries: CardProfile.maxRetries, resetCodeRetries: 0, pw3Retries: CardProfile.maxRetries,
            pw1ValidForSeveralSignatures: true, name: [], language: [], sex: [], url: [], loginData: [],
            privateDOs: [[], [], [], []], certificates: [[], [], []], signatureCounter: 0,
            keys: Array(repeating: .factoryNew, count: 3))
    }

    /// Structural checks after loading: a state that passes is one the card can run on.
    func validationProblem() -> String? {
        if keys.count != 3 { return "keys must list 3 slots, not \(keys.count)" }
        if privateDOs.count != 4 { return "privateDOs must list 4 objects, not \(privateDOs.count)" }
        for (name, count, limit) in [
            ("pw1Retries", pw1Retries, 3), ("pw3Retries", pw3Retries, 3),
            ("resetCodeRetries", resetCodeRetries, 3), ("signatureCounter", signatureCounter, 0xFFFFFF),
        ]
        where !(0...limit).contains(count) {
            return "\(name) \(count) is out of range"
        }
        if !CardProfile.pw1Lengths.contains(pw1.count) { return "pw1 has an invalid length" }
        if !CardProfile.pw3Lengths.contains(pw3.count) { return "pw3 has an invalid length" }
        if !resetCode.isEmpty && !CardProfile.resetCodeLengths.contains(resetCode.count) {
            return "resetCode has an invalid length"
        }
        if let problem = piv?.validationProblem() { return problem }
        for (index, key) in keys.enumerated() {
            guard let slot = KeySlot(rawValue: index), key.attributes.isAllowed(in: slot) else {
                return "key \(index) has unsupported algorithm attributes"
            }
            if key.fingerprint.count != 20 || key.caFingerprint.count != 20 || key.generationTime.count != 4 {
                return "key \(index) has a fingerprint or time of the wrong size"
            }
            if key.origin == .none
                ? !key.secret.isEmpty : !(key.attributes.kind?.isWellFormed(secret: key.secret) ?? false)
            {
                return "key \(index) secret does not match its origin"
            }
        }
        return nil
    }
}

func zeros(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }

extension CardState: Codable {
    private enum CodingKeys: String, CodingKey {
        case version, manufacturer, serial, lifeCycle, pw1, pw3, resetCode, pw1Retries, resetCodeRetries,
            pw3Retries, pw1ValidForSeveralSignatures, name, language, sex, url, loginData, privateDOs,
            certificate, decryptionCertificate, signatureCertificate, signatureCounter, keys, kdf, piv
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == Self.currentVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: container,
                debugDescription: "unsupported state version \(version)")
        }
        manufacturer = try container.decode(UInt16.self, forKey: .manufacturer)
        serial = try container.decode(UInt32.self, forKey: .serial)
        lifeCycle = try container.decode(LifeCycle.self, forKey: .lifeCycle)
        pw1 = try Array(container.decode(Data.self, forKey: .pw1))
        pw3 = try Array(container.decode(Data.self, forKey: .pw3))
        resetCode = try Array(container.decode(Data.self, forKey: .resetCode))
        pw1Retries = try container.decode(Int.self, forKey: .pw1Retries)
        resetCodeRetries = try container.decode(Int.self, forKey: .resetCodeRetries)
        pw3Retries = try container.decode(Int.self, forKey: .pw3Retries)
        pw1ValidForSeveralSignatures = try container.decode(Bool.self, forKey: .pw1ValidForSeveralSignatures)
        name = try Array(container.decode(Data.self, forKey: .name))
        language = try Array(container.decode(Data.self, forKey: .language))
        sex = try Array(container.decode(Data.self, forKey: .sex))
        url = try Array(container.decode(Data.self, forKey: .url))
        loginData = try Array(container.decode(Data.self, forKey: .loginData))
        privateDOs = try container.decode([Data].self, forKey: .privateDOs).map { Array($0) }
        // `certificate` is the first instance (AUT), the one a card without SELECT DATA has; the other two are
        // absent in state files written before the simulator had SELECT DATA.
        certificates = try [
            Array(container.decode(Data.self, forKey: .certificate)),
            Array(container.decodeIfPresent(Data.self, forKey: .decryptionCertificate) ?? Data()),
            Array(container.decodeIfPresent(Data.self, forKey: .signatureCertificate) ?? Data()),
        ]
        signatureCounter = try container.decode(Int.self, forKey: .signatureCounter)
        keys = try container.decode([Key].self, forKey: .keys)
        // Absent in state files written before the simulator had a KDF-DO.
        kdf = try Array(container.decodeIfPresent(Data.self, forKey: .kdf) ?? Data())
        // Absent on cards without the PIV application.
        piv = try container.decodeIfPresent(PIVState.self, forKey: .piv)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.currentVersion, forKey: .version)
        try container.encode(manufacturer, forKey: .manufacturer)
        try container.encode(serial, forKey: .serial)
        try container.encode(lifeCycle, forKey: .lifeCycle)
        try container.encode(Data(pw1), forKey: .pw1)
        try container.encode(Data(pw3), forKey: .pw3)
        try container.encode(Data(resetCode), forKey: .resetCode)
        try container.encode(pw1Retries, forKey: .pw1Retries)
        try container.encode(resetCodeRetries, forKey: .resetCodeRetries)
        try container.encode(pw3Retries, forKey: .pw3Retries)
        try container.encode(pw1ValidForSeveralSignatures, forKey: .pw1ValidForSeveralSignatures)
        try container.encode(Data(name), forKey: .name)
        try container.encode(Data(language), forKey: .language)
        try container.encode(Data(sex), forKey: .sex)
        try container.encode(Data(url), forKey: .url)
        try container.encode(Data(loginData), forKey: .loginData)
        try container.encode(privateDOs.map { Data($0) }, forKey: .privateDOs)
        try container.encode(Data(certificates[0]), forKey: .certificate)
        try container.encode(Data(certificates[1]), forKey: .decryptionCertificate)
        try container.encode(Data(certificates[2]), forKey: .signatureCertificate)
        try container.encode(signatureCounter, forKey: .signatureCounter)
        try container.encode(keys, forKey: .keys)
        try container.encode(Data(kdf), forKey: .kdf)
        try container.encodeIfPresent(piv, forKey: .piv)
    }
}

extension CardState.Key: Codable {
    private enum CodingKeys: String, CodingKey {
        case attributes, secret, origin, fingerprint, caFingerprint, generationTime
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        attributes = try AlgorithmAttributes(bytes: Array(container.decode(Data.self, forKey: .attributes)))
        secret = try Array(container.decode(Data.self, forKey: .secret))
        origin = try container.decode(KeyOrigin.self, forKey: .origin)
        fingerprint = try Array(container.decode(Data.self, forKey: .fingerprint))
        caFingerprint = try Array(container.decode(Data.self, forKey: .caFingerprint))
        generationTime = try Array(container.decode(Data.self, forKey: .generationTime))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Data(attributes.bytes), forKey: .attributes)
        try container.encode(Data(secret), forKey: .secret)
        try container.encode(origin, forKey: .origin)
        try container.encode(Data(fingerprint), forKey: .fingerprint)
        try container.encode(Data(caFingerprint), forKey: .caFingerprint)
        try container.encode(Data(generationTime), forKey: .generationTime)
    }
}
