import TokenpinAPDU

/// Readers whose cards live in this process (the simulated card of `--reader sim`, the demo and tests).
///
/// Each reader is described by closures, so the service needs no knowledge of what the card is.
public struct InProcessReaders: CardReaders {
    /// One reader.
    public struct Reader: Sendable {
        /// The reader's name.
        public var name: String
        /// Whether a card is in it now.
        public var isPresent: @Sendable () -> Bool
        /// Connects to the card (powering it on).
        public var connect: @Sendable () throws -> any CardConnection
        /// Resets the card when a session ends, clearing any verified PIN.
        public var reset: @Sendable () -> Void

        /// Creates a reader.
        public init(
            name: String, isPresent: @escaping @Sendable () -> Bool,
            connect: @escaping @Sendable () throws -> any CardConnection, reset: @escaping @Sendable () -> Void
        ) {
            self.name = name
            self.isPresent = isPresent
            self.connect = connect
            self.reset = reset
        }
    }

    /// The readers.
    public var readers: [Reader]

    /// Creates the readers.
    public init(_ readers: [Reader]) { self.readers = readers }

    public func list() throws(ServiceError) -> [ReaderPresence] {
        readers.map { ReaderPresence(name: $0.name, cardPresent: $0.isPresent()) }
    }

    public func open(_ reader: String) throws(ServiceError) -> any CardHandle {
        guard let entry = readers.first(where: { $0.name == reader }) else {
            throw .tokenUnavailable("no reader named \(reader)")
        }
        guard entry.isPresent() else { throw .tokenUnavailable("there is no card in \(reader)") }
        do {
            return InProcessHandle(connection: try entry.connect(), reset: entry.reset)
        } catch {
            throw .tokenUnavailable("\(reader): \(error)")
        }
    }

    public func describe(_ transportError: any Error) -> ServiceError {
        .tokenUnavailable("\(transportError)")
    }
}

/// A session with an in-process card; closing resets the card as a PC/SC disconnect after a PIN does.
final class InProcessHandle: CardHandle {
    let connection: any CardConnection
    let reset: @Sendable () -> Void

    init(connection: any CardConnection, reset: @escaping @Sendable () -> Void) {
        self.connection = connection
        self.reset = reset
    }

    func exclusive<R: ~Copyable>(_ body: () throws -> R) throws -> R { try body() }

    /// In-process cards are reset only when the session closes.
    var needsReselect: Bool { false }

    func close() { reset() }
}
