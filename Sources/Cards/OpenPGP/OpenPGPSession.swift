public import TokenpinAPDU
public import TokenpinCore

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
public struct OpenPGPSession {
    /// The channel to the card.
    public let connection: any CardConnection
    /// Receives one line per command and per answer; PIN commands show only their header
    /// (`00 20 00 82 [sensitive]`) and secret answers only their length.
    public var trace: ((String) -> Void)?

    /// Creates a session; nothing is sent until `select()`.
    public init(connection: any CardConnection, trace: ((String) -> Void)? = nil) {
        self.connection = connection
        self.trace = trace
    }

    // MARK: Selection and data objects

    /// Selects the OpenPGP application.
    ///
    /// OpenPGP card 3.4.1, §7.2.1: SELECT `00 A4 04 00` with the AID `D2 76 00 01 24 01`.
    /// Throws `.applicationNotFound` when the card has none.
    public func select() throws(OpenPGPError) {
        let command = CommandAPDU(
            ins: OpenPGPInstruction.select, p1: OpenPGPParameter.selectByName, p2: 0x00,
            data: OpenPGPApplication.aid)
        try check(send(command))
    }

    /// Reads the application related data (`6E`) and adopts the card's length capabilities.
    ///
    /// OpenPGP card 3.4.1, §7.2.6 GET DATA and §4.4.1. One command gives the serial, the algorithm
    /// attributes, the PW status with the tries left and the fingerprints. When the historical bytes
    /// announce extended length or chaining, `connection.lengthCapabilities` is set accordingly (refined
    /// by `7F66`).
    public func applicationRelatedData() throws(OpenPGPError) -> ApplicationRelatedData {
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
    public func passwordStatus() throws(OpenPGPError) -> PasswordStatus {
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
    public func getData(_ tag: UInt32) throws(OpenPGPError) -> [UInt8] {
        guard tag <= 0xFFFF else { throw .invalidArgument("GET DATA takes a tag of at most two bytes") }
        let command = CommandAPDU(
            ins: OpenPGPInstruction.getData, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF),
            le: CommandAPDU.extendedMaxLe)
        let response = try send(command)
        try check(response)
        return response.data
    }

    // MARK: Passwords

    /// The tries left for a password, without using one.
    ///
    /// OpenPGP card 3.4.1, §7.2.2: VERIFY with an empty body answers `63 Cx` (x tries left) or `90 00`
    /// (already verified) and counts no try. When the card answers `90 00` or does not support the empty
    /// form, the counter comes from the PW status bytes (`C4`) instead; `69 83` is 0.
    public func retriesLeft(_ reference: PasswordReference) throws(OpenPGPError) -> Int {
        let command = CommandAPDU(ins: OpenPGPInstruction.verify, p1: 0x00, p2: reference.rawValue)
        let response = try send(command)
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
    public func verify(_ reference: PasswordReference, pin: borrowing SecretBytes) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(pin.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let header = [Self.interindustryClass, OpenPGPInstruction.verify, 0x00, reference.rawValue]
        let response = try exchangeSensitive(header: header, dataCount: pin.count, le: nil) { apdu in
            pin.withUnsafeBytes { apdu.append(contentsOf: $0) }
        }
        var data = response.data
        secureZero(&data)
        try checkPINAnswer(response.statusWord, for: reference)
    }

    /// What the answer to a command with a PIN of `reference` means, whoever sent the PIN (tokenpin, or a reader
    /// from its keypad): `69 82` reads the counter from `C4` (cards such as the YubiKey answer a wrong PIN so).
    func checkPINAnswer(_ statusWord: StatusWord, for reference: PasswordReference) throws(OpenPGPError) {
        if statusWord == .securityStatusNotSatisfied {
            let retries = try passwordStatus().retriesLeft(for: reference)
            throw retries == 0 ? .blocked : .wrongPIN(retriesLeft: retries)
        }
        try check(statusWord)
    }

    /// Changes a password, given the current one.
    ///
    /// OpenPGP card 3.4.1, §7.2.3: CHANGE REFERENCE DATA `00 24 00 81` (PW1) or `00 24 00 83` (PW3) with the
    /// current then the new password. Sensitive; the buffer is wiped before this returns.
    /// - Throws: `.wrongPIN(retriesLeft:)`, `.blocked`, `.incorrectData` (new PIN too short for the card).
    public func changeReferenceData(
        _ reference: PasswordReference, current: borrowing SecretBytes,
        new: borrowing SecretBytes
    ) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(current.count), (1...Self.maxPINLength).contains(new.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let header = [Self.interindustryClass, OpenPGPInstruction.changeReferenceData, 0x00, reference.changeReference]
        let response = try exchangeSensitive(header: header, dataCount: current.count + new.count, le: nil) { apdu in
            current.withUnsafeBytes { apdu.append(contentsOf: $0) }
            new.withUnsafeBytes { apdu.append(contentsOf: $0) }
        }
        try checkPINAnswer(response.statusWord, for: reference)
    }

    /// Sets a new PW1 and its retry counter with the Resetting Code.
    ///
    /// OpenPGP card 3.4.1, §7.2.4: RESET RETRY COUNTER `00 2C 00 81` with the Resetting Code then the new
    /// PW1. Sensitive; the buffer is wiped before this returns.
    /// - Throws: `.wrongPIN(retriesLeft:)` for a wrong Resetting Code, `.blocked` when it is blocked or not set.
    public func resetRetryCounter(
        resetCode: borrowing SecretBytes,
        newPIN: borrowing SecretBytes
    ) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(resetCode.count), (1...Self.maxPINLength).contains(newPIN.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let header = [
            Self.interindustryClass, OpenPGPInstruction.resetRetryCounter,
            OpenPGPParameter.resetWithResettingCode, PasswordReference.pw1Signing.rawValue,
        ]
        let response = try exchangeSensitive(header: header, dataCount: resetCode.count + newPIN.count, le: nil) {
            apdu in
            resetCode.withUnsafeBytes { apdu.append(contentsOf: $0) }
            newPIN.withUnsafeBytes { apdu.append(contentsOf: $0) }
        }
        if response.statusWord == .securityStatusNotSatisfied {
            let retries = try passwordStatus().retriesResetCode
            throw retries == 0 ? .blocked : .wrongPIN(retriesLeft: retries)
        }
        try check(response.statusWord)
    }

    /// Sets a new PW1 and its retry counter after PW3 (admin PIN) was verified.
    ///
    /// OpenPGP card 3.4.1, §7.2.4: RESET RETRY COUNTER `00 2C 02 81` with the new PW1. Sensitive; the buffer
    /// is wiped before this returns. Throws `.securityStatusNotSatisfied` without a verified PW3.
    public func resetRetryCounter(newPIN: borrowing SecretBytes) throws(OpenPGPError) {
        guard (1...Self.maxPINLength).contains(newPIN.count) else {
            throw .invalidArgument("a PIN must have 1 to \(Self.maxPINLength) bytes")
        }
        let header = [
            Self.interindustryClass, OpenPGPInstruction.resetRetryCounter,
            OpenPGPParameter.resetAfterAdminVerification, PasswordReference.pw1Signing.rawValue,
        ]
        let response = try exchangeSensitive(header: header, dataCount: newPIN.count, le: nil) { apdu in
            newPIN.withUnsafeBytes { apdu.append(contentsOf: $0) }
        }
        try check(response.statusWord)
    }

    /// Sets (or with an empty code, deletes) the Resetting Code that unblocks PW1.
    ///
    /// OpenPGP card 3.4.1, §7.2.8 PUT DATA `00 DA 00 D3`. Needs PW3 verified. Sensitive; the buffer is
    /// wiped before this returns.
    public func setResettingCode(_ code: borrowing SecretBytes) throws(OpenPGPError) {
        guard code.count <= Self.maxPINLength else {
            throw .invalidArgument("a Resetting Code must have at most \(Self.maxPINLength) bytes")
        }
        let tag = DataObject.resettingCode
        let header = [Self.interindustryClass, OpenPGPInstruction.putData, UInt8(tag >> 8), UInt8(tag & 0xFF)]
        let response = try exchangeSensitive(header: header, dataCount: code.count, le: nil) { apdu in
            code.withUnsafeBytes { apdu.append(contentsOf: $0) }
        }
        try check(response.statusWord)
    }

    /// CLA `00`: interindustry class, no secure messaging, not chained.
    static let interindustryClass: UInt8 = 0x00

    /// The longest password the session sends; the card's own limit (`C4`) may be lower.
    public static let maxPINLength = 127

    // MARK: Keys

    /// Reads the public key of a key slot.
    ///
    /// OpenPGP card 3.4.1, §7.2.14: GENERATE ASYMMETRIC KEY PAIR `00 47 81 00` with the control reference
    /// template (`B6 00`, `B8 00`, `A4 00`). Throws `.referencedDataNotFound` for an empty slot on cards
    /// that say so.
    public func publicKey(for key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        try keyPairCommand(OpenPGPParameter.readPublicKey, key)
    }

    /// Generates a new key pair in a slot, replacing the key there, and returns its public key.
    ///
    /// OpenPGP card 3.4.1, §7.2.14: GENERATE ASYMMETRIC KEY PAIR `00 47 80 00`. Needs PW3 verified
    /// (`.securityStatusNotSatisfied` otherwise); the algorithm is the slot's algorithm attributes.
    public func generateKey(for key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        try keyPairCommand(OpenPGPParameter.generateKeyPair, key)
    }

    private func keyPairCommand(_ p1: UInt8, _ key: KeyReference) throws(OpenPGPError) -> CardPublicKey {
        let command = CommandAPDU(
            ins: OpenPGPInstruction.generateAsymmetricKeyPair, p1: p1, p2: 0x00,
            data: [key.controlReferenceTemplate, 0x00], le: CommandAPDU.extendedMaxLe)
        let response = try send(command)
        try check(response)
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
    public func setAlgorithmAttributes(_ attributes: AlgorithmAttributes, for key: KeyReference) throws(OpenPGPError) {
        let tag = key.attributesTag
        let command = CommandAPDU(
            ins: OpenPGPInstruction.putData, p1: UInt8(tag >> 8), p2: UInt8(tag & 0xFF),
            data: attributes.encoded)
        try check(send(command))
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
    public func decipher(ephemeralPublicKey: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard ephemeralPublicKey.count == 32 else {
            throw .invalidArgument("an X25519 public key has 32 bytes, not \(ephemeralPublicKey.count)")
        }
        let cipher = TLV(
            tag: DataObject.cipher,
            children: [
                TLV(tag: DataObject.publicKey, children: [TLV(tag: DataObject.eccPoint, value: ephemeralPublicKey)])
            ]
        ).encoded
        let header = [
            Self.interindustryClass, OpenPGPInstruction.performSecurityOperation,
            OpenPGPParameter.decipher.p1, OpenPGPParameter.decipher.p2,
        ]
        var response = try exchangeSensitive(
            header: header, dataCount: cipher.count, le: 256,
            describeData: true
        ) { apdu in
            apdu.append(contentsOf: cipher)
        }
        guard response.statusWord.isSuccess else {
            secureZero(&response.data)
            try check(response.statusWord)
            throw .unexpected(response.statusWord)
        }
        let offset = response.data.count == 33 && response.data[0] == 0x40 ? 1 : 0
        guard response.data.count - offset == X25519.keyLength else {
            let count = response.data.count
            secureZero(&response.data)
            throw .malformed(APDUError(.invalidLength, "shared secret of \(count) bytes, expected 32"))
        }
        let secret = SecretBytes(count: X25519.keyLength)
        secret.withUnsafeMutableBytes { out in
            response.data.withUnsafeBytes { answer in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: answer[offset..<(offset + X25519.keyLength)]))
            }
        }
        secureZero(&response.data)
        return secret
    }

    /// Computes the ECDH shared secret of the card's NIST or brainpool decryption key and `point`.
    ///
    /// OpenPGP card 3.4.1, §7.2.11: PSO:DECIPHER `00 2A 80 86` with `A6 { 7F49 { 86 <04 || x || y> } }`; needs
    /// PW1 (`82`) verified. Cards answer the x coordinate, some `04 || x || y`: either way the result is the x
    /// coordinate in guarded memory, and every buffer that held the answer is wiped.
    /// - Throws: `.invalidArgument` for a point that is not uncompressed (odd length, no `04`), `.malformed` for
    ///   an answer of another length, and the card's refusals as for `decipher(ephemeralPublicKey:)`.
    public func decipher(ecdhPoint point: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard point.count >= 65, point.count % 2 == 1, point[0] == 0x04, point.count <= 255 - 12 else {
            throw .invalidArgument("an ECDH point must be uncompressed (04 || x || y), not \(point.count) bytes")
        }
        let coordinate = (point.count - 1) / 2
        let cipher = TLV(
            tag: DataObject.cipher,
            children: [TLV(tag: DataObject.publicKey, children: [TLV(tag: DataObject.eccPoint, value: point)])]
        ).encoded
        var response = try decipherExchange(cipher, describeData: true)
        let offset: Int
        switch response.count {
        case coordinate: offset = 0
        case point.count where response.first == 0x04: offset = 1
        default:
            let count = response.count
            secureZero(&response)
            throw .malformed(APDUError(.invalidLength, "shared secret of \(count) bytes, expected \(coordinate)"))
        }
        let secret = SecretBytes(count: coordinate)
        secret.withUnsafeMutableBytes { out in
            response.withUnsafeBytes { answer in
                out.copyMemory(from: UnsafeRawBufferPointer(rebasing: answer[offset..<(offset + coordinate)]))
            }
        }
        secureZero(&response)
        return secret
    }

    /// Decrypts an RSA PKCS#1 v1.5 cryptogram with the card's RSA decryption key.
    ///
    /// OpenPGP card 3.4.1, §7.2.11: PSO:DECIPHER `00 2A 80 86` with the padding indicator `00` and the
    /// cryptogram; needs PW1 (`82`) verified. The command is longer than a short APDU: it goes as one
    /// extended APDU when the card takes them, else chained (the cryptogram is public; only the last part's
    /// answer carries the secret). The answer, padding removed by the card, goes into guarded memory.
    /// - Throws: `.invalidArgument` for an empty cryptogram or one the card cannot take, `.malformed` for an
    ///   empty answer, and the card's refusals.
    public func decipher(rsaCryptogram cryptogram: [UInt8]) throws(OpenPGPError) -> SecretBytes {
        guard !cryptogram.isEmpty, cryptogram.count <= 1024 else {
            throw .invalidArgument("an RSA cryptogram of \(cryptogram.count) bytes")
        }
        var response = try decipherExchange([0x00] + cryptogram, describeData: true)
        guard !response.isEmpty else {
            throw .malformed(APDUError(.invalidLength, "empty answer to an RSA decipher"))
        }
        // Copied into guarded memory; the array is wiped.
        return SecretBytes(consuming: &response)
    }

    /// Sends PSO:DECIPHER with public `data` of any length and returns the secret answer's data (the caller
    /// wipes it): short, extended when the card takes it, or chained.
    private func decipherExchange(_ data: [UInt8], describeData: Bool) throws(OpenPGPError) -> [UInt8] {
        let header = [
            Self.interindustryClass, OpenPGPInstruction.performSecurityOperation,
            OpenPGPParameter.decipher.p1, OpenPGPParameter.decipher.p2,
        ]
        let capabilities = connection.lengthCapabilities
        var remaining = data[...]
        var extended = false
        if data.count > CommandAPDU.shortMaxData {
            if capabilities.extendedLength && data.count <= capabilities.maxCommandData {
                extended = true
            } else {
                guard capabilities.commandChaining else {
                    throw .invalidArgument("the card takes neither extended APDUs nor chaining for \(data.count) bytes")
                }
                let chunk = CommandAPDU.shortMaxData - 1
                while remaining.count > chunk {
                    var part = CommandAPDU(
                        ins: header[1], p1: header[2], p2: header[3], data: Array(remaining.prefix(chunk)))
                    part.cla |= CommandAPDU.chainingBit
                    let answer = try send(part)
                    guard answer.statusWord.isSuccess else {
                        try check(answer)
                        throw .unexpected(answer.statusWord)
                    }
                    remaining = remaining.dropFirst(chunk)
                }
            }
        }
        let last = Array(remaining)
        var response = try exchangeSensitive(
            header: header, dataCount: last.count, le: extended ? CommandAPDU.extendedMaxLe : 256,
            describeData: describeData, extended: extended
        ) { apdu in
            apdu.append(contentsOf: last)
        }
        guard response.statusWord.isSuccess else {
            secureZero(&response.data)
            try check(response.statusWord)
            throw .unexpected(response.statusWord)
        }
        return response.data
    }

    // MARK: Plumbing

    /// Sends a command through `send(_:)` (chaining, GET RESPONSE, `6Cxx`) with tracing.
    private func send(_ command: CommandAPDU) throws(OpenPGPError) -> ResponseAPDU {
        trace?("> \(command)")
        let response: ResponseAPDU
        do {
            response = try connection.send(command)
        } catch let error as APDUError {
            throw .malformed(error)
        } catch {
            throw .transport(error)
        }
        trace?("< \(response)")
        try Self.refuseMisplacedPINStatus(response.statusWord, answering: command.ins)
        return response
    }

    /// A wrong-PIN status (`63 Cx`) to a command that sent no PIN is a malformed answer, never a PIN outcome: it
    /// would report tries and a wrong PIN where no PIN was tried.
    static func refuseMisplacedPINStatus(_ statusWord: StatusWord, answering instruction: UInt8) throws(OpenPGPError) {
        guard statusWord.isMisplacedPINStatus(answering: instruction) else { return }
        throw .malformed(
            APDUError(
                .unexpectedStatus,
                "\(OpenPGPInstruction.name(of: instruction)) answered \(statusWord), a wrong-PIN status, "
                    + "though no PIN was sent"))
    }

    /// Sends a short APDU whose data or answer is secret, keeping every copy under control.
    ///
    /// Builds the APDU in one buffer (`fill` appends the data), sends it with the connection's raw
    /// `transmit`, fetches `61 xx` remainders and repeats once for `6C xx`, then wipes the command buffer
    /// and every raw answer. The returned data is the caller's to wipe. `send(_:)` is not used because its
    /// intermediate copies cannot be wiped.
    private func exchangeSensitive(
        header: [UInt8], dataCount: Int, le: Int?, describeData: Bool = false, extended: Bool = false,
        fill: (inout [UInt8]) -> Void
    ) throws(OpenPGPError)
        -> (data: [UInt8], statusWord: StatusWord)
    {
        guard dataCount <= (extended ? CommandAPDU.extendedMaxData : CommandAPDU.shortMaxData) else {
            throw .invalidArgument("command data of \(dataCount) bytes does not fit the APDU")
        }
        var apdu: [UInt8] = []
        apdu.reserveCapacity(header.count + 7 + dataCount)
        apdu.append(contentsOf: header)
        if extended {
            // ISO/IEC 7816-4, §5.1: 00, a 2-byte Lc, the data, a 2-byte Le (0000 for 65536).
            apdu += [0x00, UInt8(dataCount >> 8), UInt8(dataCount & 0xFF)]
        } else if dataCount > 0 {
            apdu.append(UInt8(dataCount))
        }
        fill(&apdu)
        if let le {
            if extended {
                apdu += le >= 65536 ? [0x00, 0x00] : [UInt8(le >> 8), UInt8(le & 0xFF)]
            } else {
                apdu.append(le >= 256 ? 0 : UInt8(le))
            }
        }
        defer { secureZero(&apdu) }
        if describeData {
            trace?("> \(Hex.encode(apdu, separator: " "))")
        } else {
            trace?("> \(Hex.encode(header, separator: " "))\(dataCount > 0 ? " [sensitive]" : "")")
        }

        var raw = try transmitRaw(apdu)
        var statusWord = try Self.statusWord(of: &raw)
        if let corrected = statusWord.correctLength, le != nil, !extended {
            secureZero(&raw)
            apdu[apdu.count - 1] = corrected >= 256 ? 0 : UInt8(corrected)
            raw = try transmitRaw(apdu)
            statusWord = try Self.statusWord(of: &raw)
        }
        var data: [UInt8] = []
        data.reserveCapacity(1024)  // so that appending does not leave copies in freed memory
        data.append(contentsOf: raw.dropLast(2))
        secureZero(&raw)
        var rounds = 0
        while let remaining = statusWord.bytesRemaining {
            rounds += 1
            guard rounds <= 4, data.count <= 1024 - 256 else {
                secureZero(&data)
                throw .malformed(APDUError(.responseTooLong, "card keeps announcing more data"))
            }
            var more = try transmitRaw([
                header[0], OpenPGPInstruction.getResponse, 0x00, 0x00,
                remaining == 0 ? 0 : UInt8(remaining),
            ])
            statusWord = try Self.statusWord(of: &more)
            data.append(contentsOf: more.dropLast(2))
            secureZero(&more)
        }
        trace?("< \(data.isEmpty ? "" : "\(data.count) bytes [sensitive], ")\(statusWord)")
        do {
            try Self.refuseMisplacedPINStatus(statusWord, answering: header[1])
        } catch {
            secureZero(&data)
            throw error
        }
        return (data, statusWord)
    }

    private func transmitRaw(_ apdu: [UInt8]) throws(OpenPGPError) -> [UInt8] {
        do {
            return try connection.transmit(apdu)
        } catch {
            throw .transport(error)
        }
    }

    /// The status word at the end of a raw answer; wipes the answer and throws when there is none.
    private static func statusWord(of raw: inout [UInt8]) throws(OpenPGPError) -> StatusWord {
        guard raw.count >= 2 else {
            let count = raw.count
            secureZero(&raw)
            throw .malformed(APDUError(.invalidStructure, "answer of \(count) bytes has no status word"))
        }
        return StatusWord(sw1: raw[raw.count - 2], sw2: raw[raw.count - 1])
    }

    private func check(_ response: ResponseAPDU) throws(OpenPGPError) {
        try check(response.statusWord)
    }

    private func check(_ statusWord: StatusWord) throws(OpenPGPError) {
        if let error = OpenPGPError(statusWord: statusWord) { throw error }
    }
}
