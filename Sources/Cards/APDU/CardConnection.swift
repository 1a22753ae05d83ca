/// A channel to one card: a reader over PC/SC, the in-process simulator, anything that moves APDU bytes.
///
/// Implementations move bytes; `ISO7816Transport` adds GET RESPONSE, `6Cxx` retries and command chaining on
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
    /// - Throws: why the bytes did not go or no answer came back (the card was removed, pcscd went away).
    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8]

    /// Runs `body` with the card reserved for this connection: no other client's command comes in between.
    ///
    /// A PIN verified inside does not outlive it: when the transaction ends the transport drops it (a reset,
    /// counted in `resets`, or VERIFY P1 = `FF` where that is enabled). Nested calls join the outer one.
    /// Transports without other clients (the in-process simulator) just run `body`.
    /// - Throws: what `body` throws, as it is; `transportError` of the transport's error when the transaction
    ///   itself could not begin (the card went away).
    func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R

    /// How many times the card was reset under this connection since it opened: a session that selected its
    /// application at an earlier count selects it again before its next command.
    var resets: Int { get }

    /// Ends the connection, dropping any PIN still verified. Calling it again does nothing.
    func close()
}

extension CardConnection {
    /// No other client can come between commands: `body` runs as it is.
    public func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R { try body() }

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
    /// Sends a command and returns the whole answer, with `ISO7816Transport`'s chaining, GET RESPONSE and `6C xx`
    /// handling, whatever its status: for tools and tests that speak APDUs bare.
    /// - Throws: `CardTransportError`, or `APDUError` for a response without a status word or too long.
    public func send(_ command: CommandAPDU) throws -> ResponseAPDU {
        do {
            return try ISO7816Transport(connection: self).chained(command)
        } catch .malformed(let error) {
            throw error
        } catch .transport(let error) {
            throw error
        } catch {
            throw error
        }
    }
}
