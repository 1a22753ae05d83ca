internal import TokenpinAPDU

/// The PIV application's identifiers, instructions and references. SP 800-73-4; piv-facts.md.
package enum PIVApplicationID {
    /// The AID as clients send it in SELECT: the RID and PIX prefix `A0 00 00 03 08` (cards take it truncated).
    package static let selectAID: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x08]
    /// The full AID `A0 00 00 03 08 00 00 10 00 01 00`.
    package static let fullAID: [UInt8] = [0xA0, 0x00, 0x00, 0x03, 0x08, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00]
}

/// Instruction bytes the session sends.
enum PIVCommand {
    static let select: UInt8 = 0xA4
    static let getData: UInt8 = 0xCB
    static let putData: UInt8 = 0xDB
    static let generateKeyPair: UInt8 = 0x47
    static let verify: UInt8 = 0x20
    static let changeReferenceData: UInt8 = 0x24
    static let resetRetryCounter: UInt8 = 0x2C
    static let generalAuthenticate: UInt8 = 0x87
    static let getResponse: UInt8 = 0xC0
    static let getVersion: UInt8 = 0xFD
    static let getSerial: UInt8 = 0xF8
    static let getMetadata: UInt8 = 0xF7
    static let setManagementKey: UInt8 = 0xFF

    /// How messages name the commands: the interindustry ones and the YubiKey's `GET VERSION`, `GET SERIAL`,
    /// `GET METADATA`, `SET MANAGEMENT KEY`.
    static let names = InstructionNames.iso.adding([
        getVersion: "GET VERSION", getSerial: "GET SERIAL", getMetadata: "GET METADATA",
        setManagementKey: "SET MANAGEMENT KEY",
    ])
}

/// A key slot (key reference) of the PIV application.
package struct PIVSlot: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package let rawValue: UInt8

    /// A slot for a key reference that holds an asymmetric key (`9A`, `9C`, `9D`, `9E`, `82`–`95`); nil otherwise.
    package init?(rawValue: UInt8) {
        guard [0x9A, 0x9C, 0x9D, 0x9E].contains(rawValue) || (0x82...0x95).contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// `9A`: PIV authentication.
    package static let authentication = PIVSlot(rawValue: 0x9A)!
    /// `9C`: digital signature.
    package static let signature = PIVSlot(rawValue: 0x9C)!
    /// `9D`: key management (decryption and key agreement), the slot tokenpin binds to by default.
    package static let keyManagement = PIVSlot(rawValue: 0x9D)!
    /// `9E`: card authentication.
    package static let cardAuthentication = PIVSlot(rawValue: 0x9E)!

    /// Retired key management slot `n` (1–20): `82`–`95`.
    package static func retired(_ number: Int) -> PIVSlot? {
        guard (1...20).contains(number) else { return nil }
        return PIVSlot(rawValue: UInt8(0x81 + number))
    }

    /// Whether this slot is for key management (9D or retired), the slots whose keys decrypt and agree keys.
    package var isKeyManagement: Bool { rawValue == 0x9D || (0x82...0x95).contains(rawValue) }

    /// The data object holding the slot's certificate: `5FC105` (9A), `5FC10A` (9C), `5FC10B` (9D),
    /// `5FC101` (9E), `5FC10D`–`5FC120` (82–95).
    package var certificateObject: UInt32 {
        switch rawValue {
        case 0x9A: 0x5FC105
        case 0x9C: 0x5FC10A
        case 0x9D: 0x5FC10B
        case 0x9E: 0x5FC101
        default: 0x5FC10D + UInt32(rawValue - 0x82)
        }
    }

    package var description: String { String(rawValue, radix: 16, uppercase: true) }
}

/// Data object identifiers. SP 800-73-4, part 1, table 3.
package enum PIVObjectID {
    package static let discovery: UInt32 = 0x7E
    package static let cardCapabilityContainer: UInt32 = 0x5FC107
    package static let chuid: UInt32 = 0x5FC102
    package static let keyHistory: UInt32 = 0x5FC10C
}

/// Asymmetric algorithm identifiers. SP 800-78-4, table 6-2, and the YubiKey's 25519 identifiers.
package enum PIVAlgorithm: UInt8, Sendable, CaseIterable {
    case rsa1024 = 0x06
    case rsa2048 = 0x07
    case rsa3072 = 0x05
    case rsa4096 = 0x16
    case eccP256 = 0x11
    case eccP384 = 0x14
    case ed25519 = 0xE0
    case x25519 = 0xE1

    /// The coordinate length of a NIST curve, nil for the others.
    package var coordinateLength: Int? {
        switch self {
        case .eccP256: 32
        case .eccP384: 48
        default: nil
        }
    }

    /// The modulus length of an RSA key in bytes, nil for the others.
    package var modulusLength: Int? {
        switch self {
        case .rsa1024: 128
        case .rsa2048: 256
        case .rsa3072: 384
        case .rsa4096: 512
        default: nil
        }
    }
}
