/// A channel to one card: a reader over PC/SC, the in-process simulator, anything that moves APDU bytes.
///
/// Implementations move bytes; `send(_:)` below adds GET RESPONSE, `6Cxx` retries and command chaining on
/// top, so every transport behaves the same. The connection also owns the card between commands: its
/// transactions (`exclusive(_:)`), and what happens to a PIN verified in one when it ends. A transport that
/// resets the card to drop a verified PIN counts the resets (`resets`), so an application session knows it
/// must be selected again. A connection is used from one thread at a time.
public protocol CardConnection: AnyObject {
    /// The card's answer to reset.
    var atr: [UInt8] { get }

    /// What the card announced it can do with long APDUs; `send(_:)` encodes accordingly.
    var lengthCapabilities: LengthCapabilities { get set }

    /// Sends one encoded command APDU and returns the raw response bytes (data and status word).
    ///
    /// No GET RESPONSE or chaining happens here.
    func transmit(_ command: [UInt8]) throws -> [UInt8]

    /// Runs `body` with the card reserved for this connection: no other client's command comes in between.
    ///
    /// A PIN verified inside does not outlive it: when the transaction ends the transport drops it (a reset,
    /// counted in `resets`, or VERIFY P1 = `FF` where that is enabled). Nested calls join the outer one.
    /// Transports without other clients (the in-process simulator) just run `body`.
    func exclusive<R: ~Copyable>(_ body: () throws -> R) throws -> R

    /// How many times the card was reset under this connection since it opened: a session that selected its
    /// application at an earlier count selects it again before its next command.
    var resets: Int { get }

    /// Ends the connection, dropping any PIN still verified. Calling it again does nothing.
    func close()
}

extension CardConnection {
    /// No other client can come between commands: `body` runs as it is.
    public func exclusive<R: ~Copyable>(_ body: () throws -> R) throws -> R { try body() }

    /// A transport that never resets the card itself.
    public var resets: Int { 0 }

    /// Nothing to release.
    public func close() {}
}

/// How a card takes long commands and long answers.
public struct LengthCapabilities: Sendable, Equatable {
    /// The card accepts extended-length APDUs.
    public var extendedLength: Bool
    /// The card accepts command chaining (CLA bit `10`).
    public var commandChaining: Bool
    /// The largest command data field the card takes in one extended APDU.
    public var maxCommandData: Int
    /// The largest response data the card returns in one extended APDU.
    public var maxResponseData: Int

    /// Creates capabilities.
    public init(extendedLength: Bool, commandChaining: Bool, maxCommandData: Int = 255, maxResponseData: Int = 256) {
        self.extendedLength = extendedLength
        self.commandChaining = commandChaining
        self.maxCommandData = maxCommandData
        self.maxResponseData = maxResponseData
    }

    /// Short APDUs only, no chaining: what to assume before the card said otherwise.
    public static let shortOnly = LengthCapabilities(extendedLength: false, commandChaining: false)
}

/// Instruction bytes the transport itself uses.
public enum TransportInstruction {
    /// `C0`: GET RESPONSE, fetches the rest of an answer announced with `61 xx`.
    public static let getResponse: UInt8 = 0xC0
}

extension CardConnection {
    /// Sends a command and returns the whole answer.
    ///
    /// Chains commands whose data does not fit one APDU, fetches `61 xx` remainders with GET RESPONSE and
    /// repeats a command once with the Le a `6C xx` names. ISO/IEC 7816-4, §5.1.1 (chaining), §5.1.3.
    /// - Throws: the transport's error, or `APDUError` for a response without a status word or too long.
    public func send(_ command: CommandAPDU) throws -> ResponseAPDU {
        let caps = lengthCapabilities
        let singleLimit = caps.extendedLength ? caps.maxCommandData : CommandAPDU.shortMaxData
        var command = command
        if caps.extendedLength == false, let le = command.le, le > CommandAPDU.shortMaxLe {
            command.le = CommandAPDU.shortMaxLe
        }
        if command.data.count > singleLimit {
            guard caps.commandChaining else {
                throw APDUError(
                    .invalidLength,
                    "command data of \(command.data.count) bytes exceeds what the card takes (\(singleLimit))")
            }
            var offset = 0
            while command.data.count - offset > singleLimit {
                var part = command
                part.cla |= CommandAPDU.chainingBit
                part.data = Array(command.data[offset..<(offset + singleLimit)])
                part.le = nil
                let response = try exchange(part, extended: caps.extendedLength)
                guard response.statusWord.isSuccess else { return response }
                offset += singleLimit
            }
            command.data = Array(command.data[offset...])
        }
        return try exchange(command, extended: caps.extendedLength && !command.fitsShortForm)
    }

    private func exchange(_ command: CommandAPDU, extended: Bool) throws -> ResponseAPDU {
        var response = try ResponseAPDU(parsing: transmit(command.encoded(extended: extended)))
        if let length = response.statusWord.correctLength {
            var retry = command
            retry.le = length
            response = try ResponseAPDU(parsing: transmit(retry.encoded(extended: extended)))
        }
        var data = response.data
        var rounds = 0
        while let remaining = response.statusWord.bytesRemaining {
            rounds += 1
            guard rounds <= 256, data.count <= CommandAPDU.extendedMaxLe * 4 else {
                throw APDUError(.responseTooLong, "card keeps announcing more data after \(data.count) bytes")
            }
            let getResponse = CommandAPDU(
                cla: command.cla & ~CommandAPDU.chainingBit,
                ins: TransportInstruction.getResponse, p1: 0, p2: 0,
                le: remaining == 0 ? 256 : remaining)
            response = try ResponseAPDU(parsing: transmit(getResponse.encoded()))
            data += response.data
        }
        return ResponseAPDU(data: data, statusWord: response.statusWord)
    }
}
