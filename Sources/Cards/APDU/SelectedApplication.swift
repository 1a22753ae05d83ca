/// The bookkeeping every card application repeats around its commands (yubikit's session): which reset of the
/// card the application was last selected at, and whether the session was closed.
///
/// `transaction` runs a body in one transaction of the connection, selecting the application again first when
/// the connection reset the card since (a reset drops the selection along with a verified PIN), so callers never
/// track what the card has forgotten. After `close()` no command goes out. Used from one thread at a time, like
/// its connection.
public final class SelectedApplication {
    /// The channel to the card.
    public let connection: any CardConnection
    /// The connection's reset count when the application was last selected.
    private var selectedAtResets: Int
    /// Whether `close()` ended the session.
    public private(set) var isClosed = false

    /// Bookkeeping for an application just selected on `connection`.
    public init(selectedOn connection: any CardConnection) {
        self.connection = connection
        selectedAtResets = connection.resets
    }

    /// Runs `body` in one transaction, calling `select` first when the card was reset since the last selection.
    ///
    /// - Throws: what `select` or `body` throw; `closed` after `close()`; `transportError` of the transport's
    ///   error when the transaction itself fails (the card went away).
    public func transaction<R: ~Copyable, E: Error>(
        select: () throws(E) -> Void, closed: @autoclosure () -> E, transportError: (CardTransportError) -> E,
        _ body: () throws(E) -> R
    ) throws(E) -> R {
        guard !isClosed else { throw closed() }
        return try connection.exclusive(transportError: transportError) { () throws(E) -> R in
            if connection.resets != selectedAtResets {
                try select()
                selectedAtResets = connection.resets
            }
            return try body()
        }
    }

    /// Ends the session: the connection closes, dropping any PIN still verified. Calling it again does nothing.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        connection.close()
    }
}
