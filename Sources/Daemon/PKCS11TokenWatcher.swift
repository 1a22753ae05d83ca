import FoundationEssentials
import Synchronization
import TokenpinCore
import TokenpinProtocol
import TokenpinService
internal import TokenpinSystem

/// Card removal for PKCS#11 tokens, which pcscd's reader events do not cover (SoftHSM, a token behind a module's
/// own transport) or name differently (OpenSC's slot is a reader, but the binding knows the key by its URI).
///
/// When a user verifies with a PKCS#11 key under `on-card-removal = lock`, `CardRemovalPolicy` asks this watcher to
/// follow it: a thread asks a `PKCS11PresenceProbe` every `intervalSeconds` whether the token is still there (the
/// probe's helper runs the module; nothing of it runs here). When it leaves, `cardRemoved` is published for the key's
/// URI and the policy's grace period starts, exactly as for a card leaving its reader; when it comes back within the
/// grace period, `cardInserted`, and the policy reads it again (by its public key) before it cancels the lock. The
/// thread ends when nobody is watched on that URI any more and the token is present, or once the grace period (and
/// two intervals) passed after it left.
final class PKCS11TokenWatcher: Sendable {
    private let hub: EventHub
    private let logger: Logger
    private let access: @Sendable () -> PKCS11Access
    private let grace: @Sendable () -> Int
    private let intervalSeconds: Double
    private let stopped: @Sendable () -> Bool
    private let policy = Mutex<CardRemovalPolicy?>(nil)
    /// The URIs followed, each with whether `watch` asked for it again since its thread last considered ending.
    private let watching = Mutex([String: Bool]())

    init(
        hub: EventHub, logger: Logger, access: @escaping @Sendable () -> PKCS11Access,
        grace: @escaping @Sendable () -> Int, intervalSeconds: Double = 1,
        stopped: @escaping @Sendable () -> Bool = { false }
    ) {
        self.hub = hub
        self.logger = logger
        self.access = access
        self.grace = grace
        self.intervalSeconds = intervalSeconds
        self.stopped = stopped
    }

    /// The policy told of removals (set once, after both exist).
    func attach(_ policy: CardRemovalPolicy) {
        self.policy.withLock { $0 = policy }
    }

    /// Follows the key `uri` (identity `identity`) until nobody is watched on it; once per URI.
    func watch(uri: String, identity: String) {
        let start = watching.withLock { watching -> Bool in
            guard watching[uri] == nil else {
                watching[uri] = true
                return false
            }
            watching[uri] = false
            return true
        }
        guard start else { return }
        let access = access()
        do {
            try DetachedThread.start(stackSize: 1 << 20) { [self] in
                let probe = PKCS11PresenceProbe(uri: uri, identity: identity, access: access)
                follow(probe)
                probe.close()
            }
        } catch {
            // Nobody follows the URI, so a later watch may try again.
            watching.withLock { _ = $0.removeValue(forKey: uri) }
            logger.warning("PKCS#11 token not watched: no thread for it", [("uri", uri), ("error", error.description)])
        }
    }

    private func follow(_ probe: PKCS11PresenceProbe) {
        let uri = probe.uri
        var present = true
        var goneSince: ContinuousClock.Instant?
        logger.info("watching PKCS#11 token", [("uri", uri)])
        while !stopped() {
            pause()
            let now = probe.isPresent()
            if now != present {
                present = now
                goneSince = now ? nil : .now
                let name = now ? "cardInserted" : "cardRemoved"
                logger.info(now ? "PKCS#11 token back" : "PKCS#11 token removed", [("uri", uri)])
                hub.publish(user: nil, name: name, fields: [JSONMember("reader", .text(uri))])
                policy.withLock { $0 }?.readerEvent(kind: name, reader: uri)
            }
            let watched = policy.withLock { $0 }?.isWatched(uri) ?? false
            guard !watched else { continue }
            let limit = Duration.seconds(grace()) + .seconds(2 * intervalSeconds)
            let done = present || goneSince.map { ContinuousClock.now - $0 > limit } ?? false
            if done, mayEnd(uri) { return }
        }
        _ = mayEnd(uri)
    }

    /// Ends the watch of `uri` unless `watch` asked for it again since the last look (a verify that raced the end).
    private func mayEnd(_ uri: String) -> Bool {
        watching.withLock { watching in
            if watching[uri] == true {
                watching[uri] = false
                return false
            }
            watching[uri] = nil
            return true
        }
    }

    private func pause() {
        var left = intervalSeconds
        while left > 0 && !stopped() {
            let step = min(left, 0.2)
            CurrentThread.sleep(for: .microseconds(Int(step * 1_000_000)), resumeAfterSignal: { false })
            left -= step
        }
    }
}
