/// How long a card and its reader may take to answer one command (`card-timeout`).
///
/// Every wait on a reader has a deadline: connecting, taking the card for a transaction, each command, ending
/// the transaction and disconnecting. Key generation on the card (GENERATE ASYMMETRIC KEY PAIR) may take a
/// minute on an RSA 4096 key, so it has a deadline of its own.
public struct CardTimeouts: Sendable, Equatable {
    /// The deadline of every command but key generation, and of every other call to the reader.
    public var command: Duration
    /// The deadline of GENERATE ASYMMETRIC KEY PAIR (instruction `47`, OpenPGP and PIV).
    public var keyGeneration: Duration

    /// The default `card-timeout`, in seconds.
    public static let defaultSeconds = 10
    /// The shortest key generation deadline, whatever `card-timeout` says.
    public static let minimumKeyGeneration: Duration = .seconds(120)

    /// Deadlines of `seconds` per command (at least 1), and for key generation the longer of 120 s and that.
    public init(seconds: Int) {
        command = .seconds(max(1, seconds))
        keyGeneration = max(Self.minimumKeyGeneration, command)
    }

    /// Explicit deadlines, for tests.
    public init(command: Duration, keyGeneration: Duration) {
        self.command = command
        self.keyGeneration = keyGeneration
    }

    /// `card-timeout`'s default: 10 s a command, 120 s a key generation.
    public static let standard = CardTimeouts(seconds: defaultSeconds)

    /// The instruction byte of GENERATE ASYMMETRIC KEY PAIR (ISO/IEC 7816-8; OpenPGP card 3.4.1 §7.2.14, SP
    /// 800-73-4 part 2 §3.3.2).
    public static let generateKeyPairInstruction: UInt8 = 0x47

    /// The deadline for the encoded command APDU `command`.
    public func deadline(for command: [UInt8]) -> Duration {
        command.count >= 2 && command[1] == Self.generateKeyPairInstruction ? keyGeneration : self.command
    }
}

/// A reader (or the card in it) that did not answer before the deadline: the call was cancelled and the connection
/// given up; nothing the command may have done is counted by tokenpin. Thrown as a `CardTransportError`
/// (`init(_:)`: `.timeout`, or `.serviceUnavailable` for pcscd itself), whose message this says.
public struct CardTimeoutError: Sendable, Equatable, CustomStringConvertible {
    /// The reader's name; nil for pcscd itself (listing the readers).
    public var reader: String?
    /// The deadline that passed; nil when the transport does not know it (a simulated card that stalls).
    public var timeout: Duration?
    /// The call that did not return: `SCardTransmit`, `SCardBeginTransaction`, ...
    public var call: String
    /// Whether an earlier call to this reader is still waiting for its answer, so this one was not even sent.
    public var stillWaiting: Bool

    /// Creates the error.
    public init(reader: String?, timeout: Duration?, call: String, stillWaiting: Bool = false) {
        self.reader = reader
        self.timeout = timeout
        self.call = call
        self.stillWaiting = stillWaiting
    }

    public var description: String {
        let within = timeout.map { "within \(Self.seconds($0))" } ?? "in time"
        let reader = self.reader.map { "the reader \"\($0)\"" } ?? "pcscd"
        if stillWaiting {
            return "\(reader) did not answer \(within) and has not answered since; remove and insert the card"
        }
        return "\(reader) did not answer \(within) (\(call))"
    }

    /// `10 s`, `1.5 s`.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let tenths = attoseconds / 100_000_000_000_000_000
        return tenths == 0 ? "\(seconds) s" : "\(seconds).\(tenths) s"
    }
}
