import TokenpinAPDU
import TokenpinCore

/// A card's answer before transport concerns (`61xx`, Le): data and a status word.
struct Reply: Equatable, Sendable {
    var data: [UInt8]
    var statusWord: StatusWord

    init(_ statusWord: StatusWord, data: [UInt8] = []) {
        self.data = data
        self.statusWord = statusWord
    }

    static let ok = Reply(.success)
}

/// The card's volatile security status: which PINs are verified, whether the application is selected.
///
/// Never persisted: power off, reset, deselect and SELECT clear it. OpenPGP card 3.4.1, §7.2.2.
struct SecurityStatus: Equatable, Sendable {
    var selected = false
    /// PW1 in mode `81`: one PSO:COMPUTE DIGITAL SIGNATURE (or several, per `C4` byte 1).
    var pw1Signature = false
    /// PW1 in mode `82`: PSO:DECIPHER, INTERNAL AUTHENTICATE, private DO 0103.
    var pw1Other = false
    /// PW3 (`83`): administration.
    var pw3 = false
    /// The cardholder certificate (`7F21`) instance SELECT DATA or GET DATA chose, 0 (AUT) to 2 (SIG); nil
    /// before either. OpenPGP card 3.4.1, §7.2.5.
    var certificateInstance: Int?

    mutating func clearVerified() {
        pw1Signature = false
        pw1Other = false
        pw3 = false
    }
}

/// The OpenPGP card application: command semantics over `CardState`, persisting every change.
///
/// Every state change is written to the state file before the answer that reports it; a write that fails
/// leaves the card unchanged and answers `6581`. Retry counters are decremented and written before a PIN is
/// compared, so pulling the card mid-command never yields a free guess.
struct OpenPGPApplication: Sendable {
    private(set) var state: CardState
    var status = SecurityStatus()
    let store: StateFile?
    /// The device this application behaves like.
    let traits: OpenPGPTraits

    init(state: CardState, store: StateFile?, traits: OpenPGPTraits = .reference) {
        self.state = state
        self.store = store
        self.traits = traits
    }

    /// The full AID: prefix, version, manufacturer, serial, RFU. OpenPGP card 3.4.1, §4.2.1. A YubiKey carries
    /// its decimal serial in BCD there (so gpg shows the number ykman does); other cards the serial's 4 bytes.
    var aid: [UInt8] {
        let serialBytes =
            traits.firmwareVersion != nil
            ? YubiKeyDevice.bcd(state.serial) ?? YubiKeyDevice.bigEndian(state.serial)
            : YubiKeyDevice.bigEndian(state.serial)
        return CardProfile.applicationPrefix + CardProfile.specVersion
            + [UInt8(state.manufacturer >> 8), UInt8(state.manufacturer & 0xFF)] + serialBytes + [0x00, 0x00]
    }

    /// Whether a SELECT by DF name with `data` names this application: any prefix of its AID of at least 5 bytes,
    /// or on Gnuk the 6-byte AID alone.
    func isNamed(by data: [UInt8]) -> Bool {
        traits.acceptsOnlyShortAID ? data == CardProfile.applicationPrefix : data.count >= 5 && aid.starts(with: data)
    }

    /// Writes `newState` to the state file, then adopts it; on failure nothing changes.
    mutating func commit(_ newState: CardState) -> Bool {
        if let store {
            do { try store.save(newState) } catch { return false }
        }
        state = newState
        return true
    }

    /// Takes the PIV part the PIV application has just written to the state file, so that the next OpenPGP
    /// write keeps it.
    mutating func adoptPIV(_ piv: PIVState?) { state.piv = piv }

    /// Runs one complete (unchained) command.
    mutating func handle(_ command: CommandAPDU) -> Reply {
        if command.ins == CardInstruction.select { return select(command) }
        guard status.selected else { return Reply(.instructionNotSupported) }
        if state.lifeCycle == .terminated {
            return command.ins == CardInstruction.activateFile ? activate(command) : Reply(.selectedFileTerminated)
        }
        switch command.ins {
        case CardInstruction.getData: return getData(command)
        case CardInstruction.putData: return putData(command)
        case CardInstruction.putDataOdd: return importKey(command)
        case CardInstruction.verify: return verify(command)
        case CardInstruction.changeReferenceData: return changeReferenceData(command)
        case CardInstruction.resetRetryCounter: return resetRetryCounter(command)
        case CardInstruction.generateKeyPair: return generateKeyPair(command)
        case CardInstruction.performSecurityOperation: return performSecurityOperation(command)
        case CardInstruction.internalAuthenticate: return internalAuthenticate(command)
        case CardInstruction.getChallenge: return getChallenge(command)
        case CardInstruction.terminateDF: return terminate(command)
        case CardInstruction.activateFile: return activate(command)
        case CardInstruction.selectData: return selectData(command)
        case CardInstruction.getNextData: return getNextData(command)
        case CardInstruction.getVersion where traits.firmwareVersion != nil: return getVersion(command)
        default: return Reply(.instructionNotSupported)
        }
    }

    // MARK: SELECT

    /// SELECT by DF name (full or partial AID; the 6-byte AID alone on Gnuk) and of the MF. A re-SELECT of
    /// the application clears the verified PINs unless the device keeps them (Gnuk, Nitrokey 3); an AID that
    /// is not this application's answers `6A82` and changes nothing. OpenPGP card 3.4.1, §7.2.1.
    private mutating func select(_ command: CommandAPDU) -> Reply {
        switch command.p1 {
        case 0x04:
            guard isNamed(by: command.data) else { return Reply(.fileNotFound) }
            if traits.keepsVerifiedStateOnSelect && status.selected {
                status.certificateInstance = nil
            } else {
                status = SecurityStatus(selected: true)
            }
            return Reply(state.lifeCycle == .terminated ? .selectedFileTerminated : .success)
        case 0x00:
            // The MF (3F00, or no data); clients send it before selecting the application.
            guard command.data.isEmpty || command.data == [0x3F, 0x00] else { return Reply(.fileNotFound) }
            status = SecurityStatus()
            return .ok
        default:
            return Reply(.incorrectP1P2)
        }
    }

    // MARK: GET DATA / PUT DATA

    /// The value a GET DATA for `tag` answers, or a status word. OpenPGP card 3.4.1, §7.2.6 and §4.4.
    func dataObject(_ tag: UInt32) -> Reply {
        switch tag {
        case 0x4F: return Reply(.success, data: aid)
        case 0x5E: return Reply(.success, data: state.loginData)
        case 0x5B: return Reply(.success, data: state.name)
        case 0x5F2D: return Reply(.success, data: state.language)
        case 0x5F35: return Reply(.success, data: state.sex)
        case 0x5F50: return Reply(.success, data: state.url)
        case 0x5F52: return Reply(.success, data: traits.historicalBytes)
        case 0x65: return Reply(.success, data: cardholderRelatedData.encoded)
        case 0x6E: return Reply(.success, data: applicationRelatedData.encoded)
        case 0x7A: return Reply(.success, data: securitySupportTemplate.encoded)
        case 0x7F66:
            guard let information = traits.extendedLengthInformation else { return Reply(.referencedDataNotFound) }
            return Reply(.success, data: information)
        case 0x7F74: return Reply(.success, data: CardProfile.generalFeatureManagement)
        case 0x7F21: return Reply(.success, data: state.certificates[status.certificateInstance ?? 0])
        case 0xC0: return Reply(.success, data: traits.extendedCapabilities)
        case 0xFA:
            guard let information = traits.algorithmInformation else { return Reply(.referencedDataNotFound) }
            let entries = KeySlot.allCases.flatMap { slot in
                (information[slot] ?? []).map { TLV(tag: slot.attributesTag, value: $0.bytes) }
            }
            return Reply(.success, data: TLV(tag: 0xFA, children: entries).encoded)
        case 0xC4: return Reply(.success, data: pwStatus)
        case 0xC5: return Reply(.success, data: state.keys.flatMap(\.fingerprint))
        case 0xC6: return Reply(.success, data: state.keys.flatMap(\.caFingerprint))
        case 0xCD: return Reply(.success, data: state.keys.flatMap(\.generationTime))
        case 0xDE: return Reply(.success, data: keyInformation)
        case 0xF9: return Reply(.success, data: state.kdf.isEmpty ? KDFSetting.off : state.kdf)
        case 0xD6, 0xD7, 0xD8: return Reply(.success, data: [0x00, 0x20])  // user interaction flag: off, button
        case 0x0101, 0x0102: return Reply(.success, data: state.privateDOs[Int(tag - 0x0101)])
        case 0x0103:
            return status.pw1Other ? Reply(.success, data: state.privateDOs[2]) : Reply(.securityStatusNotSatisfied)
        case 0x0104:
            return status.pw3 ? Reply(.success, data: state.privateDOs[3]) : Reply(.securityStatusNotSatisfied)
        default:
            for slot in KeySlot.allCases {
                let key = state.keys[slot.rawValue]
                if tag == slot.attributesTag { return Reply(.success, data: key.attributes.bytes) }
                if tag == slot.fingerprintTag { return Reply(.success, data: key.fingerprint) }
                if tag == slot.caFingerprintTag { return Reply(.success, data: key.caFingerprint) }
                if tag == slot.generationTimeTag { return Reply(.success, data: key.generationTime) }
            }
            return Reply(.referencedDataNotFound)
        }
    }

    private var pwStatus: [UInt8] {
        [
            state.pw1ValidForSeveralSignatures ? 0x01 : 0x00, 0x7F, 0x7F, 0x7F,
            UInt8(state.pw1Retries), UInt8(state.resetCodeRetries), UInt8(state.pw3Retries),
        ]
    }

    private var keyInformation: [UInt8] {
        KeySlot.allCases.flatMap { [UInt8($0.rawValue + 1), state.keys[$0.rawValue].origin.rawValue] }
    }

    private var cardholderRelatedData: TLV {
        TLV(
            tag: 0x65,
            children: [
                TLV(tag: 0x5B, value: state.name), TLV(tag: 0x5F2D, value: state.language),
                TLV(tag: 0x5F35, value: state.sex),
            ])
    }

    private var securitySupportTemplate: TLV {
        let counter = state.signatureCounter
        return TLV(
            tag: 0x7A,
            children: [
                TLV(
                    tag: 0x93,
                    value: [UInt8((counter >> 16) & 0xFF), UInt8((counter >> 8) & 0xFF), UInt8(counter & 0xFF)])
            ])
    }

    /// `6E`: AID, historical bytes, `7F74`, `7F66` and the discretionary data objects `73`.
    /// OpenPGP card 3.4.1, §4.4.3.1.
    private var applicationRelatedData: TLV {
        var discretionary = [TLV(tag: 0xC0, value: traits.extendedCapabilities)]
        discretionary += KeySlot.allCases.map {
            TLV(tag: $0.attributesTag, value: state.keys[$0.rawValue].attributes.bytes)
        }
        discretionary += [
            TLV(tag: 0xC4, value: pwStatus),
            TLV(tag: 0xC5, value: state.keys.flatMap(\.fingerprint)),
            TLV(tag: 0xC6, value: state.keys.flatMap(\.caFingerprint)),
            TLV(tag: 0xCD, value: state.keys.flatMap(\.generationTime)),
            TLV(tag: 0xDE, value: keyInformation),
        ]
        var value = TLV(tag: 0x4F, value: aid).encoded + TLV(tag: 0x5F52, value: traits.historicalBytes).encoded
        value += CardProfile.generalFeatureManagement + (traits.extendedLengthInformation ?? [])
        value += TLV(tag: 0x73, children: discretionary).encoded
        return TLV(tag: 0x6E, value: value)
    }

    private mutating func getData(_ command: CommandAPDU) -> Reply {
        let tag = UInt32(command.p1) << 8 | UInt32(command.p2)
        // Reading the certificate makes its instance the current one, for GET NEXT DATA (as opcard does).
        if tag == CardInstruction.cardholderCertificate { status.certificateInstance = status.certificateInstance ?? 0 }
        return dataObject(tag)
    }

    /// SELECT DATA `00 A5 instance 04 60 {5C 7F21}`: the cardholder certificate instance (0 AUT, 1 DEC, 2 SIG)
    /// that GET DATA and PUT DATA `7F21` then reach. A YubiKey up to 5.4.3 takes the data with a leading
    /// length byte (`06 60 04 5C 02 7F 21`, as yubikit sends it to those versions); the standard form works
    /// everywhere. OpenPGP card 3.4.1, §7.2.5.
    private mutating func selectData(_ command: CommandAPDU) -> Reply {
        guard command.p1 <= 2, command.p2 == 0x04 else { return Reply(.incorrectP1P2) }
        var data = command.data
        if traits.firmwareVersion != nil, let first = data.first, Int(first) == data.count - 1 { data.removeFirst() }
        guard let path = try? TLV.parseOne(data), path.tag == 0x60, let tag = try? TLV.parseOne(path.value),
            tag.tag == 0x5C, (1...2).contains(tag.value.count)
        else { return Reply(.incorrectData) }
        guard tag.value.reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == CardInstruction.cardholderCertificate else {
            return Reply(.referencedDataNotFound)
        }
        status.certificateInstance = Int(command.p1)
        return .ok
    }

    /// GET NEXT DATA `00 CC 7F 21`: the next cardholder certificate instance after the one SELECT DATA or GET
    /// DATA reached; `6985` before either and after the third (as opcard answers). OpenPGP card 3.4.1, §7.2.7.
    private mutating func getNextData(_ command: CommandAPDU) -> Reply {
        let tag = UInt32(command.p1) << 8 | UInt32(command.p2)
        guard tag == CardInstruction.cardholderCertificate else { return Reply(.referencedDataNotFound) }
        guard let current = status.certificateInstance, current < 2 else { return Reply(.conditionsOfUseNotSatisfied) }
        status.certificateInstance = current + 1
        return Reply(.success, data: state.certificates[current + 1])
    }

    /// GET VERSION `00 F1 00 00` (YubiKey): the firmware version in BCD, one byte per part (yubikit
    /// `OpenPgpSession._read_version`).
    private func getVersion(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0, command.p2 == 0 else { return Reply(.incorrectP1P2) }
        let version = traits.firmwareVersion ?? []
        return Reply(.success, data: version.map { ($0 / 10) << 4 | $0 % 10 })
    }

    /// PUT DATA with even INS. Access: PW1 (82) for private DOs 0101 and 0103, PW3 for everything else.
    /// OpenPGP card 3.4.1, §7.2.8.
    private mutating func putData(_ command: CommandAPDU) -> Reply {
        let tag = UInt32(command.p1) << 8 | UInt32(command.p2)
        let value = command.data
        let needsPW1 = tag == 0x0101 || tag == 0x0103
        guard needsPW1 ? status.pw1Other : status.pw3 else { return Reply(.securityStatusNotSatisfied) }
        var next = state
        switch tag {
        case 0x5B:
            guard value.count <= 39 else { return Reply(.wrongLength) }
            next.name = value
        case 0x5F2D:
            guard value.count <= 8 else { return Reply(.wrongLength) }
            next.language = value
        case 0x5F35:
            guard value.count <= 1 else { return Reply(.wrongLength) }
            guard value.allSatisfy({ [0x30, 0x31, 0x32, 0x39].contains($0) }) else { return Reply(.incorrectData) }
            next.sex = value
        case 0x5F50, 0x5E, 0x0101, 0x0102, 0x0103, 0x0104:
            guard value.count <= CardProfile.maxSpecialDO else { return Reply(.wrongLength) }
            switch tag {
            case 0x5F50: next.url = value
            case 0x5E: next.loginData = value
            default: next.privateDOs[Int(tag - 0x0101)] = value
            }
        case 0x7F21:
            guard value.count <= CardProfile.maxCertificate else { return Reply(.wrongLength) }
            next.certificates[status.certificateInstance ?? 0] = value
        case 0xC4:
            // Only byte 1 is writable; a full 7-byte object is accepted for its first byte.
            guard value.count == 1 || value.count == 7 else { return Reply(.wrongLength) }
            guard value[0] <= 1 else { return Reply(.incorrectData) }
            next.pw1ValidForSeveralSignatures = value[0] == 1
        case 0xF9:
            // Switching the KDF on or off sets the PINs to the factory PINs (as digests when on) and removes the
            // Reset Code, as Gnuk and the YubiKey do; the host then changes them through the KDF.
            guard let setting = KDFSetting(value) else { return Reply(.incorrectData) }
            next.kdf = value
            next.pw1 = setting.userPIN
            next.pw3 = setting.adminPIN
            next.resetCode = []
            next.resetCodeRetries = 0
            next.pw1Retries = CardProfile.maxRetries
            next.pw3Retries = CardProfile.maxRetries
        case 0xD3:
            guard value.isEmpty || CardProfile.resetCodeLengths.contains(value.count) else {
                return Reply(.wrongLength)
            }
            next.resetCode = value
            next.resetCodeRetries = value.isEmpty ? 0 : CardProfile.maxRetries
        default:
            guard let reply = putKeyObject(tag, value, into: &next) else { return Reply(.referencedDataNotFound) }
            guard reply == .ok else { return reply }
        }
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    /// PUT DATA for a key's attributes, fingerprint, CA fingerprint or generation time; nil for other tags.
    private func putKeyObject(_ tag: UInt32, _ value: [UInt8], into next: inout CardState) -> Reply? {
        for slot in KeySlot.allCases {
            let index = slot.rawValue
            switch tag {
            case slot.attributesTag:
                let attributes = AlgorithmAttributes(bytes: value)
                guard attributes.isAllowed(in: slot) else { return Reply(.incorrectData) }
                if attributes != next.keys[index].attributes {
                    // New attributes invalidate the key, as on real cards.
                    next.keys[index] = .factoryNew
                    next.keys[index].attributes = attributes
                }
                return .ok
            case slot.fingerprintTag, slot.caFingerprintTag:
                guard value.count == 20 else { return Reply(.wrongLength) }
                if tag == slot.fingerprintTag {
                    next.keys[index].fingerprint = value
                } else {
                    next.keys[index].caFingerprint = value
                }
                return .ok
            case slot.generationTimeTag:
                guard value.count == 4 else { return Reply(.wrongLength) }
                next.keys[index].generationTime = value
                return .ok
            default:
                continue
            }
        }
        return nil
    }

    // MARK: Life cycle

    /// TERMINATE DF: allowed after PW3, or when PW3 is blocked. OpenPGP card 3.4.1, §7.2.16.
    private mutating func terminate(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard status.pw3 || state.pw3Retries == 0 else { return Reply(.securityStatusNotSatisfied) }
        var next = state
        next.lifeCycle = .terminated
        guard commit(next) else { return Reply(.memoryFailure) }
        status = SecurityStatus(selected: true)
        return .ok
    }

    /// ACTIVATE FILE: a terminated card becomes factory-new (keeping its serial); an active card is unchanged.
    /// OpenPGP card 3.4.1, §7.2.17.
    private mutating func activate(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard state.lifeCycle == .terminated else { return .ok }
        guard commit(.factoryNew(serial: state.serial, manufacturer: state.manufacturer)) else {
            return Reply(.memoryFailure)
        }
        status = SecurityStatus(selected: true)
        return .ok
    }
}

/// Copies ordinary bytes into guarded memory; the intermediate copy is wiped.
func guardedCopy(_ bytes: [UInt8]) -> SecretBytes {
    var copy = bytes
    return SecretBytes(consuming: &copy)
}
