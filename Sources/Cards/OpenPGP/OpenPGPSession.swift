package import TokenpinAPDU
package import TokenpinCore

/// A session with the OpenPGP application on a card, over any `CardConnection`.
///
/// Implements the commands of the OpenPGP card specification 3.4.1 that tokenpin needs: SELECT, GET DATA,
/// VERIFY, CHANGE REFERENCE DATA, RESET RETRY COUNTER, PUT DATA (algorithm attributes), GENERATE
/// ASYMMETRIC KEY PAIR and PSO:DECIPHER. Every answer is treated as hostile; status words become
/// `OpenPGPError`s. PINs go from `SecretBytes` straight into an APDU buffer that is wiped after sending,
/// and the PSO:DECIPHER result goes straight into guarded memory.
///
/// The session keeps no state beyond the connection: the card holds it (selected application, verified
/// PINs). Wrap sequences that must not be interleaved (SELECT, VERIFY, PSO:DECIPHER) in the connection's
/// transaction (`PCSCCardConnection.withTransaction`). Calls block on the connection; keep them off the
/// Swift concurrency cooperative pool.
package struct OpenPGPSession {
    /// The ISO 7816 layer every command goes through.
    var transport: ISO7816Transport

    /// The channel to the card.
    package var connection: any CardConnection { transport.connection }
    /// Receives one line per command and per answer; PIN commands show only their header
    /// (`00 20 00 82 [sensitive]`) and secret answers only their length.
    package var trace: ((String) -> Void)? {
        get { transport.trace }
        set { transport.trace = newValue }
    }

    /// Creates a session; nothing is sent until `select()`.
    package init(connection: any CardConnection, trace: ((String) -> Void)? = nil) {
        transport = ISO7816Transport(connection: connection, names: OpenPGPInstruction.names, trace: trace)
    }

    // MARK: Selection and data objects

    /// Selects the OpenPGP application.
    ///
    /// OpenPGP card 3.4.1, §7.2.1: SELECT `00 A4 04 00` with the AID `D2 76 00 01 24 01`.
    /// Throws `.applicationNotFound` when the card has none.
    package func select() throws(OpenPGPError) {
        let command = CommandAPDU(
            ins: OpenPGPInstruction.select, p1: OpenPGPParameter.selectByName, p2: 0x00,
            data: OpenPGPApplication.aid)
        _ = try send(command)
    }

    /// Reads the application related data (`6E`) and adopts the card's length capabilities.
    ///
    /// OpenPGP card 3.4.1, §7.2.6 GET DATA and §4.4.1. One command gives the serial, the algorithm
    /// attributes, the PW status with the tries left and the fingerprints. When the historical bytes
    /// announce extended length or chaining, `connection.lengthCapabilities` is set accordingly (refined
    /// by `7F66`).
    package func applicationRelatedData() throws(OpenPGPError) -> ApplicationRelatedData {
        let data = try getData(DataObject.applicationRelatedData)
        let parsed: ApplicationRelatedData
        do {
            parsed = try ApplicationRelatedData(parsing: data)
        } catch {
            throw .malformed(error)
        }
        if let capabilities = parsed.lengthCapabilities {
            connection.lengthCapabilities = capabilities
        }
        return parsed
    }

    /// Reads the PW status bytes (`C4`): maximum lengths and tries left, without touching any counter.
    ///
    /// OpenPGP card 3.4.1, §7.2.6 GET DATA.
    package func passwordStatus() throws(OpenPGPError) -> PasswordStatus {
        let data = try getData(DataObject.passwordStatus)
        // Some cards answer with the C4 object itself, others with its value.
        let value = (try? TLV.parseOne(data)).flatMap { $0.tag == DataObject.passwordStatus ? $0.value : nil } ?? data
        do {
            return try PasswordStatus(parsing: value)
        } catch {
            throw .malformed(error)
        }
    }

    /// The value of a data object.
    ///
    /// OpenPGP card 3.4.1, §7.2.6: GET DATA `00 CA` with the tag in P1-P2.
    package func getData(_ tag: UInt32) throws(OpenPGPError) -> [UInt8] {
        guard tag <= 0xFFFF else { throw .invalidArgument("GET DATA takes a tag of at most two bytes") }
        let command = CommandAPDU(
            ins: OpenPGPInstruction.getData, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF),
            le: CommandAPDU.extendedMaxLe)
        return try send(command).data
    }

    // MARK: Passwords

    /// The tries left for a password, without using one.
    ///
    /// OpenPGP card 3.4.1, §7.2.2: VERIFY with an empty body answers `63 Cx` (x tries left) or `90 00`
    /// (already verified) and counts no try. When the card answers `90 00` or does not support the empty
    /// form, the counter comes from the PW status bytes (`C4`) instead; `69 83` is 0.
    package func retriesLeft(_ reference: PasswordReference) throws(OpenPGPError) -> Int {
        let command = CommandAPDU(ins: OpenPGPInstruction.verify, p1: 0x00, p2: reference.rawValue)
        let response = try exchange(command)
        if let retries = response.statusWord.retriesLeft { return retries }
        if response.statusWord == .authenticationMethodBlocked { return 0 }
        return try passwordStatus().retriesLeft(for: reference)
    }

    /// Verifies a password.
    ///
    /// OpenPGP card 3.4.1, §7.2.2: VERIFY `00 20 00 P2` with the PIN. The APDU is marked sensitive (traces
    /// show its header only) and its buffer is wiped before this returns. An empty PIN is refused here,
    /// since an empty VERIFY is the status query and would succeed on a card already verified.
    /// - Throws: `.wrongPIN(retriesLeft:)` (from `63 Cx`, or from `69 82` with the counter read from `C4`),
    ///   `.blocked`, `.invalidArgument` for an empty or over-long PIN, `.transport`.
    package func verify(_ reference: PasswordReference, pin: borrowing SecretBytes) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(pin.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let command = CommandAPDU(ins: OpenPGPInstruction.verify, p1: 0x00, p2: reference.rawValue)
        // Cards such as the YubiKey answer a wrong PIN with 69 82 and no counter: read it from C4.
        try sendPIN(command, pin) { () throws(OpenPGPError) -> Int? in try passwordStatus().retriesLeft(for: reference)
        }
    }

    /// Changes a password, given the current one.
    ///
    /// OpenPGP card 3.4.1, §7.2.3: CHANGE REFERENCE DATA `00 24 00 81` (PW1) or `00 24 00 83` (PW3) with the
    /// current then the new password. Sensitive; the buffer is wiped before this returns.
    /// - Throws: `.wrongPIN(retriesLeft:)`, `.blocked`, `.incorrectData` (new PIN too short for the card).
    package func changeReferenceData(
        _ reference: PasswordReference, current: borrowing SecretBytes,
        new: borrowing SecretBytes
    ) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(current.count), (1...Self.maxPINLength).contains(new.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let command = CommandAPDU(
            ins: OpenPGPInstruction.changeReferenceData, p1: 0x00, p2: reference.changeReference)
        try sendPIN(command, .concatenating(current, new)) { () throws(OpenPGPError) -> Int? in
            try passwordStatus().retriesLeft(for: reference)
        }
    }

    /// Sets a new PW1 and its retry counter with the Resetting Code.
    ///
    /// OpenPGP card 3.4.1, §7.2.4: RESET RETRY COUNTER `00 2C 00 81` with the Resetting Code then the new
    /// PW1. Sensitive; the buffer is wiped before this returns.
    /// - Throws: `.wrongPIN(retriesLeft:)` for a wrong Resetting Code, `.blocked` when it is blocked or not set.
    package func resetRetryCounter(
        resetCode: borrowing SecretBytes,
        newPIN: borrowing SecretBytes
    ) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(resetCode.count), (1...Self.maxPINLength).contains(newPIN.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let command = CommandAPDU(
            ins: OpenPGPInstruction.resetRetryCounter, p1: OpenPGPParameter.resetWithResettingCode,
            p2: PasswordReference.pw1Signing.rawValue)
        try sendPIN(command, .concatenating(resetCode, newPIN)) { () throws(OpenPGPError) -> Int? in
            try passwordStatus().retriesResetCode
        }
    }

    /// Sets a new PW1 and its retry counter after PW3 (admin PIN) was verified.
    ///
    /// OpenPGP card 3.4.1, §7.2.4: RESET RETRY COUNTER `00 2C 02 81` with the new PW1. Sensitive; the buffer
    /// is wiped before this returns. Throws `.securityStatusNotSatisfied` without a verified PW3.
    package func resetRetryCounter(newPIN: borrowing SecretBytes) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(newPIN.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let command = CommandAPDU(
            ins: OpenPGPInstruction.resetRetryCounter, p1: OpenPGPParameter.resetAfterAdminVerification,
            p2: PasswordReference.pw1Signing.rawValue)
        try sendPIN(command, newPIN)
    }

    /// Sets (or with an empty code, deletes) the Resetting Code that unblocks PW1.
    ///
    /// OpenPGP card 3.4.1, §7.2.8 PUT DATA `00 DA 00 D3`. Needs PW3 verified. Sensitive; the buffer is
    /// wiped before this returns.
    package func setResettingCode(_ code: borrowing SecretBytes) throws(OpenPGPError) {
        guard code.count <= Self.maxPINLength else {
            throw .invalidArgument("a Resetting Code must have at most \(Self.maxPINLength) bytes")
        }
        let tag = DataObject.resettingCode
        let command = CommandAPDU(ins: OpenPGPInstruction.putData, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF))
        try sendPIN(command, code)
    }

    /// CLA `00`: interindustry class, no secure messaging, not chained.
    static let interindustryClass: UInt8 = 0x00

    /// The longest password the session sends; the card's own limit (`C4`) may be lower.
    package static let maxPINLength = 127

    // MARK: Keys

    /// Reads the public key of a key slot.
    ///
    /// OpenPGP card 3.4.1, §7.2.14: GENERATE ASYMMETRIC KEY PAIR `00 47 81 00` with the control reference
    /// template (`B6 00`, `B8 00`, `A4 00`). Throws `.referencedDataNotFound` for an empty slot on cards
    /// that say so.
    package func publicKey(for key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        try keyPairCommand(OpenPGPParameter.readPublicKey, key)
    }

    /// Generates a new key pair in a slot, replacing the key there, and returns its public key.
    ///
    /// OpenPGP card 3.4.1, §7.2.14: GENERATE ASYMMETRIC KEY PAIR `00 47 80 00`. Needs PW3 verified
    /// (`.securityStatusNotSatisfied` otherwise); the algorithm is the slot's algorithm attributes.
    package func generateKey(for key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        try keyPairCommand(OpenPGPParameter.generateKeyPair, key)
    }

    private func keyPairCommand(_ p1: UInt8, _ key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        let command = CommandAPDU(
            ins: OpenPGPInstruction.generateAsymmetricKeyPair, p1: p1, p2: 0x00,
            data: [key.controlReferenceTemplate, 0x00], le: CommandAPDU.extendedMaxLe)
        let response = try send(command)
        do {
            return try CardPublicKey(parsing: response.data)
        } catch {
            throw .malformed(error)
        }
    }

    /// Sets the algorithm a key slot uses for the next generated or imported key.
    ///
    /// OpenPGP card 3.4.1, §7.2.8 PUT DATA `00 DA 00 C1`/`C2`/`C3` and §4.4.3.9. Needs PW3 verified.
    /// Throws `.incorrectData` or `.wrongAlgorithm` when the card does not offer the algorithm.
    package func setAlgorithmAttributes(_ attributes: AlgorithmAttributes, for key: KeyReference) throws(OpenPGPError) {
        let tag = key.attributesTag
        let command = CommandAPDU(
            ins: OpenPGPInstruction.putData, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF),
            data: attributes.encoded)
        _ = try send(command)
    }

    // MARK: Decipher

    /// Computes the X25519 shared secret of the card's decryption key and `ephemeralPublicKey`.
    ///
    /// OpenPGP card 3.4.1, §7.2.11: PSO:DECIPHER `00 2A 80 86` with the cipher DO
    /// `A6 { 7F49 { 86 <32 bytes> } }`; needs PW1 (`82`) verified. The answer goes into guarded memory
    /// and every buffer that held it is wiped. A 33-byte answer in the `40 || x` form is accepted.
    /// - Throws: `.securityStatusNotSatisfied` without VERIFY, `.wrongAlgorithm` or `.incorrectData` when
    ///   the decryption key is not cv25519, `.malformed` for an answer that is not 32 bytes,
    ///   `.invalidArgument` for a key that is not 32 bytes.
    package func decipher(ephemeralPublicKey: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard ephemeralPublicKey.count == 32 else {
            throw .invalidArgument("an X25519 public key has 32 bytes, not \(ephemeralPublicKey.count)")
        }
        let cipher = TLV(
            tag: DataObject.cipher,
            children: [
                TLV(tag: DataObject.publicKey, children: [TLV(tag: DataObject.eccPoint, value: ephemeralPublicKey)])
            ]
        ).encoded
        let answer = try decipherExchange(cipher)
        let offset = answer.count == 33 && answer.withUnsafeBytes({ $0[0] }) == 0x40 ? 1 : 0
        guard answer.count - offset == X25519.keyLength else {
            throw .malformed(APDUError(.invalidLength, "shared secret of \(answer.count) bytes, expected 32"))
        }
        return answer.extracting(offset..<(offset + X25519.keyLength))
    }

    /// Computes the ECDH shared secret of the card's NIST or brainpool decryption key and `point`.
    ///
    /// OpenPGP card 3.4.1, §7.2.11: PSO:DECIPHER `00 2A 80 86` with `A6 { 7F49 { 86 <04 || x || y> } }`; needs
    /// PW1 (`82`) verified. Cards answer the x coordinate, some `04 || x || y`: either way the result is the x
    /// coordinate in guarded memory, and every buffer that held the answer is wiped.
    /// - Throws: `.invalidArgument` for a point that is not uncompressed (odd length, no `04`), `.malformed` for
    ///   an answer of another length, and the card's refusals as for `decipher(ephemeralPublicKey:)`.
    package func decipher(ecdhPoint point: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard point.count >= 65, point.count % 2 == 1, point[0] == 0x04, point.count <= 255 - 12 else {
            throw .invalidArgument("an ECDH point must be uncompressed (04 || x || y), not \(point.count) bytes")
        }
        let coordinate = (point.count - 1) / 2
        let cipher = TLV(
            tag: DataObject.cipher,
            children: [TLV(tag: DataObject.publicKey, children: [TLV(tag: DataObject.eccPoint, value: point)])]
        ).encoded
        let answer = try decipherExchange(cipher)
        let offset: Int
        switch answer.count {
        case coordinate: offset = 0
        case point.count where answer.withUnsafeBytes({ $0[0] }) == 0x04: offset = 1
        default:
            throw .malformed(
                APDUError(.invalidLength, "shared secret of \(answer.count) bytes, expected \(coordinate)"))
        }
        return answer.extracting(offset..<(offset + coordinate))
    }

    /// Decrypts an RSA PKCS#1 v1.5 cryptogram with the card's RSA decryption key.
    ///
    /// OpenPGP card 3.4.1, §7.2.11: PSO:DECIPHER `00 2A 80 86` with the padding indicator `00` and the
    /// cryptogram; needs PW1 (`82`) verified. The command is longer than a short APDU: it goes as one
    /// extended APDU when the card takes them, else chained (the cryptogram is public; only the last part's
    /// answer carries the secret). The answer, padding removed by the card, goes into guarded memory.
    /// - Throws: `.invalidArgument` for an empty cryptogram or one the card cannot take, `.malformed` for an
    ///   empty answer, and the card's refusals.
    package func decipher(rsaCryptogram cryptogram: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard !cryptogram.isEmpty, cryptogram.count <= 1024 else {
            throw .invalidArgument("an RSA cryptogram of \(cryptogram.count) bytes")
        }
        let answer = try decipherExchange([0x00] + cryptogram)
        guard answer.count > 0 else {
            throw .malformed(APDUError(.invalidLength, "empty answer to an RSA decipher"))
        }
        return answer
    }

    /// Sends PSO:DECIPHER with public `data` of any length and returns the secret answer in guarded memory:
    /// short, extended when the card takes it, or chained in parts of 254 bytes.
    private func decipherExchange(_ data: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        let command = CommandAPDU(
            ins: OpenPGPInstruction.performSecurityOperation, p1: OpenPGPParameter.decipher.p1,
            p2: OpenPGPParameter.decipher.p2, data: data, le: CommandAPDU.extendedMaxLe)
        do {
            return try transport.sendSensitive(
                command, secret: SecretBytes(count: 0), answer: .secret(max: 1024),
                longCommand: .extendedOrChained(partSize: CommandAPDU.shortMaxData - 1))
        } catch {
            throw OpenPGPError(error)
        }
    }

    // MARK: Plumbing

    /// Sends a command through the transport; any status but `90 00` throws.
    private func send(_ command: CommandAPDU) throws(OpenPGPError) -> ResponseAPDU {
        do { return try transport.send(command) } catch { throw OpenPGPError(error) }
    }

    /// Sends a command and returns its answer whatever its status (the query forms).
    private func exchange(_ command: CommandAPDU) throws(OpenPGPError) -> ResponseAPDU {
        do { return try transport.exchange(command) } catch { throw OpenPGPError(error) }
    }

    /// Sends a command whose data is `secret` (one PIN or two), traced as its header only, every copy wiped.
    ///
    /// A `69 82` answer is a wrong PIN when `wrongPINCounter` reads its counter (`C4`): cards such as the YubiKey
    /// and Gnuk answer a wrong PIN so, without a counter.
    private func sendPIN(
        _ command: CommandAPDU, _ secret: borrowing SecretBytes,
        wrongPINCounter: () throws(OpenPGPError) -> Int? = { nil }
    ) throws(OpenPGPError) {
        do {
            _ = try transport.sendSensitive(command, secret: secret)
        } catch .refused(.securityStatusNotSatisfied, _) {
            guard let left = try wrongPINCounter() else { throw .securityStatusNotSatisfied }
            throw left == 0 ? .blocked : .wrongPIN(retriesLeft: left)
        } catch {
            throw OpenPGPError(error)
        }
    }
}
