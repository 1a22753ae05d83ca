import Foundation
import TokenpinCore
import TokenpinPCSC
import TokenpinProtocol

/// Watches PC/SC readers and cards on a thread of its own and publishes `readerAdded`, `readerRemoved`,
/// `cardInserted` and `cardRemoved` to `watch` subscribers.
///
/// When pcscd is not running it tries again every `retrySeconds`, logging the outage once. Reader events concern
/// no user, so every subscriber sees them.
final class ReaderWatcher: Sendable {
    let hub: EventHub
    let cardRemoval: CardRemovalPolicy?
    let logger: Logger
    let stopped: @Sendable () -> Bool
    let retrySeconds: Double

    init(
        hub: EventHub, cardRemoval: CardRemovalPolicy? = nil, logger: Logger, retrySeconds: Double = 5,
        stopped: @escaping @Sendable () -> Bool
    ) {
        self.hub = hub
        self.cardRemoval = cardRemoval
        self.logger = logger
        self.retrySeconds = retrySeconds
        self.stopped = stopped
    }

    /// The `watch` event for a PC/SC event.
    static func message(for event: ReaderEvent) -> (name: String, fields: [JSONMember]) {
        (event.kind.rawValue, [JSONMember("reader", .text(event.reader))])
    }

    /// Starts the thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func run() {
        var reportedOutage = false
        while !stopped() {
            let monitor: ReaderMonitor
            do {
                monitor = try ReaderMonitor()
            } catch {
                if !reportedOutage {
                    logger.info("pcscd not reachable; reader events wait for it", [("error", error.description)])
                    reportedOutage = true
                }
                sleep(seconds: retrySeconds)
                continue
            }
            reportedOutage = false
            logger.info("watching readers", [("readers", String(monitor.readers.count))])
            cardRemoval?.setPresent(monitor.readers.filter(\.isCardPresent).map(\.name))
            watch(monitor)
        }
    }

    private func watch(_ monitor: consuming ReaderMonitor) {
        while !stopped() {
            do {
                for event in try monitor.waitForEvents(timeout: .seconds(1)) {
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
            usleep(200_000)
            left -= 0.2
        }
    }
}
