import TokenpinAPDU
import TokenpinCardCrypto
import TokenpinCore

/// The PIV application's instruction bytes. SP 800-73-4, part 2, §3; the YubiKey extensions in piv-facts.md.
package enum PIVInstruction {
    package static let getData: UInt8 = 0xCB
    package static let putData: UInt8 = 0xDB
    package static let generalAuthenticate: UInt8 = 0x87
    package static let generateKeyPair: UInt8 = 0x47
    /// YubiKey: GET VERSION, GET SERIAL, GET METADATA, SET MANAGEMENT KEY, SET PIN RETRIES, RESET.
    package static let getVersion: UInt8 = 0xFD
    package static let getSerial: UInt8 = 0xF8
    package static let getMetadata: UInt8 = 0xF7
    package static let setManagementKey: UInt8 = 0xFF
    package static let setPINRetries: UInt8 = 0xFA
    package static let reset: UInt8 = 0xFB
}

/// The PIV application's volatile security status; cleared by power off, reset and SELECT.
struct PIVSecurityStatus: Equatable, Sendable {
    var selected = false
    var pinVerified = false
    var managementKeyAuthenticated = false
    /// Mutual authentication step 1 sent a witness; step 2 must return it decrypted.
    var witness: [UInt8]?
    /// Single-sided authentication sent a challenge; the host must return it encrypted.
    var challenge: [UInt8]?
}

/// The PIV application (SP 800-73-4) with the YubiKey 5 extensions: command semantics over `PIVState`.
///
/// Like the OpenPGP application, every change is written to the state file before the answer reports it, and
/// PIN and PUK counters are decremented and written before the comparison. The state file holds the OpenPGP
/// state too, so a write takes the card's whole state (`base`) and replaces only the PIV part.
struct PIVApplication: Sendable {
    private(set) var state: PIVState
    var status = PIVSecurityStatus()
    let store: StateFile?
    let serial: UInt32
    let yubiKeyExtensions: Bool
    /// The card's whole state as the OpenPGP application last wrote it, for writes of the PIV part.
    var base: CardState

    init(state: PIVState, base: CardState, store: StateFile?, yubiKeyExtensions: Bool) {
        self.state = state
        self.base = base
        self.store = store
        self.serial = base.serial
        self.yubiKeyExtensions = yubiKeyExtensions
    }

    mutating func commit(_ newState: PIVState) -> Bool {
        if newState == state { return true }
        var whole = base
        whole.piv = newState
        if let store {
            do { try store.save(whole) } catch { return false }
        }
        base = whole
        state = newState
        return true
    }

    /// Runs one complete (unchained) command.
    mutating func handle(_ command: CommandAPDU) -> Reply {
        if command.ins == CardInstruction.select { return select(command) }
        guard status.selected else { return Reply(.instructionNotSupported) }
        switch command.ins {
        case PIVInstruction.getData: return getData(command)
        case PIVInstruction.putData: return putData(command)
        case CardInstruction.verify: return verify(command)
        case CardInstruction.changeReferenceData: return changeReferenceData(command)
        case CardInstruction.resetRetryCounter: return resetRetryCounter(command)
        case PIVInstruction.generateKeyPair: return generateKeyPair(command)
        case PIVInstruction.generalAuthenticate: return generalAuthenticate(command)
        default: break
        }
        guard yubiKeyExtensions else { return Reply(.instructionNotSupported) }
        switch command.ins {
        case PIVInstruction.getVersion: return Reply(.success, data: PIVProfile.firmwareVersion)
        case PIVInstruction.getSerial: return Reply(.success, data: YubiKeyDevice.bigEndian(serial))
        case PIVInstruction.getMetadata: return metadata(command)
        case PIVInstruction.setManagementKey: return setManagementKey(command)
        case PIVInstruction.setPINRetries: return setPINRetries(command)
        case PIVInstruction.reset: return resetApplication(command)
        default: return Reply(.instructionNotSupported)
        }
    }

    /// Whether a SELECT with `data` names this application: a prefix of the AID, at least the 5-byte RID.
    static func isSelected(by data: [UInt8]) -> Bool {
        data.count >= 5 && PIVProfile.aid.starts(with: data)
    }

    private mutating func select(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x04, Self.isSelected(by: command.data) else {
            status = PIVSecurityStatus()
            return Reply(.fileNotFound)
        }
        status = PIVSecurityStatus(selected: true)
        return Reply(.success, data: PIVProfile.applicationPropertyTemplate)
    }

    // MARK: Data objects

    /// The object ID in a `5C` tag list, as an integer; nil when the list is malformed.
    private static func objectID(_ data: [UInt8]) -> (id: UInt32, rest: [UInt8])? {
        guard let (tag, end) = try? TLV.parse(data, at: 0), tag.tag == 0x5C, (1...3).contains(tag.value.count) else {
            return nil
        }
        return (tag.value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }, Array(data[end...]))
    }

    private func getData(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x3F, command.p2 == 0xFF else { return Reply(.incorrectP1P2) }
        guard let (id, rest) = Self.objectID(command.data), rest.isEmpty else { return Reply(.incorrectData) }
        if id == 0x7E { return Reply(.success, data: PIVProfile.discoveryObject) }
        if PIVProfile.pinProtectedObjects.contains(id) && !status.pinVerified {
            return Reply(.securityStatusNotSatisfied)
        }
        guard let value = state.objects[id] else { return Reply(.fileNotFound) }
        return Reply(.success, data: TLV(tag: 0x53, value: value).encoded)
    }

    /// PUT DATA `5C id 53 value` with the management key authenticated; an empty `53` deletes the object.
    private mutating func putData(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x3F, command.p2 == 0xFF else { return Reply(.incorrectP1P2) }
        guard status.managementKeyAuthenticated else { return Reply(.securityStatusNotSatisfied) }
        guard let (id, rest) = Self.objectID(command.data), id != 0x7E,
            let object = try? TLV.parseOne(rest), object.tag == 0x53
        else { return Reply(.incorrectData) }
        guard object.value.count <= PIVProfile.maxObjectSize else { return Reply(.wrongLength) }
        var next = state
        next.objects[id] = object.value.isEmpty ? nil : object.value
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    // MARK: PIN and PUK

    /// The PIN or PUK without its `FF` padding; nil unless the data is 8 bytes of 6–8 characters then `FF`.
    private static func unpadded(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        guard bytes.count == 8 else { return nil }
        let value = Array(bytes.prefix { $0 != 0xFF })
        guard PIVProfile.pinLengths.contains(value.count), bytes.dropFirst(value.count).allSatisfy({ $0 == 0xFF })
        else {
            return nil
        }
        return value
    }

    private static func padded(_ value: [UInt8]) -> [UInt8] {
        value + [UInt8](repeating: 0xFF, count: max(0, 8 - value.count))
    }

    /// Compares a stored PIN or PUK with 8 padded bytes, in constant time through guarded memory.
    private static func matches(_ reference: [UInt8], _ candidate: ArraySlice<UInt8>) -> Bool {
        let secret = guardedCopy(padded(reference))
        return Array(candidate).withUnsafeBytes { secret.isEqual(to: $0) }
    }

    private func retries(_ reference: UInt8) -> Int {
        reference == PIVProfile.pinReference ? state.pinRetries : state.pukRetries
    }

    /// Takes one try off the counter and writes it, before any comparison.
    private mutating func spendTry(_ reference: UInt8) -> Bool {
        var next = state
        if reference == PIVProfile.pinReference { next.pinRetries -= 1 } else { next.pukRetries -= 1 }
        return commit(next)
    }

    /// VERIFY `00 20 00 80` with 8 padded bytes; no data asks for the status; P1 `FF` logs out.
    private mutating func verify(_ command: CommandAPDU) -> Reply {
        guard command.p2 == PIVProfile.pinReference else { return Reply(.referencedDataNotFound) }
        switch command.p1 {
        case 0xFF:
            guard command.data.isEmpty else { return Reply(.wrongLength) }
            status.pinVerified = false
            return .ok
        case 0x00: break
        default: return Reply(.incorrectP1P2)
        }
        if command.data.isEmpty {
            if status.pinVerified { return .ok }
            return state.pinRetries == 0
                ? Reply(.authenticationMethodBlocked) : Reply(.wrongPIN(retriesLeft: state.pinRetries))
        }
        guard state.pinRetries > 0 else { return Reply(.authenticationMethodBlocked) }
        guard command.data.count == 8 else { return Reply(.incorrectData) }
        guard spendTry(PIVProfile.pinReference) else { return Reply(.memoryFailure) }
        guard Self.matches(state.pin, command.data[...]) else {
            status.pinVerified = false
            return Reply(.wrongPIN(retriesLeft: state.pinRetries))
        }
        var next = state
        next.pinRetries = next.pinMaxRetries
        guard commit(next) else { return Reply(.memoryFailure) }
        status.pinVerified = true
        return .ok
    }

    /// CHANGE REFERENCE DATA `00 24 00 80|81`: old and new, 8 padded bytes each.
    private mutating func changeReferenceData(_ command: CommandAPDU) -> Reply {
        let reference = command.p2
        guard command.p1 == 0x00, reference == PIVProfile.pinReference || reference == PIVProfile.pukReference else {
            return Reply(.referencedDataNotFound)
        }
        guard retries(reference) > 0 else { return Reply(.authenticationMethodBlocked) }
        guard command.data.count == 16, let new = Self.unpadded(command.data[8...]) else {
            return Reply(.incorrectData)
        }
        guard spendTry(reference) else { return Reply(.memoryFailure) }
        let isPIN = reference == PIVProfile.pinReference
        guard Self.matches(isPIN ? state.pin : state.puk, command.data.prefix(8)) else {
            if isPIN { status.pinVerified = false }
            return Reply(.wrongPIN(retriesLeft: retries(reference)))
        }
        var next = state
        if isPIN {
            next.pin = new
            next.pinRetries = next.pinMaxRetries
        } else {
            next.puk = new
            next.pukRetries = next.pukMaxRetries
        }
        guard commit(next) else { return Reply(.memoryFailure) }
        if isPIN { status.pinVerified = true }
        return .ok
    }

    /// RESET RETRY COUNTER `00 2C 00 80`: the PUK then the new PIN, 8 padded bytes each.
    private mutating func resetRetryCounter(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == PIVProfile.pinReference else { return Reply(.referencedDataNotFound) }
        guard state.pukRetries > 0 else { return Reply(.authenticationMethodBlocked) }
        guard command.data.count == 16, let new = Self.unpadded(command.data[8...]) else {
            return Reply(.incorrectData)
        }
        guard spendTry(PIVProfile.pukReference) else { return Reply(.memoryFailure) }
        guard Self.matches(state.puk, command.data.prefix(8)) else {
            return Reply(.wrongPIN(retriesLeft: state.pukRetries))
        }
        var next = state
        next.pin = new
        next.pinRetries = next.pinMaxRetries
        next.pukRetries = next.pukMaxRetries
        status.pinVerified = false
        return commit(next) ? .ok : Reply(.memoryFailure)
    }

    // MARK: Keys

    /// GENERATE ASYMMETRIC KEY PAIR `00 47 00 slot AC{80 alg [AA pin] [AB touch]}`, management key required.
    private mutating func generateKeyPair(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00 else { return Reply(.incorrectP1P2) }
        guard PIVProfile.isKeySlot(command.p2) else { return Reply(.wrongP1P2) }
        guard status.managementKeyAuthenticated else { return Reply(.securityStatusNotSatisfied) }
        guard let template = try? TLV.parseOne(command.data), template.tag == 0xAC,
            let children = try? template.children(),
            let algorithmByte = children.first(where: { $0.tag == 0x80 })?.value, algorithmByte.count == 1
        else { return Reply(.incorrectData) }
        guard let algorithm = PIVKeyAlgorithm(rawValue: algorithmByte[0]) else { return Reply(.incorrectData) }
        var pinPolicy = PIVState.defaultPINPolicy(for: command.p2)
        if let policy = children.first(where: { $0.tag == 0xAA })?.value {
            guard policy.count == 1, (0...3).contains(policy[0]) else { return Reply(.incorrectData) }
            if policy[0] != 0 { pinPolicy = policy[0] }
        }
        if let touch = children.first(where: { $0.tag == 0xAB })?.value {
            // No button: only "never" (or the default) can be honoured.
            guard touch.count == 1, touch[0] <= 0x01 else { return Reply(.incorrectData) }
        }
        guard let secret = try? algorithm.kind.generateSecret(),
            let publicKey = try? algorithm.kind.publicKeyTemplate(secret: secret)
        else { return Reply(.executionError) }
        var next = state
        next.keys[command.p2] = PIVState.Key(
            algorithm: algorithm, secret: secret, origin: 0x01, pinPolicy: pinPolicy,
            touchPolicy: 0x01)
        return commit(next) ? Reply(.success, data: publicKey) : Reply(.memoryFailure)
    }

    /// GENERAL AUTHENTICATE `00 87 alg key 7C{…}`: the management key's challenge-response (key `9B`), or a
    /// private key operation: `81` data to sign or decrypt, `85` a peer point for ECDH; the answer in `82`.
    private mutating func generalAuthenticate(_ command: CommandAPDU) -> Reply {
        guard let template = try? TLV.parseOne(command.data), template.tag == 0x7C,
            let children = try? template.children()
        else { return Reply(.incorrectData) }
        var items: [UInt32: [UInt8]] = [:]
        for child in children { items[child.tag] = child.value }
        if command.p2 == PIVProfile.managementKeyReference {
            return authenticateManagementKey(algorithm: command.p1, items)
        }
        guard PIVProfile.isKeySlot(command.p2) else { return Reply(.wrongP1P2) }
        guard let key = state.keys[command.p2] else { return Reply(.referencedDataNotFound) }
        guard key.algorithm.rawValue == command.p1 else { return Reply(.incorrectData) }
        if key.pinPolicy != 0x01 {
            guard status.pinVerified else { return Reply(.securityStatusNotSatisfied) }
            // PIN "always": the verification covers this one operation.
            if key.pinPolicy == 0x03 { status.pinVerified = false }
        }
        guard items[0x82] == [] else { return Reply(.incorrectData) }
        if let point = items[0x85] {
            guard let curve = key.algorithm.curve, point.count == 1 + 2 * curve.coordinateLength,
                let shared = try? EllipticCurveDH.sharedSecret(
                    privateKey: guardedCopy(key.secret), peerPoint: point, on: curve)
            else { return Reply(.incorrectData) }
            return Reply(
                .success,
                data: TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: shared.withUnsafeBytes { Array($0) })]).encoded)
        }
        guard let input = items[0x81], !input.isEmpty else { return Reply(.incorrectData) }
        let output: [UInt8]
        if let curve = key.algorithm.curve {
            // The host sends the hash; a longer one is truncated to the key's size.
            guard
                let raw = try? CardSignatures.ecdsaSign(
                    Array(input.prefix(curve.coordinateLength)),
                    privateKey: guardedCopy(key.secret), on: curve)
            else { return Reply(.incorrectData) }
            output = Self.derSignature(raw)
        } else {
            guard let stored = StoredRSAKey(stored: key.secret), let privateKey = try? stored.privateKey(),
                let result = try? RSAKeys.rawPrivate(input, with: privateKey)
            else { return Reply(.incorrectData) }
            output = result.withUnsafeBytes { Array($0) }
        }
        return Reply(.success, data: TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: output)]).encoded)
    }

    /// `SEQUENCE { INTEGER r, INTEGER s }` from `r || s`.
    static func derSignature(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return TLV(tag: 0x02, value: value).encoded
        }
        let half = raw.count / 2
        return TLV(tag: 0x30, value: integer(raw.prefix(half)) + integer(raw.suffix(half))).encoded
    }

    private mutating func authenticateManagementKey(algorithm: UInt8, _ items: [UInt32: [UInt8]]) -> Reply {
        guard algorithm == state.managementAlgorithm.rawValue else { return Reply(.incorrectP1P2) }
        let cipher = state.managementAlgorithm
        let key = guardedCopy(state.managementKey)
        let witness = status.witness
        let challenge = status.challenge
        status.witness = nil
        status.challenge = nil
        if items[0x80] == [] && items.count == 1 {
            // Mutual, step 1: a witness, encrypted; the host must send it back decrypted.
            status.managementKeyAuthenticated = false
            let plain = SecureRandom.bytes(cipher.blockLength)
            guard let encrypted = try? BlockCiphers.encrypt(plain, key: key, algorithm: cipher) else {
                return Reply(.executionError)
            }
            status.witness = plain
            return Reply(.success, data: TLV(tag: 0x7C, children: [TLV(tag: 0x80, value: encrypted)]).encoded)
        }
        if items[0x81] == [] && items.count == 1 {
            // Single-sided, step 1: a challenge the host must encrypt.
            status.managementKeyAuthenticated = false
            let plain = SecureRandom.bytes(cipher.blockLength)
            status.challenge = plain
            return Reply(.success, data: TLV(tag: 0x7C, children: [TLV(tag: 0x81, value: plain)]).encoded)
        }
        if let decrypted = items[0x80], let hostChallenge = items[0x81], items.count == 2 {
            // Mutual, step 2: check the witness, then prove the card knows the key too.
            guard let witness, decrypted.count == witness.count, hostChallenge.count == cipher.blockLength,
                decrypted.withUnsafeBytes({ guardedCopy(witness).isEqual(to: $0) })
            else {
                status.managementKeyAuthenticated = false
                return Reply(.securityStatusNotSatisfied)
            }
            guard let answer = try? BlockCiphers.encrypt(hostChallenge, key: key, algorithm: cipher) else {
                return Reply(.executionError)
            }
            status.managementKeyAuthenticated = true
            return Reply(.success, data: TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: answer)]).encoded)
        }
        if let response = items[0x82], items.count == 1 {
            guard let challenge, let expected = try? BlockCiphers.encrypt(challenge, key: key, algorithm: cipher),
                response.count == expected.count,
                response.withUnsafeBytes({ guardedCopy(expected).isEqual(to: $0) })
            else {
                status.managementKeyAuthenticated = false
                return Reply(.securityStatusNotSatisfied)
            }
            status.managementKeyAuthenticated = true
            return .ok
        }
        return Reply(.incorrectData)
    }
}
