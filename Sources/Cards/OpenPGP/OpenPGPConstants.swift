package import TokenpinAPDU

/// Instruction bytes of the OpenPGP card commands tokenpin sends.
///
/// OpenPGP card 3.4.1, §7.2 (commands in detail). The hex is in each comment; call sites use the names.
package enum OpenPGPInstruction {
    /// `A4`: SELECT, §7.2.1.
    package static let select: UInt8 = 0xA4
    /// `20`: VERIFY, §7.2.2.
    package static let verify: UInt8 = 0x20
    /// `24`: CHANGE REFERENCE DATA, §7.2.3.
    package static let changeReferenceData: UInt8 = 0x24
    /// `2C`: RESET RETRY COUNTER, §7.2.4.
    package static let resetRetryCounter: UInt8 = 0x2C
    /// `CA`: GET DATA, §7.2.6.
    package static let getData: UInt8 = 0xCA
    /// `DA`: PUT DATA, §7.2.8.
    package static let putData: UInt8 = 0xDA
    /// `2A`: PERFORM SECURITY OPERATION (PSO); tokenpin uses DECIPHER, §7.2.11.
    package static let performSecurityOperation: UInt8 = 0x2A
    /// `47`: GENERATE ASYMMETRIC KEY PAIR, §7.2.14.
    package static let generateAsymmetricKeyPair: UInt8 = 0x47
    /// `C0`: GET RESPONSE (ISO/IEC 7816-4), for answers announced with `61 xx`.
    package static let getResponse: UInt8 = 0xC0

    /// How messages name the commands: `GET DATA`, `PSO:DECIPHER` (the only security operation tokenpin sends).
    package static let names = InstructionNames.iso.adding([performSecurityOperation: "PSO:DECIPHER"])
}

/// Parameter bytes with a meaning of their own.
package enum OpenPGPParameter {
    /// SELECT P1 `04`: select by DF name (the AID).
    package static let selectByName: UInt8 = 0x04
    /// PSO P1-P2 `80 86`: DECIPHER, the cryptogram in the data field, the plain value in the answer.
    package static let decipher: (p1: UInt8, p2: UInt8) = (0x80, 0x86)
    /// GENERATE ASYMMETRIC KEY PAIR P1 `80`: generate a new key pair.
    package static let generateKeyPair: UInt8 = 0x80
    /// GENERATE ASYMMETRIC KEY PAIR P1 `81`: read the existing public key.
    package static let readPublicKey: UInt8 = 0x81
    /// RESET RETRY COUNTER P1 `00`: the data field holds the Resetting Code then the new PW1.
    package static let resetWithResettingCode: UInt8 = 0x00
    /// RESET RETRY COUNTER P1 `02`: PW3 was verified; the data field holds the new PW1.
    package static let resetAfterAdminVerification: UInt8 = 0x02
}

/// Data object tags of the OpenPGP card application.
///
/// OpenPGP card 3.4.1, §4.4.1 (DOs for GET DATA) and §4.4.2 (DOs for PUT DATA). Tags are the integer of
/// their bytes, as `TLV` keeps them.
package enum DataObject {
    /// `4F`: Application identifier (AID), 16 bytes.
    package static let applicationIdentifier: UInt32 = 0x4F
    /// `5F52`: Historical bytes.
    package static let historicalBytes: UInt32 = 0x5F52
    /// `6E`: Application related data (constructed).
    package static let applicationRelatedData: UInt32 = 0x6E
    /// `73`: Discretionary data objects (constructed, inside `6E`).
    package static let discretionaryDataObjects: UInt32 = 0x73
    /// `7F66`: Extended length information: the card's largest command and response.
    package static let extendedLengthInformation: UInt32 = 0x7F66
    /// `7F74`: General feature management.
    package static let generalFeatureManagement: UInt32 = 0x7F74
    /// `C0`: Extended capabilities, §4.4.3.7.
    package static let extendedCapabilities: UInt32 = 0xC0
    /// `C1`: Algorithm attributes of the signature key, §4.4.3.9.
    package static let signatureAttributes: UInt32 = 0xC1
    /// `C2`: Algorithm attributes of the decryption key, §4.4.3.9.
    package static let decryptionAttributes: UInt32 = 0xC2
    /// `C3`: Algorithm attributes of the authentication key, §4.4.3.9.
    package static let authenticationAttributes: UInt32 = 0xC3
    /// `C4`: PW status bytes: PW1 validity, maximum lengths and retry counters of PW1, RC, PW3.
    package static let passwordStatus: UInt32 = 0xC4
    /// `C5`: Fingerprints of the signature, decryption and authentication keys (3 × 20 bytes).
    package static let fingerprints: UInt32 = 0xC5
    /// `DE`: Key information: the status of each key (absent, generated, imported), §4.4.3.8.
    package static let keyInformation: UInt32 = 0xDE
    /// `D3`: Resetting Code (PUT DATA only).
    package static let resettingCode: UInt32 = 0xD3
    /// `F9`: the key derivation function (KDF-DO).
    package static let keyDerivationFunction: UInt32 = 0xF9
    /// `7F49`: Public key template, the answer of GENERATE ASYMMETRIC KEY PAIR, §7.2.14.
    package static let publicKey: UInt32 = 0x7F49
    /// `81`: RSA modulus inside `7F49`.
    package static let rsaModulus: UInt32 = 0x81
    /// `82`: RSA public exponent inside `7F49`.
    package static let rsaExponent: UInt32 = 0x82
    /// `86`: Elliptic curve public point inside `7F49`.
    package static let eccPoint: UInt32 = 0x86
    /// `A6`: Cipher DO for ECDH in PSO:DECIPHER, §7.2.11.
    package static let cipher: UInt32 = 0xA6
}

/// The OpenPGP application's registered identifier, without version, manufacturer and serial.
package enum OpenPGPApplication {
    /// `D2 76 00 01 24 01`: RID of the FSFE (`D2 76 00 01 24`) and the application `01`.
    package static let aid: [UInt8] = [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]
}

/// A card password, as VERIFY names it.
///
/// OpenPGP card 3.4.1, §7.2.2. PW1 is the user PIN, PW3 the admin PIN; the card keeps one retry counter
/// per password.
package enum PasswordReference: UInt8, Sendable, CaseIterable {
    /// `81`: PW1 for PSO:COMPUTE DIGITAL SIGNATURE.
    case pw1Signing = 0x81
    /// `82`: PW1 for the other commands (PSO:DECIPHER, INTERNAL AUTHENTICATE); tokenpin's card PIN.
    case pw1 = 0x82
    /// `83`: PW3, the admin PIN.
    case pw3 = 0x83

    /// The P2 of CHANGE REFERENCE DATA: `81` for either PW1 reference, `83` for PW3 (§7.2.3).
    var changeReference: UInt8 { self == .pw3 ? 0x83 : 0x81 }
}

/// One of the card's three keys.
///
/// OpenPGP card 3.4.1, §7.2.14: each key has a control reference template in GENERATE ASYMMETRIC KEY
/// PAIR and algorithm attributes (`C1`, `C2`, `C3`).
package enum KeyReference: Sendable, CaseIterable, Hashable {
    /// The signature key (control reference template `B6`).
    case signature
    /// The decryption key (`B8`): the one PSO:DECIPHER uses and tokenpin binds to.
    case decryption
    /// The authentication key (`A4`).
    case authentication

    /// The control reference template tag.
    var controlReferenceTemplate: UInt8 {
        switch self {
        case .signature: 0xB6
        case .decryption: 0xB8
        case .authentication: 0xA4
        }
    }

    /// The tag of the key's algorithm attributes.
    var attributesTag: UInt32 {
        switch self {
        case .signature: DataObject.signatureAttributes
        case .decryption: DataObject.decryptionAttributes
        case .authentication: DataObject.authenticationAttributes
        }
    }

    /// The index of the key's fingerprint in `C5`.
    var fingerprintIndex: Int {
        switch self {
        case .signature: 0
        case .decryption: 1
        case .authentication: 2
        }
    }
}

/// A value for some of the card's three key slots: what a `[KeyReference: Value]` would hold, without the
/// dictionary. Every verify parses the card's application related data into four of them, and the first dictionary
/// keyed by `KeyReference` in a process cost 0.25 million instructions of generic set-up (callgrind, a whole
/// `tokenpin verify`).
package struct PerKey<Value: Sendable>: Sendable, ExpressibleByDictionaryLiteral {
    private var signature: Value?
    private var decryption: Value?
    private var authentication: Value?

    /// No value for any key.
    package init() {}

    package init(dictionaryLiteral elements: (KeyReference, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    /// The value for `key`, nil when there is none; set to nil to remove it.
    package subscript(key: KeyReference) -> Value? {
        get {
            switch key {
            case .signature: signature
            case .decryption: decryption
            case .authentication: authentication
            }
        }
        set {
            switch key {
            case .signature: signature = newValue
            case .decryption: decryption = newValue
            case .authentication: authentication = newValue
            }
        }
    }

    /// How many keys have a value.
    package var count: Int { KeyReference.allCases.count { self[$0] != nil } }
}

extension PerKey: Equatable where Value: Equatable {}
