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
    private mutating func commit(_ newState: CardState) -> Bool {
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

    // MARK: PINs

    /// The password a VERIFY or CHANGE REFERENCE DATA P2 names.
    private enum Password {
        case pw1Signature, pw1Other, pw3

        init?(p2: UInt8) {
            switch p2 {
            case 0x81: self = .pw1Signature
            case 0x82: self = .pw1Other
            case 0x83: self = .pw3
            default: return nil
            }
        }
    }

    private func isVerified(_ password: Password) -> Bool {
        switch password {
        case .pw1Signature: status.pw1Signature
        case .pw1Other: status.pw1Other
        case .pw3: status.pw3
        }
    }

    private mutating func setVerified(_ password: Password, _ verified: Bool) {
        switch password {
        case .pw1Signature: status.pw1Signature = verified
        case .pw1Other: status.pw1Other = verified
        case .pw3: status.pw3 = verified
        }
    }

    private func retries(_ password: Password) -> Int {
        password == .pw3 ? state.pw3Retries : state.pw1Retries
    }

    /// Decrements the counter of `password` (PW1 or PW3) and writes it; false when the write failed.
    private mutating func spendTry(_ password: Password) -> Bool {
        var next = state
        if password == .pw3 { next.pw3Retries -= 1 } else { next.pw1Retries -= 1 }
        return commit(next)
    }

    /// Restores the counter of `password` to the maximum after a correct PIN.
    private mutating func restoreTries(_ password: Password) -> Bool {
        var next = state
        if password == .pw3 {
            next.pw3Retries = CardProfile.maxRetries
        } else {
            next.pw1Retries = CardProfile.maxRetries
        }
        return next == state || commit(next)
    }

    /// Compares in constant time, through guarded memory; the copies are wiped on release.
    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: ArraySlice<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        let secret = guardedCopy(lhs)
        return Array(rhs).withUnsafeBytes { secret.isEqual(to: $0) }
    }

    /// VERIFY: P1 `00` checks a PIN (empty data queries the status), P1 `FF` clears the verified state.
    /// The counter is decremented and persisted before the comparison. OpenPGP card 3.4.1, §7.2.2.
    private mutating func verify(_ command: CommandAPDU) -> Reply {
        guard let password = Password(p2: command.p2), command.p1 == 0x00 || command.p1 == 0xFF else {
            return Reply(.incorrectP1P2)
        }
        if command.p1 == 0xFF {
            guard command.data.isEmpty else { return Reply(.wrongLength) }
            setVerified(password, false)
            return .ok
        }
        if command.data.isEmpty {
            if isVerified(password) { return .ok }
            return retries(password) == 0
                ? Reply(.authenticationMethodBlocked)
                : Reply(.wrongPIN(retriesLeft: retries(password)))
        }
        guard retries(password) > 0 else { return Reply(.authenticationMethodBlocked) }
        guard spendTry(password) else { return Reply(.memoryFailure) }
        let reference = password == .pw3 ? state.pw3 : state.pw1
        guard Self.constantTimeEqual(reference, command.data[...]) else {
            setVerified(password, false)
            return wrongPIN(retriesLeft: retries(password))
        }
        guard restoreTries(password) else { return Reply(.memoryFailure) }
        setVerified(password, true)
        return .ok
    }

    /// The answer to a wrong PIN: `63 Cx` or, on devices that answer so, `69 82`.
    private func wrongPIN(retriesLeft: Int) -> Reply {
        switch traits.wrongPINAnswer {
        case .triesLeft: Reply(.wrongPIN(retriesLeft: retriesLeft))
        case .securityStatusNotSatisfied: Reply(.securityStatusNotSatisfied)
        }
    }

    /// CHANGE REFERENCE DATA for PW1 (`81`) or PW3 (`83`): data is the old PIN followed by the new one.
    /// OpenPGP card 3.4.1, §7.2.3.
    private mutating func changeReferenceData(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x81 || command.p2 == 0x83,
            let password = Password(p2: command.p2)
        else { return Reply(.incorrectP1P2) }
        guard retries(password) > 0 else { return Reply(.authenticationMethodBlocked) }
        guard !command.data.isEmpty else { return Reply(.wrongLength) }
        guard spendTry(password) else { return Reply(.memoryFailure) }
        let reference = password == .pw3 ? state.pw3 : state.pw1
        let oldMatches =
            command.data.count > reference.count
            && Self.constantTimeEqual(reference, command.data.prefix(reference.count))
        guard oldMatches else {
            if password == .pw3 {
                status.pw3 = false
            } else {
                status.pw1Signature = false
                status.pw1Other = false
            }
            return wrongPIN(retriesLeft: retries(password))
        }
        guard restoreTries(password) else { return Reply(.memoryFailure) }
        let newPIN = Array(command.data.dropFirst(reference.count))
        let lengths = password == .pw3 ? CardProfile.pw3Lengths : CardProfile.pw1Lengths
        guard lengths.contains(newPIN.count) else { return Reply(.incorrectData) }
        var next = state
        if password == .pw3 { next.pw3 = newPIN } else { next.pw1 = newPIN }
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    /// RESET RETRY COUNTER for PW1: P1 `00` with the Reset Code before the new PIN, P1 `02` after PW3.
    /// OpenPGP card 3.4.1, §7.2.4.
    private mutating func resetRetryCounter(_ command: CommandAPDU) -> Reply {
        guard command.p2 == 0x81, command.p1 == 0x00 || command.p1 == 0x02 else { return Reply(.incorrectP1P2) }
        var newPIN: [UInt8]
        if command.p1 == 0x02 {
            guard status.pw3 else { return Reply(.securityStatusNotSatisfied) }
            newPIN = command.data
        } else {
            guard state.resetCodeRetries > 0, !state.resetCode.isEmpty else {
                return Reply(.authenticationMethodBlocked)
            }
            guard !command.data.isEmpty else { return Reply(.wrongLength) }
            var spent = state
            spent.resetCodeRetries -= 1
            guard commit(spent) else { return Reply(.memoryFailure) }
            let code = state.resetCode
            guard command.data.count > code.count, Self.constantTimeEqual(code, command.data.prefix(code.count)) else {
                return Reply(.wrongPIN(retriesLeft: state.resetCodeRetries))
            }
            var restored = state
            restored.resetCodeRetries = CardProfile.maxRetries
            guard commit(restored) else { return Reply(.memoryFailure) }
            newPIN = Array(command.data.dropFirst(code.count))
        }
        guard CardProfile.pw1Lengths.contains(newPIN.count) else { return Reply(.incorrectData) }
        var next = state
        next.pw1 = newPIN
        next.pw1Retries = CardProfile.maxRetries
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    // MARK: Keys

    /// The public key template `7F49` of the key in `slot`; nil when the slot is empty.
    ///
    /// X25519 public keys travel as raw RFC 7748 bytes, without the `40` prefix OpenPGP uses; RSA keys as
    /// `81 n 82 e`; NIST and brainpool points uncompressed.
    func publicKeyTemplate(_ slot: KeySlot) -> [UInt8]? {
        let key = state.keys[slot.rawValue]
        guard key.origin != .none, let kind = key.attributes.kind else { return nil }
        return try? kind.publicKeyTemplate(secret: key.secret)
    }

    /// GENERATE ASYMMETRIC KEY PAIR: P1 `80` generates (PW3), P1 `81` reads the public key.
    /// The data is a control reference template naming the slot. OpenPGP card 3.4.1, §7.2.14.
    private mutating func generateKeyPair(_ command: CommandAPDU) -> Reply {
        guard command.p2 == 0x00, command.p1 == 0x80 || command.p1 == 0x81 else { return Reply(.incorrectP1P2) }
        guard command.data.count >= 2, let slot = KeySlot(crtTag: command.data[0]) else {
            return Reply(.incorrectData)
        }
        if command.p1 == 0x81 {
            guard let template = publicKeyTemplate(slot) else { return Reply(.referencedDataNotFound) }
            return Reply(.success, data: template)
        }
        guard status.pw3 else { return Reply(.securityStatusNotSatisfied) }
        guard let kind = state.keys[slot.rawValue].attributes.kind else { return Reply(.functionNotSupported) }
        guard var secret = try? kind.generateSecret() else { return Reply(.executionError) }
        var next = state
        next.keys[slot.rawValue].secret = secret
        secureZero(&secret)
        next.keys[slot.rawValue].origin = .generated
        next.keys[slot.rawValue].fingerprint = zeros(20)
        next.keys[slot.rawValue].generationTime = zeros(4)
        if slot == .signature { next.signatureCounter = 0 }
        guard commit(next), let template = publicKeyTemplate(slot) else { return Reply(.memoryFailure) }
        return Reply(.success, data: template)
    }

    /// Key import: PUT DATA with odd INS `DB`, P1-P2 `3FFF`, an extended header list `4D` holding the slot's
    /// CRT, the private key template `7F48` and the concatenated key data `5F48`. OpenPGP card 3.4.1, §4.4.3.12.
    ///
    /// A cv25519 secret arrives big-endian (as gpg sends the OpenPGP MPI) and is stored reversed, in RFC 7748
    /// order; an Ed25519 secret is the RFC 8032 seed. Shorter values (an MPI without leading zeros) are padded.
    private mutating func importKey(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x3F, command.p2 == 0xFF else { return Reply(.incorrectP1P2) }
        guard status.pw3 else { return Reply(.securityStatusNotSatisfied) }
        guard let header = try? TLV.parseOne(command.data), header.tag == 0x4D,
            let parts = try? header.children(), parts.count == 3,
            parts[0].tag <= 0xFF, let slot = KeySlot(crtTag: UInt8(parts[0].tag)),
            parts[1].tag == 0x7F48, parts[2].tag == 0x5F48,
            let template = Self.parseHeaderList(parts[1].value)
        else { return Reply(.incorrectData) }
        guard template.reduce(0, { $0 + $1.length }) == parts[2].value.count else { return Reply(.incorrectData) }
        var offset = 0
        var values: [UInt32: [UInt8]] = [:]
        for (tag, length) in template {
            values[tag] = Array(parts[2].value[offset..<(offset + length)])
            offset += length
        }
        defer { for key in values.keys { secureZero(&values[key]!) } }
        guard let kind = state.keys[slot.rawValue].attributes.kind else { return Reply(.incorrectData) }
        var scalar: [UInt8]
        do { scalar = try kind.importedSecret(values) } catch { return Reply(error.statusWord) }
        var next = state
        next.keys[slot.rawValue].secret = scalar
        secureZero(&scalar)
        next.keys[slot.rawValue].origin = .imported
        if slot == .signature { next.signatureCounter = 0 }
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    /// Parses a private key template: tags with lengths, no values (OpenPGP card 3.4.1, §4.4.3.12).
    static func parseHeaderList(_ bytes: [UInt8]) -> [(tag: UInt32, length: Int)]? {
        var entries: [(tag: UInt32, length: Int)] = []
        var index = 0
        while index < bytes.count {
            var tag = UInt32(bytes[index])
            index += 1
            if tag & 0x1F == 0x1F {
                guard index < bytes.count else { return nil }
                tag = tag << 8 | UInt32(bytes[index])
                index += 1
            }
            guard index < bytes.count else { return nil }
            var length = Int(bytes[index])
            index += 1
            if length == 0x81 || length == 0x82 {
                let count = length & 0x7F
                guard index + count <= bytes.count else { return nil }
                length = bytes[index..<(index + count)].reduce(0) { $0 << 8 | Int($1) }
                index += count
            } else if length > 0x7F {
                return nil
            }
            entries.append((tag, length))
        }
        return entries
    }

    // MARK: Security operations

    /// PSO: COMPUTE DIGITAL SIGNATURE (`9E 9A`) and DECIPHER (`80 86`). OpenPGP card 3.4.1, §7.2.10-11.
    private mutating func performSecurityOperation(_ command: CommandAPDU) -> Reply {
        switch (command.p1, command.p2) {
        case (0x9E, 0x9A): return computeSignature(command)
        case (0x80, 0x86): return decipher(command)
        default: return Reply(.incorrectP1P2)
        }
    }

    private mutating func computeSignature(_ command: CommandAPDU) -> Reply {
        guard status.pw1Signature else { return Reply(.securityStatusNotSatisfied) }
        let signature: [UInt8]
        switch sign(command.data, with: .signature) {
        case .success(let made): signature = made
        case .failure(let failure): return Reply(failure.statusWord)
        }
        var next = state
        next.signatureCounter = min(next.signatureCounter + 1, 0xFFFFFF)
        guard commit(next) else { return Reply(.memoryFailure) }
        if !state.pw1ValidForSeveralSignatures { status.pw1Signature = false }
        return Reply(.success, data: signature)
    }

    /// DECIPHER with the decryption key: for cv25519 and the NIST and brainpool curves
    /// `A6 { 7F49 { 86 <point> } }` (a cv25519 point raw or `40`-prefixed), answering the shared secret; for RSA
    /// `00 || cryptogram`, answering the message with its PKCS#1 v1.5 padding removed. OpenPGP card 3.4.1, §7.2.11.
    private func decipher(_ command: CommandAPDU) -> Reply {
        guard status.pw1Other else { return Reply(.securityStatusNotSatisfied) }
        let key = state.keys[KeySlot.decryption.rawValue]
        if key.origin == .none { return Reply(.referencedDataNotFound) }
        guard let kind = key.attributes.kind else { return Reply(.functionNotSupported) }
        do {
            return Reply(.success, data: try kind.decipher(command.data, secret: key.secret))
        } catch {
            return Reply(error.statusWord)
        }
    }

    /// INTERNAL AUTHENTICATE with the Ed25519 authentication key; needs PW1 (82). OpenPGP card 3.4.1, §7.2.13.
    private func internalAuthenticate(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard status.pw1Other else { return Reply(.securityStatusNotSatisfied) }
        switch sign(command.data, with: .authentication) {
        case .success(let signature): return Reply(.success, data: signature)
        case .failure(let failure): return Reply(failure.statusWord)
        }
    }

    /// Signs with the key in `slot`: Ed25519 over the data, RSA PKCS#1 v1.5 over the DigestInfo, ECDSA over
    /// the digest (`r || s`). No key: `6A88`; a decryption-only algorithm: `6A81`; no data: `6700`.
    private func sign(_ data: [UInt8], with slot: KeySlot) -> Result<[UInt8], KeyFailure> {
        let key = state.keys[slot.rawValue]
        if key.origin == .none { return .failure(KeyFailure(.referencedDataNotFound)) }
        guard !data.isEmpty else { return .failure(KeyFailure(.wrongLength)) }
        guard let kind = key.attributes.kind else { return .failure(KeyFailure(.functionNotSupported)) }
        return Result { () throws(KeyFailure) in try kind.sign(data, secret: key.secret) }
    }

    /// GET CHALLENGE: Le random bytes from libsodium. OpenPGP card 3.4.1, §7.2.15.
    private func getChallenge(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard command.data.isEmpty, let length = command.le, length <= CardProfile.maxChallenge else {
            return Reply(.wrongLength)
        }
        return Reply(.success, data: SecureRandom.bytes(length))
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
