package import TokenpinAPDU

/// The full application identifier of an OpenPGP card: version, manufacturer and serial number.
///
/// OpenPGP card 3.4.1, DO `4F`: `D2 76 00 01 24` (RID) `01` (application) then version (2 bytes),
/// manufacturer (2), serial number (4) and `00 00` (RFU), 16 bytes in all.
package struct ApplicationIdentifier: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes.
    package let bytes: [UInt8]

    /// Parses the 16 bytes of DO `4F`.
    ///
    /// Throws `APDUError` when the length is not 16 or the bytes do not start with the OpenPGP AID.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count == 16 else {
            throw APDUError(.invalidLength, "application identifier of \(bytes.count) bytes, expected 16")
        }
        guard Array(bytes.prefix(6)) == OpenPGPApplication.aid else {
            throw APDUError(.invalidStructure, "application identifier is not OpenPGP's")
        }
        self.bytes = bytes
    }

    /// The specification version the card implements, major then minor (`3.4` is `(3, 4)`).
    package var version: (major: Int, minor: Int) { (Int(bytes[6]), Int(bytes[7])) }
    /// The manufacturer ID, assigned by the FSFE.
    package var manufacturer: UInt16 { UInt16(bytes[8]) << 8 | UInt16(bytes[9]) }
    /// The serial number, unique per manufacturer.
    package var serial: UInt32 {
        UInt32(bytes[10]) << 24 | UInt32(bytes[11]) << 16 | UInt32(bytes[12]) << 8 | UInt32(bytes[13])
    }
    /// The serial number as GnuPG shows it: eight hex digits.
    package var serialString: String { Hex.encode(bytes[10..<14]) }

    /// The manufacturer's name, for the IDs tokenpin knows.
    package var manufacturerName: String? {
        switch manufacturer {
        case 0x0001: "PPC Card Systems"
        case 0x0002: "Prism"
        case 0x0003: "OpenFortress"
        case 0x0004: "Wewid"
        case 0x0005: "ZeitControl"
        case 0x0006: "Yubico"
        case 0x0007: "OpenKMS"
        case 0x0008: "LogoEmail"
        case 0x0009: "Fidesmo"
        case 0x000A: "VivoKey"
        case 0x000B: "Feitian Technologies"
        case 0x000D: "Dangerous Things"
        case 0x000E: "Excelsecu"
        case 0x000F: "Nitrokey"
        case 0x002A: "Magrathea"
        case 0x0042: "GnuPG e.V."
        case 0xF517: "FSIJ"
        case 0x0000, 0xFFFF: "test card"
        case 0xFF00...0xFFFE: "unmanaged serial range"
        default: nil
        }
    }

    package var description: String {
        let maker = manufacturerName ?? "manufacturer \(Hex.encode([bytes[8], bytes[9]]))"
        return "OpenPGP \(version.major).\(version.minor) \(maker) serial \(serialString)"
    }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.bytes == rhs.bytes }
    package func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}

/// The PW status bytes, DO `C4`: maximum lengths and retry counters of the three passwords.
///
/// OpenPGP card 3.4.1, §4.4.1: seven bytes: PW1 validity for signatures, maximum lengths of PW1, the
/// Resetting Code and PW3, then their retry counters.
package struct PasswordStatus: Sendable, Hashable {
    /// Whether one PW1 verification (`81`) allows several signatures (byte 1 = `01`) or only one (`00`).
    package var pw1ValidForSeveralSignatures: Bool
    /// The longest PW1 the card takes.
    package var maxLengthPW1: Int
    /// The longest Resetting Code the card takes.
    package var maxLengthResetCode: Int
    /// The longest PW3 the card takes.
    package var maxLengthPW3: Int
    /// The tries left for PW1; 0 means blocked.
    package var retriesPW1: Int
    /// The tries left for the Resetting Code; 0 means blocked or not set.
    package var retriesResetCode: Int
    /// The tries left for PW3; 0 means blocked.
    package var retriesPW3: Int

    /// Parses the value of DO `C4`.
    ///
    /// Throws `APDUError` unless it is exactly seven bytes.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        guard bytes.count == 7 else {
            throw APDUError(.invalidLength, "PW status of \(bytes.count) bytes, expected 7")
        }
        pw1ValidForSeveralSignatures = bytes[0] != 0
        // Bit 8 of the PW1 length flags support for PIN block format 2; the length is in bits 1-7.
        maxLengthPW1 = Int(bytes[1] & 0x7F)
        maxLengthResetCode = Int(bytes[2])
        maxLengthPW3 = Int(bytes[3])
        retriesPW1 = Int(bytes[4])
        retriesResetCode = Int(bytes[5])
        retriesPW3 = Int(bytes[6])
    }

    /// The tries left for a password.
    package func retriesLeft(for reference: PasswordReference) -> Int {
        reference == .pw3 ? retriesPW3 : retriesPW1
    }
}

/// The extended capabilities, DO `C0`: which optional features the card has.
///
/// OpenPGP card 3.4.1, §4.4.3.7. Byte 1 holds the feature flags; version 3 cards add sizes after it.
package struct ExtendedCapabilities: Sendable, Hashable {
    /// The raw bytes.
    package let bytes: [UInt8]

    /// Parses the value of DO `C0`; throws `APDUError` when it is empty.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        guard !bytes.isEmpty else { throw APDUError(.truncated, "empty extended capabilities") }
        self.bytes = bytes
    }

    private func flag(_ mask: UInt8) -> Bool { bytes[0] & mask != 0 }
    /// Secure messaging is supported.
    package var supportsSecureMessaging: Bool { flag(0x80) }
    /// GET CHALLENGE is supported.
    package var supportsGetChallenge: Bool { flag(0x40) }
    /// Private keys can be imported.
    package var supportsKeyImport: Bool { flag(0x20) }
    /// The PW1 validity byte of `C4` can be changed.
    package var passwordStatusChangeable: Bool { flag(0x10) }
    /// The private-use DOs `0101`-`0104` exist.
    package var supportsPrivateUseDataObjects: Bool { flag(0x08) }
    /// The algorithm attributes can be changed with PUT DATA (needed to switch a slot to cv25519).
    package var algorithmAttributesChangeable: Bool { flag(0x04) }
    /// PSO:DECIPHER/ENCIPHER with AES is supported.
    package var supportsAES: Bool { flag(0x02) }
    /// The key derivation function DO `F9` is supported.
    package var supportsKDF: Bool { flag(0x01) }
}

/// The extended length information, DO `7F66`: the largest command and answer the card takes.
///
/// ISO/IEC 7816-4 and OpenPGP card 3.4.1, §4.4.1: two `02` objects of two bytes each.
package struct ExtendedLengthInformation: Sendable, Hashable {
    /// The most bytes a command APDU may carry.
    package var maxCommandBytes: Int
    /// The most bytes an answer may carry.
    package var maxResponseBytes: Int

    /// Parses the value of DO `7F66`.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        let objects = try TLV.parseAll(bytes)
        guard objects.count == 2, objects.allSatisfy({ $0.tag == 0x02 && $0.value.count == 2 }) else {
            throw APDUError(.invalidStructure, "extended length information is not two 2-byte integers")
        }
        maxCommandBytes = Int(objects[0].value[0]) << 8 | Int(objects[0].value[1])
        maxResponseBytes = Int(objects[1].value[0]) << 8 | Int(objects[1].value[1])
    }
}

/// The application related data, DO `6E`: everything tokenpin needs to know about a card in one answer.
///
/// OpenPGP card 3.4.1, §4.4.1: the AID (`4F`), historical bytes (`5F52`), extended length information
/// (`7F66`), and in the discretionary data objects (`73`): extended capabilities (`C0`), algorithm
/// attributes (`C1`-`C3`), PW status (`C4`) and fingerprints (`C5`). The answer comes from the card and is
/// parsed as hostile: a truncated or inconsistent object is an `APDUError`, never a crash.
package struct ApplicationRelatedData: Sendable, Equatable {
    /// Version, manufacturer and serial number.
    package var aid: ApplicationIdentifier
    /// The historical bytes, as in the ATR.
    package var historicalBytes: [UInt8]
    /// The largest command and answer, for cards that announce extended length.
    package var extendedLengthInformation: ExtendedLengthInformation?
    /// Optional features.
    package var extendedCapabilities: ExtendedCapabilities?
    /// The algorithm each key slot is set up for.
    package var algorithmAttributes: PerKey<AlgorithmAttributes>
    /// Maximum lengths and retry counters.
    package var passwordStatus: PasswordStatus
    /// The 20-byte fingerprints of the keys present; a slot whose fingerprint is all zero is absent.
    package var fingerprints: PerKey<[UInt8]>
    /// Whether each key is absent, generated on the card or imported (key information `DE`, OpenPGP 3.3
    /// and later, §4.4.3.8); empty when the card does not say.
    package var keyStatus: PerKey<KeyStatus>
    /// When each key was generated or imported (`CD`), in seconds since 1970; empty when the card does not say.
    package var generationTimes: PerKey<UInt32>

    /// Parses the answer to GET DATA `6E`: one `6E` object, nothing after it.
    ///
    /// The AID and the PW status are required; the rest is optional, but when present must be well formed.
    package init(parsing bytes: [UInt8]) throws(APDUError) {
        let outer = try TLV.parseOne(bytes)
        guard outer.tag == DataObject.applicationRelatedData else {
            throw APDUError(.invalidTag, "expected application related data (6E), got \(Hex.encode(outer.tagBytes))")
        }
        let index = TLVIndex(try outer.children())  // parsed once for the dozen lookups below
        func find(_ tag: UInt32) throws(APDUError) -> [UInt8]? { try index.find(tag)?.value }

        guard let aidBytes = try find(DataObject.applicationIdentifier) else {
            throw APDUError(.truncated, "application related data without an AID (4F)")
        }
        aid = try ApplicationIdentifier(parsing: aidBytes)
        historicalBytes = try find(DataObject.historicalBytes) ?? []
        extendedLengthInformation = try find(DataObject.extendedLengthInformation).map {
            bytes throws(APDUError) in try ExtendedLengthInformation(parsing: bytes)
        }
        extendedCapabilities = try find(DataObject.extendedCapabilities).map {
            bytes throws(APDUError) in try ExtendedCapabilities(parsing: bytes)
        }
        var attributes: PerKey<AlgorithmAttributes> = [:]
        for key in KeyReference.allCases {
            if let value = try find(key.attributesTag) { attributes[key] = try AlgorithmAttributes(parsing: value) }
        }
        algorithmAttributes = attributes
        guard let status = try find(DataObject.passwordStatus) else {
            throw APDUError(.truncated, "application related data without PW status (C4)")
        }
        passwordStatus = try PasswordStatus(parsing: status)
        var prints: PerKey<[UInt8]> = [:]
        if let value = try find(DataObject.fingerprints) {
            guard value.count >= 60, value.count % 20 == 0 else {
                throw APDUError(.invalidLength, "fingerprints of \(value.count) bytes, expected 3 × 20")
            }
            for key in KeyReference.allCases {
                let print = Array(value[(key.fingerprintIndex * 20)..<(key.fingerprintIndex * 20 + 20)])
                if print.contains(where: { $0 != 0 }) { prints[key] = print }
            }
        }
        fingerprints = prints
        var statuses: PerKey<KeyStatus> = [:]
        if let value = try find(DataObject.keyInformation) {
            guard value.count % 2 == 0 else {
                throw APDUError(.invalidLength, "key information of \(value.count) bytes, expected pairs")
            }
            for pair in stride(from: 0, to: value.count, by: 2) {
                // Key references 1, 2, 3 are the signature, decryption and authentication keys.
                if let key = KeyReference.allCases.first(where: { $0.fingerprintIndex + 1 == Int(value[pair]) }) {
                    statuses[key] = KeyStatus(rawValue: value[pair + 1])
                }
            }
        }
        keyStatus = statuses
        generationTimes = try CardKeyDescription.generationTimes(try find(DataObject.keyGenerationDates))
    }

    /// What the card announces for long APDUs: the card capabilities in the historical bytes refined by the
    /// extended length information; nil when the historical bytes say nothing.
    package var lengthCapabilities: LengthCapabilities? {
        guard var capabilities = HistoricalBytes.lengthCapabilities(historicalBytes) else { return nil }
        if capabilities.extendedLength, let info = extendedLengthInformation {
            // Leave room for the header, Lc and Le around the data.
            capabilities.maxCommandData = max(
                CommandAPDU.shortMaxData,
                min(
                    CommandAPDU.extendedMaxData,
                    info.maxCommandBytes - 9))
            capabilities.maxResponseData = max(
                CommandAPDU.shortMaxLe,
                min(
                    CommandAPDU.extendedMaxLe,
                    info.maxResponseBytes - 2))
        }
        return capabilities
    }

    /// Whether the decryption slot is set up for cv25519 ECDH and holds a key: a card tokenpin can bind to.
    ///
    /// Key presence comes from the key information (`DE`) when the card gives it, else from a non-zero
    /// fingerprint (a key generated on the card has no fingerprint until the host writes one). Reading the
    /// public key (`publicKey(for: .decryption)`) is the definitive check.
    package var hasCurve25519DecryptionKey: Bool {
        guard algorithmAttributes[.decryption]?.isCurve25519ECDH ?? false else { return false }
        return hasDecryptionKey
    }

    /// Whether the decryption slot holds a key, whatever its algorithm; the same evidence as
    /// `hasCurve25519DecryptionKey`.
    package var hasDecryptionKey: Bool {
        if let status = keyStatus[.decryption] { return status != .notPresent }
        return fingerprints[.decryption] != nil
    }
}

/// Whether a key slot holds a key and where it came from (key information `DE`).
package struct KeyStatus: RawRepresentable, Sendable, Hashable {
    /// The status byte.
    package let rawValue: UInt8
    /// Creates a status from its byte.
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `00`: no key in the slot.
    package static let notPresent = KeyStatus(rawValue: 0x00)
    /// `01`: the key was generated on the card.
    package static let generated = KeyStatus(rawValue: 0x01)
    /// `02`: the key was imported.
    package static let imported = KeyStatus(rawValue: 0x02)
}
