package import TokenpinAPDU

// Readers and cards coming and going, as the daemon sees them: a source it starts, and a stream it reads on a
// thread of its own. The concrete source (PC/SC through pcscd) lives in TokenpinReaders; the daemon knows only
// these protocols, so it neither imports PC/SC nor decides how readers are found.

/// Why reader events stopped or could not start (the reader service is not running, it went away, ...).
package struct ReaderEventError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for the log.
    package var description: String

    /// Creates an error saying `description`.
    package init(_ description: String) { self.description = description }
}

/// Where reader events come from: PC/SC readers through pcscd, or a scripted source in tests.
///
/// The daemon calls `start()` from its watcher thread; when it throws (the reader service is not running) the
/// daemon tries again later, and when a stream's `next(timeout:)` throws the daemon starts a new stream.
package protocol ReaderEventSource: Sendable {
    /// Starts watching: takes a snapshot of the readers present and returns the stream of what changes after it.
    func start() throws(ReaderEventError) -> any ReaderEventStream
}

/// One run of watching readers, read by one thread; it owns what watching holds (a PC/SC context) until it is
/// released.
package protocol ReaderEventStream: AnyObject {
    /// The readers when the stream started, each with whether a card was in it.
    var readers: [ReaderPresence] { get }

    /// Waits until readers or cards change, or `timeout` passes; returns the events in the order they happened
    /// (empty when the timeout passed first). A card pulled and put back between two calls gives `cardRemoved`
    /// then `cardInserted`. Blocks the calling thread.
    func next(timeout: Duration) throws(ReaderEventError) -> [ReaderEvent]
}
