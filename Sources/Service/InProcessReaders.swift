package import TokenpinAPDU

/// Readers whose cards live in this process (the simulated card of `--reader sim`, the demo and tests).
///
/// Each reader is described by closures, so the service needs no knowledge of what the card is.
package struct InProcessReaders: CardReaders {
    /// One reader.
    package struct Reader: Sendable {
        /// The reader's name.
        package var name: String
        /// Whether a card is in it now.
        package var isPresent: @Sendable () -> Bool
        /// Connects to the card (powering it on).
        package var connect: @Sendable () throws -> any CardConnection
        /// Resets the card when a session ends, clearing any verified PIN.
        package var reset: @Sendable () -> Void

        /// Creates a reader.
        package init(
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
    package var readers: [Reader]

    /// Creates the readers.
    package init(_ readers: [Reader]) { self.readers = readers }

    package func list() throws(ServiceError) -> [ReaderPresence] {
        readers.map { ReaderPresence(name: $0.name, cardPresent: $0.isPresent()) }
    }

    package func open(_ reader: String) throws(ServiceError) -> any CardConnection {
        guard let entry = readers.first(where: { $0.name == reader }) else {
            throw .tokenUnavailable("no reader named \(reader)")
        }
        guard entry.isPresent() else { throw .tokenUnavailable("there is no card in \(reader)") }
        do {
            return InProcessConnection(try entry.connect(), reset: entry.reset)
        } catch {
            throw .tokenUnavailable("\(reader): \(error)")
        }
    }
}

/// A connection to an in-process card whose `close()` resets the card, as a PC/SC disconnect after a PIN does.
/// No other client shares the card, so transactions only run their body and the card is not reset in between.
final class InProcessConnection: CardConnection {
    let inner: any CardConnection
    let reset: @Sendable () -> Void
    private var closed = false

    init(_ inner: any CardConnection, reset: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.reset = reset
    }

    var atr: [UInt8] { inner.atr }

    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] { try inner.transmit(command) }

    func exclusive<R: ~Copyable, E: Error>(
        transportError: (CardTransportError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        try inner.exclusive(transportError: transportError, body)
    }

    var resets: Int { inner.resets }

    func close() {
        guard !closed else { return }
        closed = true
        inner.close()
        reset()
    }
}
