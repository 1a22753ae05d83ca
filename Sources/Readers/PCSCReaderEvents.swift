import TokenpinAPDU
import TokenpinPCSC
package import TokenpinService

// Reader and card events from pcscd, as the daemon's watcher reads them: `ReaderMonitor` behind the service's
// `ReaderEventSource`, so that the daemon never imports PC/SC.

/// The PC/SC readers' events through pcscd: what tokenpind watches unless `--no-readers` or `--reader sim`.
package struct PCSCReaderEvents: ReaderEventSource {
    /// Events from the readers pcscd knows.
    package init() {}

    /// Opens a PC/SC context of its own and takes a snapshot of the readers and their cards.
    ///
    /// Throws when pcscd is not running (or refuses the context).
    package func start() throws(ReaderEventError) -> any ReaderEventStream {
        do {
            return PCSCReaderEventStream(monitor: try ReaderMonitor())
        } catch {
            throw Self.eventError(error)
        }
    }

    static func eventError(_ error: PCSCError) -> ReaderEventError {
        ReaderEventError(CardTransportError(error).explanation)
    }
}

/// One `ReaderMonitor`, owned by the watcher thread that reads it; its PC/SC context is released with it.
final class PCSCReaderEventStream: ReaderEventStream {
    private var monitor: ReaderMonitor

    init(monitor: consuming ReaderMonitor) {
        self.monitor = monitor
    }

    var readers: [ReaderPresence] {
        monitor.readers.map { ReaderPresence(name: $0.name, cardPresent: $0.isCardPresent) }
    }

    func next(timeout: Duration) throws(ReaderEventError) -> [ReaderEvent] {
        do {
            return try monitor.waitForEvents(timeout: timeout)
        } catch {
            throw PCSCReaderEvents.eventError(error)
        }
    }
}
