import TokenpinAPDU
import TokenpinCardCrypto

/// How one device's OpenPGP application presents itself and where it departs from the others: what the
/// simulated card announces (ATR, historical bytes, `C0`, `7F66`, algorithm information `FA`), the key
/// attributes it ships with, and the behaviours real cards disagree on. Values marked "facts" are the
/// checked bytes of `openpgp-facts.md`; the rest are the simulator's own, chosen to fit the device.
package struct OpenPGPTraits: Sendable, Equatable {
    /// What a wrong PIN is answered with.
    package enum WrongPINAnswer: Sendable, Equatable {
        /// `63 Cx`, x the tries left (opcard / Nitrokey 3, the reference card).
        case triesLeft
        /// `69 82`, the tries left only in `C4` (Gnuk, SmartPGP, YubiKey).
        case securityStatusNotSatisfied
    }

    /// The answer to reset.
    package var atr: [UInt8]
    /// `5F52`: the historical bytes the application reports.
    package var historicalBytes: [UInt8]
    /// `C0`: extended capabilities (10 bytes).
    package var extendedCapabilities: [UInt8]
    /// `7F66` with its tag, or nil when the device has none (then GET DATA answers `6A88`).
    package var extendedLengthInformation: [UInt8]?
    /// What the card takes: extended length and chaining, and the largest command and answer.
    package var lengthCapabilities: LengthCapabilities
    /// `FA`: per slot, the algorithm attributes the card can be set to (each one PUT DATA `C1`–`C3` takes), or
    /// nil when the device has no `FA` (`6A88`).
    package var algorithmInformation: [KeySlot: [AlgorithmAttributes]]?
    /// The key attributes of the signature, decryption and authentication slots at the factory.
    package var factoryAttributes: [AlgorithmAttributes]
    /// Whether SELECT of the OpenPGP application keeps the verified PINs (Gnuk, Nitrokey 3) or clears them
    /// (SmartPGP, YubiKey as gpg assumes it, the reference card).
    package var keepsVerifiedStateOnSelect: Bool
    /// What a wrong PIN is answered with.
    package var wrongPINAnswer: WrongPINAnswer
    /// Whether SELECT takes only the 6-byte AID `D2 76 00 01 24 01` (Gnuk) rather than any prefix of at
    /// least 5 bytes up to the full 16-byte AID.
    package var acceptsOnlyShortAID: Bool
    /// The firmware version GET VERSION (`F1`) answers on a YubiKey, which also carries its serial in BCD in the
    /// AID and takes SELECT DATA with a leading length byte; nil on other devices (`F1` answers `6D00`).
    package var firmwareVersion: [UInt8]? = nil

    /// Whether `C0` announces the KDF-DO (byte 0 bit `01`).
    package var hasKDF: Bool { extendedCapabilities.first.map { $0 & 0x01 != 0 } ?? false }

    static func capabilities(_ first: UInt8, maxChallenge: Int, maxCertificate: Int, maxSpecialDO: Int) -> [UInt8] {
        [
            first, 0x00, UInt8(maxChallenge >> 8), UInt8(maxChallenge & 0xFF), UInt8(maxCertificate >> 8),
            UInt8(maxCertificate & 0xFF), UInt8(maxSpecialDO >> 8), UInt8(maxSpecialDO & 0xFF), 0x00, 0x00,
        ]
    }

    static func lengthInformation(command: Int, response: Int) -> [UInt8] {
        TLV(
            tag: 0x7F66,
            value: [
                0x02, 0x02, UInt8(command >> 8), UInt8(command & 0xFF),
                0x02, 0x02, UInt8(response >> 8), UInt8(response & 0xFF),
            ]
        ).encoded
    }

    /// Every algorithm the simulator implements, per slot, as `FA` lists them: RSA 2048, 3072 and 4096 (with the
    /// device's exponent field and import format), ECDSA (`C1`, `C3`) or ECDH (`C2`) on NIST P-256/P-384/P-521
    /// and brainpoolP256r1/384r1/512r1, Ed25519 (`C1`, `C3`) and cv25519 (`C2`). Each entry is one PUT DATA of
    /// that slot takes, and every algorithm it takes is listed (`AlgorithmAttributes.isAllowed(in:)`).
    static func implementedAlgorithms(rsaExponentBits: UInt8) -> [KeySlot: [AlgorithmAttributes]] {
        let rsa = RSAKeys.supportedModulusBits.sorted().map { bits in
            AlgorithmAttributes(bytes: [
                AlgorithmAttributes.rsaAlgorithm, UInt8(bits >> 8), UInt8(bits & 0xFF), 0x00, rsaExponentBits, 0x00,
            ])
        }
        var information: [KeySlot: [AlgorithmAttributes]] = [:]
        for slot in KeySlot.allCases {
            let curveAlgorithm =
                slot == .decryption ? AlgorithmAttributes.ecdhAlgorithm : AlgorithmAttributes.ecdsaAlgorithm
            let curves = WeierstrassCurve.allCases.map { AlgorithmAttributes(bytes: [curveAlgorithm] + $0.oid) }
            information[slot] = rsa + curves + [slot == .decryption ? .cv25519 : .ed25519]
        }
        return information
    }

    /// The reference card (`openpgp`): an OpenPGP card 3.4 as the simulator always modelled it.
    package static let reference = OpenPGPTraits(
        atr: CardProfile.atr, historicalBytes: CardProfile.historicalBytes,
        extendedCapabilities: CardProfile.extendedCapabilities,
        extendedLengthInformation: CardProfile.extendedLengthInformation,
        lengthCapabilities: CardProfile.lengthCapabilities, algorithmInformation: nil,
        factoryAttributes: Array(repeating: .rsa2048, count: 3),
        keepsVerifiedStateOnSelect: false, wrongPINAnswer: .triesLeft, acceptsOnlyShortAID: false)

    /// A YubiKey 5: its ATR (facts) and historical bytes (`80 73 C0 21 C0` "YubiKey": chaining and extended
    /// length), RSA 2048 in every slot as shipped (`01 0800 0011 00`, facts), `69 82` for a wrong PIN, a
    /// re-SELECT clearing the PINs, and `FA` listing what the card can be set to.
    package static let yubiKey5 = OpenPGPTraits(
        atr: PIVProfile.yubiKeyATR, historicalBytes: Array(PIVProfile.yubiKeyATR[9..<22]),
        extendedCapabilities: capabilities(0x7D, maxChallenge: 0x0800, maxCertificate: 0x0800, maxSpecialDO: 0x00FF),
        extendedLengthInformation: lengthInformation(command: 0x0800, response: 0x0800),
        lengthCapabilities: LengthCapabilities(
            extendedLength: true, commandChaining: true,
            maxCommandData: 0x0800, maxResponseData: 0x0800),
        algorithmInformation: implementedAlgorithms(rsaExponentBits: 0x11),
        factoryAttributes: Array(repeating: .rsa2048, count: 3),
        keepsVerifiedStateOnSelect: false, wrongPINAnswer: .securityStatusNotSatisfied, acceptsOnlyShortAID: false,
        firmwareVersion: YubiKeyDevice.firmwareVersion)

    /// A Nitrokey 3 (opcard): the 3C NFC's ATR (facts, no card capabilities in it), `5F52` as opcard sends it
    /// (`00 31 F5 73 C0 01 60 00 90 00`: extended Lc/Le, no chaining; facts), `7F66` 1DB9/1DB9 (facts), the
    /// KDF-DO available, RSA 2048 `01 0800 0020 00` at the factory (facts), `63 Cx` for a wrong PIN and the
    /// PINs kept across SELECT (facts).
    package static let nitrokey3 = OpenPGPTraits(
        atr: [0x3B, 0x8C, 0x01, 0x80, 0x5A, 0x4E, 0x69, 0x74, 0x72, 0x6F, 0x6B, 0x65, 0x79, 0x20, 0x33, 0x7D],
        historicalBytes: [0x00, 0x31, 0xF5, 0x73, 0xC0, 0x01, 0x60, 0x00, 0x90, 0x00],
        extendedCapabilities: capabilities(0x3D, maxChallenge: 0, maxCertificate: 0x0800, maxSpecialDO: 0x00FF),
        extendedLengthInformation: lengthInformation(command: 0x1DB9, response: 0x1DB9),
        lengthCapabilities: LengthCapabilities(
            extendedLength: true, commandChaining: false,
            maxCommandData: 0x1DB9, maxResponseData: 0x1DB9),
        algorithmInformation: implementedAlgorithms(rsaExponentBits: 0x20),
        factoryAttributes: Array(
            repeating: AlgorithmAttributes(bytes: [0x01, 0x08, 0x00, 0x00, 0x20, 0x00]), count: 3),
        keepsVerifiedStateOnSelect: true, wrongPINAnswer: .triesLeft, acceptsOnlyShortAID: false)

    /// A Gnuk token set up for cv25519: Gnuk's ATR and historical bytes (`… 73 80 01 80 …`: chaining, no
    /// extended length; facts), no `7F66` and no `FA`, `69 82` for a wrong PIN, the PINs kept on SELECT of
    /// the OpenPGP application and cleared on SELECT of the MF, and only the 6-byte AID accepted (facts).
    package static let gnuk = OpenPGPTraits(
        atr: [
            0x3B, 0xDA, 0x11, 0xFF, 0x81, 0xB1, 0xFE, 0x55, 0x1F, 0x03, 0x00, 0x31, 0x84, 0x73, 0x80, 0x01,
            0x80, 0x00, 0x90, 0x00, 0xE4,
        ],
        historicalBytes: [0x00, 0x31, 0x84, 0x73, 0x80, 0x01, 0x80, 0x00, 0x90, 0x00],
        extendedCapabilities: capabilities(0x75, maxChallenge: 0x00FF, maxCertificate: 0x0800, maxSpecialDO: 0x00FF),
        extendedLengthInformation: nil,
        lengthCapabilities: LengthCapabilities(extendedLength: false, commandChaining: true),
        algorithmInformation: nil,
        factoryAttributes: [.ed25519, .cv25519, .ed25519],
        keepsVerifiedStateOnSelect: true, wrongPINAnswer: .securityStatusNotSatisfied, acceptsOnlyShortAID: true)
}
