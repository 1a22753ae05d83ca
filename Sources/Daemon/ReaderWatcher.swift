import FoundationEssentials
import TokenpinAPDU
import TokenpinCore
import TokenpinProtocol
import TokenpinService
internal import TokenpinSystem

/// Watches readers and cards on a thread of its own and publishes `readerAdded`, `readerRemoved`,
/// `cardInserted` and `cardRemoved` to `watch` subscribers, and tells `on-card-removal` what left.
///
/// Where the events come from is the `ReaderEventSource` tokenpind hands over (PC/SC through pcscd). When the
/// source cannot start (pcscd is not running) the watcher tries again every `retrySeconds`, logging the outage
/// once; when a stream fails it starts a new one. Reader events concern no user, so every subscriber sees them.
final class ReaderWatcher: Sendable {
    let source: any ReaderEventSource
    let hub: EventHub
    let cardRemoval: CardRemovalPolicy?
    let logger: Logger
    let stopped: @Sendable () -> Bool
    let retrySeconds: Double

    init(
        source: any ReaderEventSource, hub: EventHub, cardRemoval: CardRemovalPolicy? = nil, logger: Logger,
        retrySeconds: Double = 5, stopped: @escaping @Sendable () -> Bool
    ) {
        self.source = source
        self.hub = hub
        self.cardRemoval = cardRemoval
        self.logger = logger
        self.retrySeconds = retrySeconds
        self.stopped = stopped
    }

    /// The `watch` event for a reader event.
    static func message(for event: ReaderEvent) -> (name: String, fields: [JSONMember]) {
        (event.kind.rawValue, [JSONMember("reader", .text(event.reader))])
    }

    /// Starts the thread.
    func start() {
        do {
            try DetachedThread.start(stackSize: 1 << 20) { [self] in run() }
        } catch {
            logger.warning("reader events not watched: no thread for it", [("error", error.description)])
        }
    }

    private func run() {
        var reportedOutage = false
        while !stopped() {
            let stream: any ReaderEventStream
            do {
                stream = try source.start()
            } catch {
                if !reportedOutage {
                    logger.info(
                        "reader service not reachable; reader events wait for it", [("error", error.description)])
                    reportedOutage = true
                }
                sleep(seconds: retrySeconds)
                continue
            }
            reportedOutage = false
            let readers = stream.readers
            logger.info("watching readers", [("readers", String(readers.count))])
            cardRemoval?.setPresent(readers.filter(\.cardPresent).map(\.name))
            watch(stream)
        }
    }

    private func watch(_ stream: any ReaderEventStream) {
        while !stopped() {
            do {
                for event in try stream.next(timeout: .seconds(1)) {
                    let (name, fields) = Self.message(for: event)
                    logger.debug("reader event", [("event", name), ("reader", event.reader)])
                    hub.publish(user: nil, name: name, fields: fields)
                    cardRemoval?.readerEvent(kind: name, reader: event.reader)
                }
            } catch {
                logger.info("reader monitoring stopped; retrying", [("error", error.description)])
                return
            }
        }
    }

    private func sleep(seconds: Double) {
        var left = seconds
        while left > 0 && !stopped() {
            let step = min(left, 0.2)
            CurrentThread.sleep(for: .microseconds(Int(step * 1_000_000)), resumeAfterSignal: { false })
            left -= step
        }
    }
}
