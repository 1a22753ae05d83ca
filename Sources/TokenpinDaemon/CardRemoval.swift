import Foundation
import Synchronization
import TokenpinCore

/// Locks a user's graphical and terminal sessions.
public protocol SessionLocker: Sendable {
    /// Locks every session of `user`; false when nothing could be locked.
    func lockSessions(of user: String) -> Bool
}

/// Locks sessions through logind: `loginctl show-user USER -P Sessions`, then `loginctl lock-session ID...`.
public struct LoginctlLocker: SessionLocker {
    /// The loginctl binary.
    public var loginctl: String

    /// Uses `loginctl` at `path`.
    public init(loginctl: String = "/usr/bin/loginctl") {
        self.loginctl = loginctl
    }

    public func lockSessions(of user: String) -> Bool {
        guard RecordStore.validate(user: user),
              let sessions = run(["show-user", user, "-P", "Sessions"]) else { return false }
        let ids = sessions.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard !ids.isEmpty else { return false }
        return run(["lock-session"] + ids) != nil
    }

    /// Runs loginctl with `arguments` (no shell); its standard output, or nil when it failed.
    private func run(_ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: loginctl)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// `on-card-removal = lock`: remembers which users verified with the card in which reader, and locks their
/// sessions when that card leaves (after `lock-grace` seconds, unless a card is back in the reader by then).
///
/// Which reader held the card is known only as "the readers with a card when the token verification
/// succeeded": with several cards present, removing any of them locks. Time is injected: `schedule` runs a
/// closure after a delay (a dispatch queue in the daemon, a manual list in tests).
public final class CardRemovalPolicy: Sendable {
    struct State {
        var cardsPresent = Set<String>()
        var usersByReader: [String: Set<String>] = [:]
        var generation: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let locker: any SessionLocker
    private let settings: @Sendable () -> (action: CardRemovalAction, grace: Int)
    private let schedule: @Sendable (Int, @escaping @Sendable () -> Void) -> Void
    private let logger: Logger
    private let onLocked: @Sendable (String) -> Void

    /// Creates the policy; `settings` reads the current configuration (so `SIGHUP` applies).
    public init(locker: any SessionLocker, logger: Logger,
                settings: @escaping @Sendable () -> (action: CardRemovalAction, grace: Int),
                schedule: @escaping @Sendable (Int, @escaping @Sendable () -> Void) -> Void,
                onLocked: @escaping @Sendable (String) -> Void = { _ in }) {
        self.locker = locker
        self.logger = logger
        self.settings = settings
        self.schedule = schedule
        self.onLocked = onLocked
    }

    /// The daemon's scheduler: a global queue.
    public static func dispatchSchedule(_ seconds: Int, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds), execute: work)
    }

    /// A reader event from the watcher.
    public func readerEvent(kind: String, reader: String) {
        switch kind {
        case "cardInserted":
            state.withLock { state in
                state.cardsPresent.insert(reader)
                state.generation[reader, default: 0] += 1
            }
        case "cardRemoved", "readerRemoved":
            cardLeft(reader)
        default:
            break
        }
    }

    /// The readers that had a card when the watcher started.
    public func setPresent(_ readers: [String]) {
        state.withLock { $0.cardsPresent = Set(readers) }
    }

    /// A verification of `user` succeeded with the token.
    public func tokenVerified(user: String) {
        guard settings().action == .lock else { return }
        state.withLock { state in
            for reader in state.cardsPresent { state.usersByReader[reader, default: []].insert(user) }
        }
    }

    private func cardLeft(_ reader: String) {
        let (users, generation) = state.withLock { state -> (Set<String>, Int) in
            state.cardsPresent.remove(reader)
            state.generation[reader, default: 0] += 1
            return (state.usersByReader.removeValue(forKey: reader) ?? [], state.generation[reader, default: 0])
        }
        let (action, grace) = settings()
        guard action == .lock, !users.isEmpty else { return }
        schedule(grace) { [self] in
            // A card back in the reader during the grace period (or anything else since) cancels the lock.
            let unchanged = state.withLock { $0.generation[reader, default: 0] == generation }
            guard unchanged else {
                logger.info("card back within lock-grace; sessions stay unlocked", [("reader", reader)])
                state.withLock { state in state.usersByReader[reader, default: []].formUnion(users) }
                return
            }
            for user in users.sorted() {
                let locked = locker.lockSessions(of: user)
                logger.info("card removed: locking sessions", [("user", user), ("reader", reader),
                                                                ("locked", String(locked))])
                if locked { onLocked(user) }
            }
        }
    }
}
