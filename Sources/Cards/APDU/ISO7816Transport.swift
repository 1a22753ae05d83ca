public import TokenpinCore

/// What ISO/IEC 7816-4 says about exchanging APDUs, once, under every card application: short and extended
/// encoding, command chaining, `6C xx` (repeat once with the Le the card names), `61 xx` (GET RESPONSE, bounded),
/// tracing that never prints a secret, and the status word read in the context of the command (`CardStatus`).
///
/// Like yubikit's `SmartCardProtocol`: the applications (OpenPGP, PIV) keep only their own commands and the
/// meaning they give a status. The connection below moves bytes; this type owns every byte sent and received.
/// Commands whose data or answer is secret go through `sendSensitive`, which keeps every copy in buffers it wipes.
public struct ISO7816Transport {
    /// The channel to the card.
    public let connection: any CardConnection
    /// How messages name the instructions.
    public let names: InstructionNames
    /// Receives one line per command and per answer; a sensitive command shows only its header
    /// (`00 20 00 82 [sensitive]`) and a secret answer only its length.
    public var trace: ((String) -> Void)?

    /// The most GET RESPONSE rounds and bytes a public answer may take: more is a card that never stops.
    static let maxRounds = 256
    static let maxAnswer = CommandAPDU.extendedMaxLe * 4

    /// Creates a transport; nothing is sent until a command is.
    public init(connection: any CardConnection, names: InstructionNames = .iso, trace: ((String) -> Void)? = nil) {
        self.connection = connection
        self.names = names
        self.trace = trace
    }

    // MARK: Public data

    /// Sends a command and returns its answer; any status but `90 00` throws `.refused` with its `CardStatus`.
    public func send(_ command: CommandAPDU) throws(CardCommandError) -> ResponseAPDU {
        let response = try exchange(command)
        let status = try CardStatus(response.statusWord, answering: command.ins, names: names)
        guard status == .success else { throw .refused(status, command: names.name(of: command.ins)) }
        return response
    }

    /// Sends a command and returns its answer with whatever status it has: for the query forms (an empty VERIFY
    /// answering `63 Cx` or `90 00`). A wrong-PIN status answering a command that checks no PIN still throws.
    ///
    /// Chains data that does not fit one APDU (the card's extended limit, else 255 bytes), fetches `61 xx`
    /// remainders with GET RESPONSE and repeats a command once with the Le a `6C xx` names. ISO/IEC 7816-4,
    /// §5.1.1, §5.1.3.
    public func exchange(_ command: CommandAPDU) throws(CardCommandError) -> ResponseAPDU {
        trace?("> \(command)")
        let response = try chained(command)
        trace?("< \(response)")
        _ = try CardStatus(response.statusWord, answering: command.ins, names: names)
        return response
    }

    func chained(_ command: CommandAPDU) throws(CardCommandError) -> ResponseAPDU {
        let caps = connection.lengthCapabilities
        let singleLimit = caps.extendedLength ? caps.maxCommandData : CommandAPDU.shortMaxData
        var command = command
        if caps.extendedLength == false, let le = command.le, le > CommandAPDU.shortMaxLe {
            command.le = CommandAPDU.shortMaxLe
        }
        if command.data.count > singleLimit {
            guard caps.commandChaining else {
                throw .malformed(
                    APDUError(
                        .invalidLength,
                        "command data of \(command.data.count) bytes exceeds what the card takes (\(singleLimit))"))
            }
            var offset = 0
            while command.data.count - offset > singleLimit {
                var part = command
                part.cla |= CommandAPDU.chainingBit
                part.data = Array(command.data[offset..<(offset + singleLimit)])
                part.le = nil
                let response = try single(part, extended: caps.extendedLength)
                guard response.statusWord.isSuccess else { return response }
                offset += singleLimit
            }
            command.data = Array(command.data[offset...])
        }
        return try single(command, extended: caps.extendedLength && !command.fitsShortForm)
    }

    private func single(_ command: CommandAPDU, extended: Bool) throws(CardCommandError) -> ResponseAPDU {
        var response = try parse(transmit(command.encoded(extended: extended)))
        if let length = response.statusWord.correctLength {
            var retry = command
            retry.le = length
            response = try parse(transmit(retry.encoded(extended: extended)))
        }
        var data = response.data
        var rounds = 0
        while let remaining = response.statusWord.bytesRemaining {
            rounds += 1
            guard rounds <= Self.maxRounds, data.count <= Self.maxAnswer else {
                throw .malformed(
                    APDUError(.responseTooLong, "card keeps announcing more data after \(data.count) bytes"))
            }
            response = try parse(transmit(Self.getResponse(cla: command.cla, remaining: remaining)))
            data += response.data
        }
        return ResponseAPDU(data: data, statusWord: response.statusWord)
    }

    // MARK: Secret data

    /// Sends a command whose data ends in `secret` (a PIN) or whose answer is secret (a shared secret), keeping
    /// every copy in buffers it wipes.
    ///
    /// The APDU is `command`'s header and public data, then `secret`, in one buffer wiped after sending; traces
    /// show `00 20 00 82 [sensitive]` for a secret command and the whole command when only the answer is secret.
    /// Public data too long for one APDU goes as one extended APDU where `longCommand` allows it and the card
    /// takes it, else chained in parts of `longCommand`'s size, the secret in the last part. `6C xx` repeats the
    /// last part once; `61 xx` remainders are fetched into the same guarded buffer.
    /// - Returns: the answer's data in guarded memory (empty for `.none`), the status `90 00`.
    /// - Throws: `.refused` for any other status, `.malformed` for an answer without status or longer than
    ///   `answer` allows, `.invalidArgument` for data the card cannot take.
    public func sendSensitive(
        _ command: CommandAPDU, secret: borrowing SecretBytes, answer: SensitiveAnswer = .none,
        longCommand: LongCommand = .chained(partSize: CommandAPDU.shortMaxData)
    ) throws(CardCommandError) -> SecretBytes {
        let (extended, leading) = try framing(of: command, secretCount: secret.count, longCommand)
        var last = command
        last.data = Array(command.data[leading...])
        var offset = 0
        while offset < leading {
            let size = min(longCommand.partSize, leading - offset)
            var part = command
            part.cla |= CommandAPDU.chainingBit
            part.data = Array(command.data[offset..<(offset + size)])
            part.le = nil
            _ = try send(part)
            offset += size
        }
        var apdu = Self.encode(last, secret: secret, extended: extended)
        defer { secureZero(&apdu) }
        trace?(
            "> \(Hex.encode(secret.count > 0 ? Array(apdu.prefix(4)) : apdu, separator: " "))\(secret.count > 0 ? " [sensitive]" : "")"
        )
        return try secretAnswer(to: &apdu, command: last, extended: extended, answer: answer)
    }

    /// Whether the command goes extended, and how much of its public data goes in chained parts before the last.
    private func framing(of command: CommandAPDU, secretCount: Int, _ longCommand: LongCommand)
        throws(CardCommandError) -> (extended: Bool, leading: Int)
    {
        let total = command.data.count + secretCount
        guard total > CommandAPDU.shortMaxData else { return (false, 0) }
        let caps = connection.lengthCapabilities
        if case .extendedOrChained = longCommand, caps.extendedLength, total <= caps.maxCommandData,
            total <= CommandAPDU.extendedMaxData
        {
            return (true, 0)
        }
        if case .extendedOrChained = longCommand, !caps.commandChaining {
            throw .invalidArgument("the card takes neither extended APDUs nor chaining for \(total) bytes")
        }
        let partSize = longCommand.partSize
        guard secretCount <= partSize else {
            throw .invalidArgument("command data of \(total) bytes does not fit the APDU")
        }
        // Whole parts of public data first; the last part holds the rest and the secret.
        var leading = 0
        while total - leading > partSize { leading += partSize }
        guard leading <= command.data.count else {
            throw .invalidArgument("command data of \(total) bytes does not fit the APDU")
        }
        return (false, leading)
    }

    /// The answer to `apdu`, its data copied into guarded memory and every raw buffer wiped.
    private func secretAnswer(
        to apdu: inout [UInt8], command: CommandAPDU, extended: Bool, answer: SensitiveAnswer
    ) throws(CardCommandError) -> SecretBytes {
        let capacity = answer.maxLength
        var data: [UInt8] = []
        data.reserveCapacity(capacity)  // so that appending does not leave copies in freed memory
        defer { secureZero(&data) }
        var raw = try transmit(apdu)
        var statusWord = try Self.statusWord(of: &raw)
        if let corrected = statusWord.correctLength, command.le != nil, !extended {
            secureZero(&raw)
            apdu[apdu.count - 1] = corrected >= 256 ? 0 : UInt8(corrected)
            raw = try transmit(apdu)
            statusWord = try Self.statusWord(of: &raw)
        }
        var rounds = 0
        while true {
            guard raw.count - 2 <= capacity - data.count else {
                secureZero(&raw)
                throw .malformed(APDUError(.responseTooLong, "card keeps announcing more data"))
            }
            data.append(contentsOf: raw.dropLast(2))
            secureZero(&raw)
            guard let remaining = statusWord.bytesRemaining else { break }
            rounds += 1
            guard rounds <= max(1, capacity / 256), data.count <= capacity - 256 else {
                throw .malformed(APDUError(.responseTooLong, "card keeps announcing more data"))
            }
            raw = try transmit(Self.getResponse(cla: command.cla, remaining: remaining))
            statusWord = try Self.statusWord(of: &raw)
        }
        trace?("< \(data.isEmpty ? "" : "\(data.count) bytes [sensitive], ")\(statusWord)")
        let status = try CardStatus(statusWord, answering: command.ins, names: names)
        guard status == .success else { throw .refused(status, command: names.name(of: command.ins)) }
        guard case .secret = answer else { return SecretBytes(count: 0) }
        return SecretBytes(copying: data.withUnsafeBytes { $0 })
    }

    // MARK: Bytes

    /// `command` encoded with `secret` after its data, in one buffer reserved to its final size.
    private static func encode(_ command: CommandAPDU, secret: borrowing SecretBytes, extended: Bool) -> [UInt8] {
        let dataCount = command.data.count + secret.count
        var apdu: [UInt8] = []
        apdu.reserveCapacity(4 + 3 + dataCount + 3)
        apdu += [command.cla, command.ins, command.p1, command.p2]
        if extended {
            // ISO/IEC 7816-4, §5.1: 00, a 2-byte Lc, the data, a 2-byte Le (0000 for 65536).
            apdu += [0x00, UInt8(dataCount >> 8), UInt8(dataCount & 0xFF)]
        } else if dataCount > 0 {
            apdu.append(UInt8(dataCount))
        }
        apdu.append(contentsOf: command.data)
        secret.withUnsafeBytes { apdu.append(contentsOf: $0) }
        if let le = command.le {
            if extended {
                apdu += le >= 65536 ? [0x00, 0x00] : [UInt8(le >> 8), UInt8(le & 0xFF)]
            } else {
                apdu.append(le >= 256 ? 0 : UInt8(le))
            }
        }
        return apdu
    }

    /// GET RESPONSE `CLA C0 00 00 Le` for a `61 xx` remainder (`xx` = 0: 256 bytes).
    private static func getResponse(cla: UInt8, remaining: Int) -> [UInt8] {
        [
            cla & ~CommandAPDU.chainingBit, TransportInstruction.getResponse, 0x00, 0x00,
            UInt8(truncatingIfNeeded: remaining),
        ]
    }

    private func transmit(_ apdu: [UInt8]) throws(CardCommandError) -> [UInt8] {
        do {
            return try connection.transmit(apdu)
        } catch {
            throw .transport(error)
        }
    }

    private func parse(_ raw: [UInt8]) throws(CardCommandError) -> ResponseAPDU {
        do { return try ResponseAPDU(parsing: raw) } catch { throw .malformed(error) }
    }

    /// The status word at the end of a raw answer; wipes the answer and throws when there is none.
    private static func statusWord(of raw: inout [UInt8]) throws(CardCommandError) -> StatusWord {
        guard raw.count >= 2 else {
            let count = raw.count
            secureZero(&raw)
            throw .malformed(APDUError(.invalidStructure, "answer of \(count) bytes has no status word"))
        }
        return StatusWord(sw1: raw[raw.count - 2], sw2: raw[raw.count - 1])
    }
}

/// What a sensitive command's answer holds.
public enum SensitiveAnswer: Sendable, Equatable {
    /// Nothing the caller needs (a PIN command): any data is wiped.
    case none
    /// A secret of at most `max` bytes, GET RESPONSE rounds included, returned in guarded memory.
    case secret(max: Int)

    var maxLength: Int {
        switch self {
        case .none: 256
        case .secret(let max): max
        }
    }
}

/// How a sensitive command too long for a short APDU is sent.
public enum LongCommand: Sendable, Equatable {
    /// Always chained, in parts of `partSize` bytes (PIV: 255).
    case chained(partSize: Int)
    /// One extended APDU where the card takes it, else chained in parts of `partSize` bytes (OpenPGP: 254).
    case extendedOrChained(partSize: Int)

    var partSize: Int {
        switch self {
        case .chained(let size), .extendedOrChained(let size): size
        }
    }
}

extension SecretBytes {
    /// `first` then `second` in one guarded buffer: the two PINs of a CHANGE REFERENCE DATA or RESET RETRY COUNTER.
    public static func concatenating(_ first: borrowing SecretBytes, _ second: borrowing SecretBytes) -> SecretBytes {
        SecretBytes(count: first.count + second.count) { out in
            first.withUnsafeBytes { out.copyMemory(from: $0) }
            second.withUnsafeBytes { bytes in
                UnsafeMutableRawBufferPointer(rebasing: out[first.count...]).copyMemory(from: bytes)
            }
        }
    }

    /// Bytes `range` of this secret in a guarded buffer of their own.
    public func extracting(_ range: Range<Int>) -> SecretBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range outside the secret")
        return SecretBytes(count: range.count) { out in
            withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }
}
