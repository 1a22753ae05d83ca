package import TokenpinAPDU

/// The OpenPGP application of one card, opened: selected, its application related data read and kept.
///
/// `open(_:)` selects the application and reads `6E` in one transaction of the connection. Every later
/// sequence runs in `transaction(_:)`, one transaction each, which selects the application again first when
/// the connection reset the card since (a PIN verified in an earlier transaction is dropped that way), so
/// callers never track what the card has forgotten.
package final class OpenPGPCard {
    /// The commands, over the card's connection: reached only through `transaction`, which selects first.
    let session: OpenPGPSession
    /// The channel to the card (to ask it about the reader, such as a keypad); commands go through `transaction`.
    package var connection: any CardConnection { session.connection }
    /// The application related data as read at open (serial, algorithm attributes, PW status, fingerprints).
    package let data: ApplicationRelatedData
    /// When the application was last selected, and whether the card was closed.
    private let application: SelectedApplication

    private init(session: OpenPGPSession, data: ApplicationRelatedData) {
        self.session = session
        self.data = data
        application = SelectedApplication(selectedOn: session.connection)
    }

    /// Selects the OpenPGP application on the card behind `connection` and reads its data (2 APDUs, one
    /// transaction).
    ///
    /// Throws `.applicationNotFound` for a card without it, `.malformed` for data that does not parse,
    /// `.transport` when the connection fails.
    package static func open(_ connection: any CardConnection) throws(OpenPGPError) -> OpenPGPCard {
        let session = OpenPGPSession(connection: connection)
        let data = try connection.exclusive(transportError: OpenPGPError.transport) {
            () throws(OpenPGPError) -> ApplicationRelatedData in
            try session.select()
            return try session.applicationRelatedData()
        }
        return OpenPGPCard(session: session, data: data)
    }

    /// Runs `body` in one transaction of the connection, selecting the application first when the card was
    /// reset since it was last selected.
    ///
    /// - Throws: what `body` throws; `.transport` when the transaction itself fails or the card was closed.
    package func transaction<R: ~Copyable>(_ body: (OpenPGPSession) throws(OpenPGPError) -> R) throws(OpenPGPError)
        -> R
    {
        let session = self.session
        return try application.transaction(
            select: session.select, closed: .transport(.sessionClosed("OpenPGP")),
            transportError: OpenPGPError.transport
        ) { () throws(OpenPGPError) -> R in try body(session) }
    }

    /// Ends the session: the connection closes, dropping any PIN still verified. Calling it again does nothing;
    /// a transaction after it throws `.transport`.
    package func close() { application.close() }

    /// The key derivation the card wants for its PINs (KDF-DO), read inside a transaction when announced.
    package func keyDerivation(_ session: OpenPGPSession) throws(OpenPGPError) -> KeyDerivation? {
        try session.keyDerivation(data)
    }
}
