import Dispatch
import FoundationEssentials
import Synchronization
import TokenpinCore
import TokenpinService
internal import TokenpinSystem

/// Locks a user's graphical and terminal sessions.
package protocol SessionLocker: Sendable {
    /// Locks every session of `user`; false when nothing could be locked.
    func lockSessions(of user: String) -> Bool
}

/// Locks sessions through logind: `loginctl show-user USER -P Sessions`, then `loginctl lock-session ID...`.
package struct LoginctlLocker: SessionLocker {
    /// The loginctl binary.
    package var loginctl: String

    /// Uses `loginctl` at `path`.
    package init(loginctl: String = "/usr/bin/loginctl") {
        self.loginctl = loginctl
    }

    package func lockSessions(of user: String) -> Bool {
        guard RecordStore.validate(user: user),
            let sessions = run(["show-user", user, "-P", "Sessions"])
        else { return false }
        let ids = sessions.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard !ids.isEmpty else { return false }
        return run(["lock-session"] + ids) != nil
    }

    /// Runs loginctl with `arguments` (no shell); its standard output, or nil when it failed.
    private func run(_ arguments: [String]) -> String? {
        guard let output = try? PipeEnds.make() else { return nil }
        var options = ChildProcess.Options()
        options.arguments = arguments
        // As Foundation's `Process` started it: this process's environment and standard input; errors discarded.
        options.environment = CurrentProcess.environment
        options.standardInput = 0
        options.standardOutput = output.writeEnd.rawValue
        guard let child = try? ChildProcess.spawn(loginctl, options) else { return nil }
        let reading = output.keepingReadEnd()
        let bytes = try? reading.readAll(maximumCount: 1 << 20)
        var ended: ChildProcess.Termination?
        do {
            while ended == nil { ended = try child.waitForExit(timeoutMilliseconds: 60_000) }
        } catch {
            return nil
        }
        guard ended == .exited(0), let bytes else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// `on-card-removal = lock`: remembers which users verified with which card (serial) in which reader, and
/// locks their sessions when that card leaves, after `lock-grace` seconds, unless that same card is back by
/// then.
///
/// Another card in the reader cancels nothing: when the grace period ends and any card was inserted meanwhile,
/// `locate` reads the serials of the cards present (public data only) and only the bound serial counts. When no
/// card was inserted, no card is read. Time is injected: `schedule` runs a closure after a delay (a dispatch
/// queue in the daemon, a manual list in tests).
package final class CardRemovalPolicy: Sendable {
    struct State {
        var cardsPresent = Set<String>()
        /// Reader name to the users who verified with the card in it, and that card's serial.
        var watched: [String: [String: String]] = [:]
        /// Counts card insertions, so a grace period that saw none needs no card read.
        var insertions = 0
    }

    private let state = Mutex(State())
    private let locker: any SessionLocker
    private let settings: @Sendable () -> (action: CardRemovalAction, grace: Int)
    private let schedule: @Sendable (Int, @escaping @Sendable () -> Void) -> Void
    private let locate: @Sendable (_ user: String, _ serial: String) -> String?
    private let logger: Logger
    private let onLocked: @Sendable (String) -> Void
    private let watchToken: @Sendable (_ reader: String, _ serial: String) -> Void

    /// Creates the policy; `settings` reads the current configuration (so `SIGHUP` applies); `locate` names
    /// the reader holding the card a user verified with (its serial, and the card-authentication key the user's
    /// binding recorded), or nil (the daemon reads the cards present, see `CardReaders.reader(holding:)`).
    package init(
        locker: any SessionLocker, logger: Logger,
        settings: @escaping @Sendable () -> (action: CardRemovalAction, grace: Int),
        schedule: @escaping @Sendable (Int, @escaping @Sendable () -> Void) -> Void,
        locate: @escaping @Sendable (_ user: String, _ serial: String) -> String?,
        onLocked: @escaping @Sendable (String) -> Void = { _ in },
        watchToken: @escaping @Sendable (_ reader: String, _ serial: String) -> Void = { _, _ in }
    ) {
        self.locker = locker
        self.logger = logger
        self.settings = settings
        self.schedule = schedule
        self.locate = locate
        self.onLocked = onLocked
        self.watchToken = watchToken
    }

    /// The daemon's scheduler: a global queue.
    package static func dispatchSchedule(_ seconds: Int, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds), execute: work)
    }

    /// A reader event from the watcher.
    package func readerEvent(kind: String, reader: String) {
        switch kind {
        case "cardInserted":
            state.withLock { state in
                state.cardsPresent.insert(reader)
                state.insertions += 1
            }
        case "cardRemoved", "readerRemoved":
            cardLeft(reader)
        default:
            break
        }
    }

    /// The readers that had a card when the watcher started.
    package func setPresent(_ readers: [String]) {
        state.withLock { state in
            state.cardsPresent = Set(readers)
            state.insertions += 1
        }
    }

    /// A verification of `user` succeeded with the card `serial` in `reader` (`VerifyReport.card`), whose removal
    /// is noticed as `watch` says.
    package func tokenVerified(
        user: String, serial: String, reader: String, watch: TokenRemovalWatch = .readerEvents
    ) {
        guard settings().action == .lock else { return }
        state.withLock { state in
            for name in state.watched.keys { state.watched[name]?[user] = nil }
            state.watched[reader, default: [:]][user] = serial
        }
        // No PC/SC event names this "reader" (a PKCS#11 key's URI): its token is watched on its own.
        if watch == .ownWatch { watchToken(reader, serial) }
    }

    /// Whether a user who verified with the card in `reader` is watched.
    package func isWatched(_ reader: String) -> Bool {
        state.withLock { !($0.watched[reader]?.isEmpty ?? true) }
    }

    private func cardLeft(_ reader: String) {
        let (users, insertions) = state.withLock { state -> ([String: String], Int) in
            state.cardsPresent.remove(reader)
            return (state.watched.removeValue(forKey: reader) ?? [:], state.insertions)
        }
        let (action, grace) = settings()
        guard action == .lock, !users.isEmpty else { return }
        schedule(grace) { [self] in
            let cardCameBack = state.withLock { $0.insertions != insertions }
            for (user, serial) in users.sorted(by: { $0.key < $1.key }) {
                // Only the card the user verified with cancels the lock, wherever it is now.
                if cardCameBack, let back = locate(user, serial) {
                    logger.info(
                        "card back within lock-grace; sessions stay unlocked",
                        [("user", user), ("reader", back)])
                    state.withLock { state in state.watched[back, default: [:]][user] = serial }
                    continue
                }
                let locked = locker.lockSessions(of: user)
                logger.info(
                    "card removed: locking sessions",
                    [
                        ("user", user), ("reader", reader),
                        ("locked", String(locked)),
                    ])
                if locked { onLocked(user) }
            }
        }
    }
}
