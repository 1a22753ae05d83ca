import FoundationEssentials
import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

/// The fixed facts of the simulated PIV application. SP 800-73-4; piv-facts.md.
package enum PIVProfile {
    /// The PIV application's full AID `A0 00 00 03 08 00 00 10 00 01 00`; clients select it truncated to 5 or 9 bytes.
    package static let aid: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00]
    /// The application property template SELECT answers: PIX and the coexistent tag allocation authority.
    package static let applicationPropertyTemplate: [UInt8] =
        TLV(
            tag: 0x61,
            children: [
                TLV(tag: 0x4F, value: Array(aid[5...])),
                TLV(tag: 0x79, children: [TLV(tag: 0x4F, value: Array(aid.prefix(5)))]),
            ]
        ).encoded
    /// A YubiKey 5 (USB) answer to reset, TCK checked.
    package static let yubiKeyATR: [UInt8] = [
        0x3B, 0xFD, 0x13, 0x00, 0x00, 0x81, 0x31, 0xFE, 0x15, 0x80, 0x73, 0xC0, 0x21,
        0xC0, 0x57, 0x59, 0x75, 0x62, 0x69, 0x4B, 0x65, 0x79, 0x40,
    ]
    /// The firmware version GET VERSION answers: the YubiKey's (`YubiKeyDevice.firmwareVersion`, 5.4.3).
    package static let firmwareVersion: [UInt8] = YubiKeyDevice.firmwareVersion
    /// Factory PIN, PUK and management key (3DES, `01 02 … 08` three times).
    package static let defaultPIN = Array("123456".utf8)
    package static let defaultPUK = Array("12345678".utf8)
    package static let defaultManagementKey: [UInt8] = Array(1...8) + Array(1...8) + Array(1...8)
    /// PIN and PUK tries at the factory.
    package static let defaultRetries = 3
    /// PIN and PUK lengths before the `FF` padding to 8 bytes.
    package static let pinLengths = 6...8
    /// The largest data object PUT DATA stores (a YubiKey's limit for a certificate object).
    package static let maxObjectSize = 3063
    /// The discovery object `7E`: the AID and the PIN usage policy (PIV PIN only, PIV PIN primary).
    package static let discoveryObject: [UInt8] =
        TLV(tag: 0x7E, children: [TLV(tag: 0x4F, value: aid), TLV(tag: 0x5F2F, value: [0x40, 0x00])]).encoded
    /// Objects that need the PIN for GET DATA: fingerprints, facial image, printed information, iris.
    static let pinProtectedObjects: Set<UInt32> = [0x5FC103, 0x5FC108, 0x5FC109, 0x5FC121]
    /// The key references of the management key, PIN and PUK.
    static let managementKeyReference: UInt8 = 0x9B
    static let pinReference: UInt8 = 0x80
    static let pukReference: UInt8 = 0x81

    /// Whether `slot` holds an asymmetric key: `9A`, `9C`, `9D`, `9E` and the retired `82`–`95`.
    package static func isKeySlot(_ slot: UInt8) -> Bool {
        [0x9A, 0x9C, 0x9D, 0x9E].contains(slot) || (0x82...0x95).contains(slot)
    }

    /// The certificate object of a key slot: `5FC105` (9A), `5FC10A` (9C), `5FC10B` (9D), `5FC101` (9E),
    /// `5FC10D`–`5FC120` (82–95).
    package static func certificateObject(for slot: UInt8) -> UInt32? {
        switch slot {
        case 0x9A: 0x5FC105
        case 0x9C: 0x5FC10A
        case 0x9D: 0x5FC10B
        case 0x9E: 0x5FC101
        case 0x82...0x95: 0x5FC10D + UInt32(slot - 0x82)
        default: nil
        }
    }
}

/// The asymmetric algorithms the simulated PIV application generates keys for, by PIV algorithm identifier.
package enum PIVKeyAlgorithm: UInt8, Sendable, CaseIterable, Codable {
    /// RSA 2048 (`07`).
    case rsa2048 = 0x07
    /// ECC P-256 (`11`).
    case eccP256 = 0x11
    /// ECC P-384 (`14`).
    case eccP384 = 0x14

    /// The same key as the OpenPGP side stores it, for generation, public key templates and operations.
    var kind: AlgorithmAttributes.Kind {
        switch self {
        case .rsa2048: .rsa(bits: 2048)
        case .eccP256: .ecdsa(.nistP256)
        case .eccP384: .ecdsa(.nistP384)
        }
    }

    var curve: WeierstrassCurve? {
        switch self {
        case .rsa2048: nil
        case .eccP256: .nistP256
        case .eccP384: .nistP384
        }
    }
}

/// Everything the PIV application remembers, kept in the card's state file under `piv`.
struct PIVState: Equatable, Sendable {
    struct Key: Equatable, Sendable, Codable {
        var algorithm: PIVKeyAlgorithm
        /// As `CardKeys.swift` stores it: a big-endian scalar, or `91 e 92 p 93 q` for RSA.
        var secret: [UInt8]
        /// `01` generated, `02` imported (YubiKey metadata `03`).
        var origin: UInt8
        /// YubiKey PIN policy: `01` never, `02` once, `03` always.
        var pinPolicy: UInt8
        /// YubiKey touch policy: `01` never (the simulator has no button to touch).
        var touchPolicy: UInt8
    }

    /// PIN and PUK without their `FF` padding.
    var pin: [UInt8]
    var puk: [UInt8]
    var pinRetries: Int
    var pukRetries: Int
    var pinMaxRetries: Int
    var pukMaxRetries: Int
    var managementKey: [UInt8]
    var managementAlgorithm: BlockCiphers.Algorithm
    /// Key slot to key.
    var keys: [UInt8: Key]
    /// Object ID (`5FC102`) to the value of its `53` template.
    var objects: [UInt32: [UInt8]]

    /// A card as issued: a YubiKey ships with no objects (`issued: false`); a PIV card comes with a CHUID
    /// (`issuedCHUID`) naming it by a fresh GUID, as an issuer writes one.
    static func factoryNew(issued: Bool = false) -> PIVState {
        var state = PIVState(
            pin: PIVProfile.defaultPIN, puk: PIVProfile.defaultPUK, pinRetries: PIVProfile.defaultRetries,
            pukRetries: PIVProfile.defaultRetries, pinMaxRetries: PIVProfile.defaultRetries,
            pukMaxRetries: PIVProfile.defaultRetries, managementKey: PIVProfile.defaultManagementKey,
            managementAlgorithm: .tripleDES, keys: [:], objects: [:])
        if issued { state.objects[0x5FC102] = issuedCHUID(guid: SecureRandom.bytes(16)) }
        return state
    }

    /// A CHUID as SP 800-73-4 (part 1, table 9) lays it out: the placeholder FASC-N yubico-piv-tool writes, the
    /// GUID that names the card, an expiry date, an empty signature and error detection code.
    static func issuedCHUID(guid: [UInt8]) -> [UInt8] {
        let fascn: [UInt8] = [
            0xD4, 0xE7, 0x39, 0xDA, 0x73, 0x9C, 0xED, 0x39, 0xCE, 0x73, 0x9D, 0x83, 0x68, 0x58, 0x21,
            0x08, 0x42, 0x10, 0x84, 0x21, 0xC8, 0x42, 0x10, 0xC3, 0xEB,
        ]
        return TLV(tag: 0x30, value: fascn).encoded + TLV(tag: 0x34, value: guid).encoded
            + TLV(tag: 0x35, value: Array("20301231".utf8)).encoded + [0x3E, 0x00, 0xFE, 0x00]
    }

    /// The policy a slot's key gets when generation names none: PIN once, except `9C` (always) and `9E` (never).
    static func defaultPINPolicy(for slot: UInt8) -> UInt8 {
        switch slot {
        case 0x9C: 0x03
        case 0x9E: 0x01
        default: 0x02
        }
    }

    func validationProblem() -> String? {
        if !PIVProfile.pinLengths.contains(pin.count) || !PIVProfile.pinLengths.contains(puk.count) {
            return "piv pin or puk has an invalid length"
        }
        for (name, count, limit) in [
            ("piv pinRetries", pinRetries, pinMaxRetries), ("piv pukRetries", pukRetries, pukMaxRetries),
            ("piv pinMaxRetries", pinMaxRetries, 255), ("piv pukMaxRetries", pukMaxRetries, 255),
        ]
        where !(0...limit).contains(count) {
            return "\(name) \(count) is out of range"
        }
        if managementKey.count != managementAlgorithm.keyLength { return "piv managementKey has the wrong length" }
        for (slot, key) in keys {
            guard PIVProfile.isKeySlot(slot), key.algorithm.kind.isWellFormed(secret: key.secret) else {
                return "piv key \(Hex.encode([slot])) is invalid"
            }
        }
        if objects.values.contains(where: { $0.count > PIVProfile.maxObjectSize }) { return "piv object too large" }
        return nil
    }
}

extension PIVState: Codable {
    private enum CodingKeys: String, CodingKey {
        case pin, puk, pinRetries, pukRetries, pinMaxRetries, pukMaxRetries, managementKey, managementAlgorithm, keys,
            objects
    }

    /// A slot's key in the file.
    private struct SlotKey: Codable {
        var slot: UInt8
        var key: Key
    }

    /// An object in the file.
    private struct Object: Codable {
        var id: UInt32
        var value: Data
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        pin = try Array(container.decode(Data.self, forKey: .pin))
        puk = try Array(container.decode(Data.self, forKey: .puk))
        pinRetries = try container.decode(Int.self, forKey: .pinRetries)
        pukRetries = try container.decode(Int.self, forKey: .pukRetries)
        pinMaxRetries = try container.decode(Int.self, forKey: .pinMaxRetries)
        pukMaxRetries = try container.decode(Int.self, forKey: .pukMaxRetries)
        managementKey = try Array(container.decode(Data.self, forKey: .managementKey))
        managementAlgorithm = try container.decode(BlockCiphers.Algorithm.self, forKey: .managementAlgorithm)
        keys = Dictionary(
            try container.decode([SlotKey].self, forKey: .keys).map { ($0.slot, $0.key) },
            uniquingKeysWith: { a, _ in a })
        objects = Dictionary(
            try container.decode([Object].self, forKey: .objects).map { ($0.id, Array($0.value)) },
            uniquingKeysWith: { a, _ in a })
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Data(pin), forKey: .pin)
        try container.encode(Data(puk), forKey: .puk)
        try container.encode(pinRetries, forKey: .pinRetries)
        try container.encode(pukRetries, forKey: .pukRetries)
        try container.encode(pinMaxRetries, forKey: .pinMaxRetries)
        try container.encode(pukMaxRetries, forKey: .pukMaxRetries)
        try container.encode(Data(managementKey), forKey: .managementKey)
        try container.encode(managementAlgorithm, forKey: .managementAlgorithm)
        try container.encode(
            keys.sorted { $0.key < $1.key }.map { SlotKey(slot: $0.key, key: $0.value) }, forKey: .keys)
        try container.encode(
            objects.sorted { $0.key < $1.key }.map { Object(id: $0.key, value: Data($0.value)) }, forKey: .objects)
    }
}

extension PIVState.Key {
    private enum CodingKeys: String, CodingKey { case algorithm, secret, origin, pinPolicy, touchPolicy }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        algorithm = try container.decode(PIVKeyAlgorithm.self, forKey: .algorithm)
        secret = try Array(container.decode(Data.self, forKey: .secret))
        origin = try container.decode(UInt8.self, forKey: .origin)
        pinPolicy = try container.decode(UInt8.self, forKey: .pinPolicy)
        touchPolicy = try container.decode(UInt8.self, forKey: .touchPolicy)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(algorithm, forKey: .algorithm)
        try container.encode(Data(secret), forKey: .secret)
        try container.encode(origin, forKey: .origin)
        try container.encode(pinPolicy, forKey: .pinPolicy)
        try container.encode(touchPolicy, forKey: .touchPolicy)
    }
}
