public import TokenpinAPDU

/// The OpenPGP application of one card, opened: selected, its application related data read and kept.
///
/// `open(_:)` selects the application and reads `6E` in one transaction of the connection. Every later
/// sequence runs in `transaction(_:)`, one transaction each, which selects the application again first when
/// the connection reset the card since (a PIN verified in an earlier transaction is dropped that way), so
/// callers never track what the card has forgotten.
public final class OpenPGPCard {
    /// The commands, over the card's connection.
    public let session: OpenPGPSession
    /// The application related data as read at open (serial, algorithm attributes, PW status, fingerprints).
    public let data: ApplicationRelatedData
    /// The connection's reset count when the application was last selected.
    private var selectedAt: Int

    private init(session: OpenPGPSession, data: ApplicationRelatedData, selectedAt: Int) {
        self.session = session
        self.data = data
        self.selectedAt = selectedAt
    }

    /// Selects the OpenPGP application on the card behind `connection` and reads its data (2 APDUs, one
    /// transaction).
    ///
    /// Throws `.applicationNotFound` for a card without it, `.malformed` for data that does not parse,
    /// `.transport` when the connection fails.
    public static func open(_ connection: any CardConnection) throws(OpenPGPError) -> OpenPGPCard {
        let session = OpenPGPSession(connection: connection)
        let data = try exclusive(connection) { () throws(OpenPGPError) -> ApplicationRelatedData in
            try session.select()
            return try session.applicationRelatedData()
        }
        return OpenPGPCard(session: session, data: data, selectedAt: connection.resets)
    }

    /// Runs `body` in one transaction of the connection, selecting the application first when the card was
    /// reset since it was last selected.
    public func transaction<R: ~Copyable>(_ body: (OpenPGPSession) throws(OpenPGPError) -> R) throws(OpenPGPError)
        -> R
    {
        let connection = session.connection
        let result = try Self.exclusive(connection) { () throws(OpenPGPError) -> R in
            if connection.resets != selectedAt {
                try session.select()
                selectedAt = connection.resets
            }
            return try body(session)
        }
        return result
    }

    /// The key derivation the card wants for its PINs (KDF-DO), read inside a transaction when announced.
    public func keyDerivation(_ session: OpenPGPSession) throws(OpenPGPError) -> KeyDerivation? {
        try session.keyDerivation(data)
    }

    /// The connection's transaction, with its errors as `OpenPGPError`.
    private static func exclusive<R: ~Copyable>(
        _ connection: any CardConnection, _ body: () throws(OpenPGPError) -> R
    ) throws(OpenPGPError) -> R {
        do {
            return try connection.exclusive { () throws -> R in try body() }
        } catch let error as OpenPGPError {
            throw error
        } catch {
            throw .transport(error)
        }
    }
}
