import Synchronization

/// Counts the command APDUs that reach a card, keeping only each one's header.
///
/// One counter can be shared by several connections (a benchmark counts every card it opens). It keeps the four
/// header bytes (CLA INS P1 P2) and never the data field, so a VERIFY's PIN is not copied here.
public final class APDUCounter: Sendable {
    private let sentHeaders = Mutex<[[UInt8]]>([])

    /// Creates a counter at zero.
    public init() {}

    /// Notes one command about to be transmitted.
    public func record(_ command: [UInt8]) {
        let header = Array(command.prefix(4))
        sentHeaders.withLock { $0.append(header) }
    }

    /// How many commands were transmitted.
    public var count: Int { sentHeaders.withLock { $0.count } }

    /// The header (CLA INS P1 P2, fewer bytes for a shorter command) of each command transmitted, in order.
    public var headers: [[UInt8]] { sentHeaders.withLock { $0 } }

    /// The instruction byte (INS) of each command transmitted, in order (0 for a command too short to have one).
    public var instructions: [UInt8] { headers.map { $0.count > 1 ? $0[1] : 0 } }
}

/// A `CardConnection` that passes everything to another one and counts the commands it transmits.
public final class CountingConnection: CardConnection {
    /// The connection everything goes to.
    public let inner: any CardConnection
    /// Where the commands are counted.
    public let counter: APDUCounter

    /// Wraps `inner`, counting in `counter` (a fresh one by default).
    public init(_ inner: any CardConnection, counter: APDUCounter = APDUCounter()) {
        self.inner = inner
        self.counter = counter
    }

    public var atr: [UInt8] { inner.atr }

    public var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    public func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        counter.record(command)
        return try inner.transmit(command)
    }

    public func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        try inner.exclusive(transportError: transportError, body)
    }

    public var resets: Int { inner.resets }

    public func close() { inner.close() }
}
