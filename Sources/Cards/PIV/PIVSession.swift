package import TokenpinAPDU
package import TokenpinCore

/// Whether the PIV PIN is verified, or how many tries it has left.
package enum PIVPINStatus: Sendable, Equatable {
    /// The PIN is verified in this session (VERIFY with no data answered `90 00`).
    case verified
    /// Not verified; this many tries left (0: blocked).
    case retriesLeft(Int)
}

/// A session with the PIV application (SP 800-73-4) on a card, over any `CardConnection`.
///
/// The commands tokenpin needs to bind to a PIV key: SELECT, GET DATA (discovery, CHUID, certificates),
/// VERIFY with the tries query, CHANGE REFERENCE DATA, RESET RETRY COUNTER, GENERAL AUTHENTICATE for ECDH
/// (P-256, P-384) and RSA decryption, and the YubiKey's version, serial and metadata. Every answer is
/// treated as hostile; status words become `PIVError`s. PINs go from `SecretBytes` into an APDU buffer
/// (padded with `FF` to 8 bytes) that is wiped after sending, and the GENERAL AUTHENTICATE result goes
/// straight into guarded memory, every buffer that held it wiped.
///
/// Like `OpenPGPSession` it keeps no state: the card holds the selection and the verified PIN. Calls block
/// on the connection.
package struct PIVSession {
    /// The ISO 7816 layer every command goes through.
    var transport: ISO7816Transport

    /// The channel to the card.
    package var connection: any CardConnection { transport.connection }
    /// Receives one line per command and per answer; PIN commands show only their header and secret answers
    /// only their length.
    package var trace: ((String) -> Void)? {
        get { transport.trace }
        set { transport.trace = newValue }
    }

    /// The longest PIN or PUK a PIV card takes: 8 bytes, padded with `FF`.
    package static let maxPINLength = 8

    /// Creates a session; nothing is sent until `select()`.
    package init(connection: any CardConnection, trace: ((String) -> Void)? = nil) {
        transport = ISO7816Transport(connection: connection, names: PIVCommand.names, trace: trace)
    }

    // MARK: Selection and data objects

    /// Selects the PIV application and returns its application property template (`61 {4F …}`).
    ///
    /// SP 800-73-4, part 2, §3.1.1: SELECT `00 A4 04 00` with the AID truncated to `A0 00 00 03 08`.
    /// Throws `.applicationNotFound` when the card has none.
    @discardableResult
    package func select() throws(PIVError) -> [UInt8] {
        let command = CommandAPDU(ins: PIVCommand.select, p1: 0x04, p2: 0x00, data: PIVApplicationID.selectAID, le: 256)
        do {
            return try transport.send(command).data
        } catch .refused(.notFound, _) {
            throw .applicationNotFound
        } catch {
            throw PIVError(error)
        }
    }

    /// The value of a data object: the content of its `53` template (the discovery object `7E` whole).
    ///
    /// SP 800-73-4, part 2, §3.1.2: GET DATA `00 CB 3F FF` with `5C` naming the object. Throws
    /// `.objectNotFound` for an object the card does not hold, `.securityStatusNotSatisfied` for one behind the PIN.
    package func getObject(_ id: UInt32) throws(PIVError) -> [UInt8] {
        let command = CommandAPDU(
            ins: PIVCommand.getData, p1: 0x3F, p2: 0xFF,
            data: TLV(tag: 0x5C, value: Self.objectIDBytes(id)).encoded, le: 256)
        let response = try send(command)
        do throws(APDUError) {
            let object = try TLV.parseOne(response.data)
            let expected: UInt32 = id == PIVObjectID.discovery ? 0x7E : 0x53
            guard object.tag == expected else {
                throw APDUError(
                    .invalidTag,
                    "expected \(String(expected, radix: 16, uppercase: true)), got \(Hex.encode(object.tagBytes))")
            }
            return object.value
        } catch {
            throw .malformed(error)
        }
    }

    /// The discovery object's AID (`4F`) and PIN usage policy (`5F2F`).
    package func discovery() throws(PIVError) -> (aid: [UInt8], pinPolicy: [UInt8]) {
        let value = try getObject(PIVObjectID.discovery)
        do throws(APDUError) {
            let objects = try TLV.parseAll(value)
            guard let aid = objects.first(where: { $0.tag == 0x4F })?.value else {
                throw APDUError(.invalidStructure, "discovery object without an AID")
            }
            return (aid, objects.first { $0.tag == 0x5F2F }?.value ?? [])
        } catch {
            throw .malformed(error)
        }
    }

    /// The card holder unique identifier: GUID, FASC-N, expiry.
    package func chuid() throws(PIVError) -> PIVCHUID {
        let value = try getObject(PIVObjectID.chuid)
        do { return try PIVCHUID(parsing: value) } catch { throw .malformed(error) }
    }

    /// The DER certificate in a slot (`70` in the certificate object).
    ///
    /// Throws `.objectNotFound` when the slot has no certificate and `.malformed` for a compressed (gzip)
    /// certificate, which tokenpin does not inflate.
    package func certificate(in slot: PIVSlot) throws(PIVError) -> [UInt8] {
        let value = try getObject(slot.certificateObject)
        do throws(APDUError) {
            let objects = try TLV.parseAll(value)
            guard let certificate = objects.first(where: { $0.tag == 0x70 })?.value, !certificate.isEmpty else {
                throw APDUError(.invalidStructure, "certificate object without a certificate (70)")
            }
            if let info = objects.first(where: { $0.tag == 0x71 })?.value, info.first.map({ $0 & 0x01 != 0 }) ?? false {
                throw APDUError(.invalidStructure, "the certificate in slot \(slot) is compressed")
            }
            return certificate
        } catch {
            throw .malformed(error)
        }
    }

    /// The public key of a slot: from YubiKey metadata where the card has it, else from the slot's certificate.
    package func publicKey(in slot: PIVSlot) throws(PIVError) -> PIVPublicKey {
        do {
            return try metadata(for: slot).publicKey
        } catch .unsupported {
            // Not a YubiKey (or older than 5.3): the certificate names the key.
        } catch .referencedDataNotFound {
            throw .referencedDataNotFound
        }
        let der = try certificate(in: slot)
        do { return try PIVPublicKey(certificate: der) } catch { throw .malformed(error) }
    }

    // MARK: PIN and PUK

    /// Whether the PIN is verified, else its tries left, without spending one.
    ///
    /// SP 800-73-4, part 2, §3.2.1: VERIFY `00 20 00 80` with no data answers `90 00` (verified) or `63 Cx`;
    /// `69 83` is 0 tries.
    package func pinStatus() throws(PIVError) -> PIVPINStatus {
        let command = CommandAPDU(ins: PIVCommand.verify, p1: 0x00, p2: 0x80)
        let response: ResponseAPDU
        do { response = try transport.exchange(command) } catch { throw PIVError(error) }
        switch CardStatus(response.statusWord) {
        case .success: return .verified
        case .wrongPIN(let retries): return .retriesLeft(retries)
        case .blocked: return .retriesLeft(0)
        case let status: throw PIVError(.refused(status, command: "VERIFY"))
        }
    }

    /// Verifies the PIV PIN (reference `80`).
    ///
    /// VERIFY `00 20 00 80 08` with the PIN padded with `FF` to 8 bytes; the APDU is sensitive and wiped.
    /// - Throws: `.invalidArgument` for an empty PIN, one over 8 bytes or one holding `FF` (nothing is
    ///   sent, no try is spent), `.wrongPIN(retriesLeft:)`, `.blocked`.
    package func verify(pin: borrowing SecretBytes) throws(PIVError) {
        try Self.checkPIN(pin, "PIN")
        try sendPIN(PIVCommand.verify, p2: 0x80, Self.padded(pin))
    }

    /// Changes the PIN (`80`) or, with `puk: true`, the PUK (`81`), given the current one.
    ///
    /// CHANGE REFERENCE DATA `00 24 00 80|81 10` with both values padded to 8 bytes.
    package func changeReferenceData(
        puk: Bool = false, current: borrowing SecretBytes,
        new: borrowing SecretBytes
    ) throws(PIVError) {
        let name = puk ? "PUK" : "PIN"
        try Self.checkPIN(current, name)
        try Self.checkPIN(new, "new \(name)")
        try sendPIN(
            PIVCommand.changeReferenceData, p2: puk ? 0x81 : 0x80,
            .concatenating(Self.padded(current), Self.padded(new)))
    }

    /// Unblocks the PIN with the PUK and sets a new PIN.
    ///
    /// RESET RETRY COUNTER `00 2C 00 80 10` with the PUK and the new PIN padded to 8 bytes. Throws
    /// `.wrongPIN(retriesLeft:)` for a wrong PUK (its tries), `.blocked` when the PUK is blocked.
    package func unblockPIN(puk: borrowing SecretBytes, newPIN: borrowing SecretBytes) throws(PIVError) {
        try Self.checkPIN(puk, "PUK")
        try Self.checkPIN(newPIN, "new PIN")
        try sendPIN(PIVCommand.resetRetryCounter, p2: 0x80, .concatenating(Self.padded(puk), Self.padded(newPIN)))
    }

    private static func checkPIN(_ pin: borrowing SecretBytes, _ name: String) throws(PIVError) {
        guard (1...maxPINLength).contains(pin.count) else {
            throw .invalidArgument("a PIV \(name) has 1 to \(maxPINLength) bytes, not \(pin.count)")
        }
        guard !pin.withUnsafeBytes({ $0.contains(0xFF) }) else {
            throw .invalidArgument("a PIV \(name) cannot contain the byte FF (the padding)")
        }
    }

    /// A PIN or PUK padded with `FF` to 8 bytes, in guarded memory.
    private static func padded(_ pin: borrowing SecretBytes) -> SecretBytes {
        SecretBytes(count: maxPINLength) { out in
            out.initializeMemory(as: UInt8.self, repeating: 0xFF)
            pin.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[..<pin.count]).copyMemory(from: $0) }
        }
    }

    /// Sends a PIN command (`00 ins 00 p2` with `secret`); traces show its header only, every copy is wiped.
    private func sendPIN(_ ins: UInt8, p2: UInt8, _ secret: borrowing SecretBytes) throws(PIVError) {
        do {
            _ = try transport.sendSensitive(CommandAPDU(ins: ins, p1: 0x00, p2: p2), secret: secret)
        } catch {
            throw PIVError(error)
        }
    }

    // MARK: Keys

    /// The ECDH shared secret (the x coordinate) of the key in `slot` and `peerPoint`, in guarded memory.
    ///
    /// GENERAL AUTHENTICATE `00 87 11|14 slot` with `7C { 82 00, 85 point }`; the card answers `7C { 82 x }`.
    /// Needs the PIN verified for keys whose policy asks for it.
    /// - Throws: `.invalidArgument` for a point that is not uncompressed on the algorithm's curve,
    ///   `.securityStatusNotSatisfied`, `.referencedDataNotFound` (no key), `.incorrectData` (another
    ///   algorithm), `.malformed` for an answer that is not one coordinate.
    package func sharedSecret(slot: PIVSlot, algorithm: PIVAlgorithm, peerPoint: [UInt8]) throws(PIVError)
        -> SecretBytes
    {
        guard let coordinate = algorithm.coordinateLength else {
            throw .invalidArgument("ECDH needs a P-256 or P-384 key, not \(algorithm)")
        }
        guard peerPoint.count == 1 + 2 * coordinate, peerPoint[0] == 0x04 else {
            throw .invalidArgument(
                "a \(algorithm) point is 04 || x || y, \(1 + 2 * coordinate) bytes, not \(peerPoint.count)")
        }
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x85, value: peerPoint)]).encoded
        let secret = try generalAuthenticate(algorithm: algorithm, slot: slot, template: template)
        guard secret.count == coordinate else {
            throw .malformed(
                APDUError(.invalidLength, "a shared secret of \(secret.count) bytes, expected \(coordinate)"))
        }
        return secret
    }

    /// The card's private-key operation on `input` with the key in `slot`, as a signature: for ECC keys `input` is
    /// the digest and the answer a DER `SEQUENCE { r, s }`; for RSA keys `input` is a block as long as the modulus
    /// and the answer its raw RSA. SP 800-73-4 part 2, §3.2.4 GENERAL AUTHENTICATE: `7C { 82 00, 81 input }`.
    ///
    /// The card-authentication key (`9E`) answers without a PIN, so a host can check a card before it sends one.
    /// - Throws: `.invalidArgument` for an input of the wrong size, `.securityStatusNotSatisfied` when the key's
    ///   policy wants the PIN, `.referencedDataNotFound` (no key), `.incorrectData` (another algorithm).
    package func sign(slot: PIVSlot, algorithm: PIVAlgorithm, input: [UInt8]) throws(PIVError) -> [UInt8] {
        if let length = algorithm.modulusLength, input.count != length {
            throw .invalidArgument("an RSA block for this key has \(length) bytes, not \(input.count)")
        }
        if let coordinate = algorithm.coordinateLength, input.count != coordinate {
            throw .invalidArgument("a digest for this key has \(coordinate) bytes, not \(input.count)")
        }
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x81, value: input)]).encoded
        let answer = try generalAuthenticate(algorithm: algorithm, slot: slot, template: template)
        return answer.withUnsafeBytes { [UInt8]($0) }
    }

    /// Decrypts an RSA PKCS#1 v1.5 cryptogram with the key in `slot`: the card's raw RSA, then the padding
    /// checked and removed here; the message in guarded memory.
    ///
    /// GENERAL AUTHENTICATE `00 87 07 slot` with `7C { 82 00, 81 cryptogram }` (chained: it exceeds a short
    /// APDU). Throws `.decryptionFailed` when the block is not type-2 padded (another key, an altered
    /// cryptogram), `.invalidArgument` for a cryptogram not as long as the modulus.
    package func decrypt(slot: PIVSlot, algorithm: PIVAlgorithm = .rsa2048, cryptogram: [UInt8]) throws(PIVError)
        -> SecretBytes
    {
        guard let length = algorithm.modulusLength else {
            throw .invalidArgument("RSA decryption needs an RSA key, not \(algorithm)")
        }
        guard cryptogram.count == length else {
            throw .invalidArgument("an RSA cryptogram for this key has \(length) bytes, not \(cryptogram.count)")
        }
        let template = TLV(tag: 0x7C, children: [TLV(tag: 0x82, value: []), TLV(tag: 0x81, value: cryptogram)]).encoded
        let block = try generalAuthenticate(algorithm: algorithm, slot: slot, template: template)
        guard block.count == length else {
            throw .malformed(APDUError(.invalidLength, "a decrypted block of \(block.count) bytes, expected \(length)"))
        }
        // 00 02 PS(≥ 8 nonzero) 00 M
        let start: Int? = block.withUnsafeBytes { bytes in
            guard bytes[0] == 0x00, bytes[1] == 0x02 else { return nil }
            guard let zero = bytes[2...].firstIndex(of: 0x00), zero >= 10 else { return nil }
            return zero + 1
        }
        guard let start else { throw .decryptionFailed }
        return SecretBytes(count: length - start) { out in
            block.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[start...])) }
        }
    }

    /// GENERAL AUTHENTICATE with a template, chained in parts of 255 bytes; returns the value of `82` in the
    /// answer `7C { 82 … }` in guarded memory, every buffer that held it wiped.
    private func generalAuthenticate(algorithm: PIVAlgorithm, slot: PIVSlot, template: [UInt8]) throws(PIVError)
        -> SecretBytes
    {
        let command = CommandAPDU(
            ins: PIVCommand.generalAuthenticate, p1: algorithm.rawValue, p2: slot.rawValue, data: template, le: 256)
        let answer: SecretBytes
        do {
            // The leading parts carry public data (a point, a cryptogram); the last part's answer is the secret.
            answer = try transport.sendSensitive(command, secret: SecretBytes(count: 0), answer: .secret(max: 2048))
        } catch {
            throw PIVError(error)
        }
        guard let range = answer.withUnsafeBytes({ Self.responseValue(in: $0) }) else {
            throw .malformed(APDUError(.invalidStructure, "GENERAL AUTHENTICATE answered no 7C { 82 } template"))
        }
        return answer.extracting(range)
    }

    /// Where the value of `82` lies in `7C L { 82 L V }`, read without copying it; nil for anything else.
    static func responseValue(in data: UnsafeRawBufferPointer) -> Range<Int>? {
        func length(at index: inout Int) -> Int? {
            guard index < data.count else { return nil }
            let first = data[index]
            index += 1
            if first < 0x80 { return Int(first) }
            let count = Int(first & 0x7F)
            guard (1...2).contains(count), index + count <= data.count else { return nil }
            var value = 0
            for _ in 0..<count {
                value = value << 8 | Int(data[index])
                index += 1
            }
            return value
        }
        var index = 0
        guard data.first == 0x7C else { return nil }
        index = 1
        guard let outer = length(at: &index), index + outer == data.count else { return nil }
        guard index < data.count, data[index] == 0x82 else { return nil }
        index += 1
        guard let inner = length(at: &index), index + inner == data.count, inner > 0 else { return nil }
        return index..<(index + inner)
    }

    // MARK: YubiKey

    /// The firmware version (major, minor, patch): YubiKey GET VERSION `00 FD 00 00`.
    package func version() throws(PIVError) -> [UInt8] {
        let response = try send(CommandAPDU(ins: PIVCommand.getVersion, p1: 0, p2: 0, le: 256))
        guard response.data.count == 3 else {
            throw .malformed(APDUError(.invalidLength, "a version of \(response.data.count) bytes"))
        }
        return response.data
    }

    /// The YubiKey serial number: GET SERIAL `00 F8 00 00` (firmware 5+).
    package func serial() throws(PIVError) -> UInt32 {
        let response = try send(CommandAPDU(ins: PIVCommand.getSerial, p1: 0, p2: 0, le: 256))
        guard response.data.count == 4 else {
            throw .malformed(APDUError(.invalidLength, "a serial of \(response.data.count) bytes"))
        }
        return response.data.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// A slot's key metadata: YubiKey GET METADATA `00 F7 00 slot` (firmware 5.3+). Throws `.unsupported` on
    /// other cards and `.referencedDataNotFound` for an empty slot.
    package func metadata(for slot: PIVSlot) throws(PIVError) -> PIVSlotMetadata {
        let raw = try rawMetadata(for: slot)
        do { return try PIVSlotMetadata(parsing: raw) } catch { throw .malformed(error) }
    }

    /// A slot's metadata as the card answers it, unparsed (for keys `PIVSlotMetadata` does not read).
    package func rawMetadata(for slot: PIVSlot) throws(PIVError) -> [UInt8] {
        try send(CommandAPDU(ins: PIVCommand.getMetadata, p1: 0x00, p2: slot.rawValue, le: 256)).data
    }

    /// The PIN's (`80`) or PUK's (`81`) tries, total and left, from YubiKey metadata (firmware 5.3+); the only
    /// way to learn the PUK's without spending one. Throws `.unsupported` on other cards.
    package func retries(puk: Bool) throws(PIVError) -> (total: Int, left: Int) {
        let response = try send(CommandAPDU(ins: PIVCommand.getMetadata, p1: 0x00, p2: puk ? 0x81 : 0x80, le: 256))
        do throws(APDUError) {
            guard let tries = try TLV.parseAll(response.data).first(where: { $0.tag == 0x06 })?.value, tries.count == 2
            else { throw APDUError(.invalidStructure, "PIN metadata without its tries (06)") }
            return (Int(tries[0]), Int(tries[1]))
        } catch {
            throw .malformed(error)
        }
    }

    // MARK: Transport

    /// An object ID's bytes in a `5C` tag list.
    static func objectIDBytes(_ id: UInt32) -> [UInt8] {
        id > 0xFFFF
            ? [UInt8(id >> 16), UInt8((id >> 8) & 0xFF), UInt8(id & 0xFF)]
            : id > 0xFF ? [UInt8(id >> 8), UInt8(id & 0xFF)] : [UInt8(id)]
    }

    /// Sends a command through the transport; any status but `90 00` throws.
    func send(_ command: CommandAPDU) throws(PIVError) -> ResponseAPDU {
        do { return try transport.send(command) } catch { throw PIVError(error) }
    }
}
