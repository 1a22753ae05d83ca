import TokenpinAPDU
import TokenpinCore

extension OpenPGPApplication {
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
    mutating func generateKeyPair(_ command: CommandAPDU) -> Reply {
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
    mutating func importKey(_ command: CommandAPDU) -> Reply {
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
    mutating func performSecurityOperation(_ command: CommandAPDU) -> Reply {
        switch (command.p1, command.p2) {
        case (0x9E, 0x9A): return computeSignature(command)
        case (0x80, 0x86): return decipher(command)
        default: return Reply(.incorrectP1P2)
        }
    }

    mutating func computeSignature(_ command: CommandAPDU) -> Reply {
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
    func decipher(_ command: CommandAPDU) -> Reply {
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
    func internalAuthenticate(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard status.pw1Other else { return Reply(.securityStatusNotSatisfied) }
        switch sign(command.data, with: .authentication) {
        case .success(let signature): return Reply(.success, data: signature)
        case .failure(let failure): return Reply(failure.statusWord)
        }
    }

    /// Signs with the key in `slot`: Ed25519 over the data, RSA PKCS#1 v1.5 over the DigestInfo, ECDSA over
    /// the digest (`r || s`). No key: `6A88`; a decryption-only algorithm: `6A81`; no data: `6700`.
    func sign(_ data: [UInt8], with slot: KeySlot) -> Result<[UInt8], KeyFailure> {
        let key = state.keys[slot.rawValue]
        if key.origin == .none { return .failure(KeyFailure(.referencedDataNotFound)) }
        guard !data.isEmpty else { return .failure(KeyFailure(.wrongLength)) }
        guard let kind = key.attributes.kind else { return .failure(KeyFailure(.functionNotSupported)) }
        return Result { () throws(KeyFailure) in try kind.sign(data, secret: key.secret) }
    }

    /// GET CHALLENGE: Le random bytes from libsodium. OpenPGP card 3.4.1, §7.2.15.
    func getChallenge(_ command: CommandAPDU) -> Reply {
        guard command.p1 == 0x00, command.p2 == 0x00 else { return Reply(.incorrectP1P2) }
        guard command.data.isEmpty, let length = command.le, length <= CardProfile.maxChallenge else {
            return Reply(.wrongLength)
        }
        return Reply(.success, data: SecureRandom.bytes(length))
    }
}
