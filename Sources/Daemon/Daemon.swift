import FoundationEssentials
import Synchronization
import TokenpinCore
import TokenpinProtocol
import TokenpinService
internal import TokenpinSystem

/// Where tokenpind listens and keeps state, and the limits that are not in the configuration file.
package struct DaemonOptions: Sendable {
    /// The Unix socket (ignored under socket activation).
    package var socketPath: String = "/run/tokenpin/socket"
    /// The record directory (0700, owned by the daemon's user).
    package var stateDirectory: String = "/var/lib/tokenpin"
    /// A configuration file read after the system files; when set, the system files are not read.
    package var configFile: String?
    /// The system configuration directory (`tokenpin.conf` and `conf.d/`).
    package var systemConfigDirectory: String = "/etc/tokenpin"
    /// The site's lists of revoked cards, one identity a line (read at start and on `SIGHUP`).
    package var revokedDirectory: String = RevokedCards.defaultDirectory
    /// The most connections at once.
    package var maximumConnections = 512
    /// The most connections one uid may hold.
    package var maximumConnectionsPerUID = 128
    /// Where reader and card events come from for `watch` subscribers and `on-card-removal` (tokenpind hands
    /// over the PC/SC readers' events); nil: none are watched (`--no-readers`, the simulated card, tests).
    package var readerEvents: (any ReaderEventSource)?
    /// Seconds between attempts to start `readerEvents` while it cannot start (pcscd not running).
    package var readerRetrySeconds: Double = 5
    /// Where cards come from for token operations (PC/SC readers, or the simulated card); nil: no token.
    package var cards: (any CardReaders)?
    /// The loginctl binary `on-card-removal = lock` runs.
    package var loginctl = "/usr/bin/loginctl"
    /// The most operations holding Argon2id memory at once (default: the cores, at least two). Memory is held around
    /// the counted write and the derivation only (`busy` then counts nothing), so the other writes of a verification
    /// overlap other derivations; more derivations than cores only time-slice them (scripts/bench-daemon: fewer
    /// verifications per second, and a status request waits longer). Two on one core, so that an enrolment's
    /// calibration does not hold up every verification.
    package var maximumParallelKDF = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// The longest one write to a client may block (`SO_SNDTIMEO`): a client that stops reading is dropped then.
    package var sendTimeoutMilliseconds = 5000
    /// The journal's socket for the audit trail (nil: log lines on stderr only).
    package var journalSocket: String? = "/run/systemd/journal/socket"
    /// Who owns the active local session (`card-bind = active-session`): sd-login, loaded when first asked.
    package var sessions = LoginSessions()

    /// The defaults.
    package init() {}
}

/// A start-up failure of the daemon.
package struct DaemonError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package var description: String

    init(_ description: String) { self.description = description }
}

/// tokenpind: a Unix socket server in front of `PINService`, one thread per connection.
///
/// Every connection is identified by `SO_PEERCRED`; `Authorization` decides which record it may act on.
/// Operations run on their connection's thread, never on the cooperative pool (Argon2id and `flock` block).
/// An operation whose client goes away is finished all the same (the counter is written as for a completed
/// attempt), or abandoned at a prompt, which is always before the counter is touched.
package final class Daemon: Sendable {
    /// The options.
    package let options: DaemonOptions
    let logger: Logger
    let store: RecordStore
    let configurationState: ConfigurationBox
    /// The revoked cards in force (`revoked.d`), replaced on `SIGHUP`.
    let revocations: Mutex<RevokedCards>
    /// The Argon2id memory budget.
    package let budget: MemoryBudget
    /// One operation per user.
    package let userLocks = UserLocks()
    /// Connection counts.
    package let connections: ConnectionTable
    /// `watch` subscribers.
    package let hub = EventHub()
    /// `on-card-removal`.
    package let cardRemoval: CardRemovalPolicy
    /// Remote and other attempts in flight, per target user and per invoker.
    package let untrustedAttempts = InFlightAttempts()
    /// The login-password check's throttle.
    package let passwordThrottle = PasswordThrottle()
    /// Cards being bound right now.
    let cardClaims = CardClaims()
    /// The audit trail (the journal, else stderr).
    package let audit: AuditTrail
    var sessions: LoginSessions { options.sessions }
    let draining = Atomic<Bool>(false)
    let listenFD = Atomic<Int32>(-1)
    let bound = Atomic<Bool>(false)
    let operations = OperationCounter()

    /// Loads the configuration and prepares the state directory.
    package init(options: DaemonOptions, logger: Logger) throws(DaemonError) {
        self.options = options
        self.logger = logger
        audit = AuditTrail(journalSocket: options.journalSocket, logger: logger)
        let configuration = try Self.loadConfiguration(options)
        configurationState = ConfigurationBox(configuration)
        let revoked = RevokedCards.load(directory: options.revokedDirectory)
        revocations = Mutex(revoked.list)
        for problem in revoked.problems { logger.error("revoked.d: a line revokes nothing", [("problem", problem)]) }
        budget = MemoryBudget(
            capacityKiB: Configuration.kibibytes(mebibytes: configuration.daemon.kdfMemoryMiB),
            maximumHolders: options.maximumParallelKDF)
        connections = ConnectionTable(
            maximumTotal: options.maximumConnections,
            maximumPerUID: options.maximumConnectionsPerUID)
        var store = RecordStore(directory: options.stateDirectory)
        store.lockWaitSeconds = Double(configuration.daemon.waitTimeoutSeconds)
        self.store = store
        let state = configurationState
        let hub = self.hub
        let cards = options.cards
        let records = self.store
        let tokenWatcher = PKCS11TokenWatcher(
            hub: hub, logger: logger, access: { PKCS11Access(configuration: state.value.withLock { $0 }) },
            grace: { state.value.withLock { $0.daemon.lockGraceSeconds } })
        cardRemoval = CardRemovalPolicy(
            locker: LoginctlLocker(loginctl: options.loginctl), logger: logger,
            settings: { state.value.withLock { ($0.daemon.onCardRemoval, $0.daemon.lockGraceSeconds) } },
            schedule: CardRemovalPolicy.dispatchSchedule,
            locate: { user, serial in
                let readers = cards?.withTimeouts(of: state.value.withLock { $0 })
                // The binding as the record keeps it: a card that only claims its identity cancels no lock.
                guard let record = try? records.load(user: user) else { return nil }
                guard let binding = record.slot(.token)?.token ?? record.slot(.composite)?.token,
                    binding.serial == serial
                else { return readers?.reader(holding: serial) }
                if binding.application == "pkcs11" {
                    return PKCS11Access(configuration: state.value.withLock { $0 }).reader(holding: binding)
                }
                return readers?.reader(holding: binding)
            },
            onLocked: { user in hub.publish(user: user, name: "sessionsLocked", fields: []) },
            watchToken: { uri, serial in tokenWatcher.watch(uri: uri, identity: serial) })
        tokenWatcher.attach(cardRemoval)
        do {
            try store.prepare()
        } catch {
            throw DaemonError("state directory: \(error)")
        }
    }

    static func loadConfiguration(_ options: DaemonOptions) throws(DaemonError) -> Configuration {
        // Only system files: a daemon running as root never reads a user's configuration.
        var files = [options.systemConfigDirectory + "/tokenpin.conf"]
        let dropIns = options.systemConfigDirectory + "/conf.d"
        if let names = try? FileManager.default.contentsOfDirectory(atPath: dropIns) {
            files += names.filter { $0.hasSuffix(".conf") && !$0.hasPrefix(".") }.sorted().map { dropIns + "/" + $0 }
        }
        do {
            return try Configuration.load(
                files: options.configFile == nil ? files : [], explicitFile: options.configFile)
        } catch {
            throw DaemonError("configuration: \(error)")
        }
    }

    /// The protocol version this daemon writes (`tokenpind --version`).
    package static var protocolVersion: Int { ProtocolLimits.version }

    /// The configuration in force.
    package var configuration: Configuration { configurationState.value.withLock { $0 } }

    /// Whether the daemon is shutting down.
    package var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// The revoked cards in force.
    package var revokedCards: RevokedCards { revocations.withLock { $0 } }

    /// Reads the configuration again (`SIGHUP`); a broken file keeps the old settings. The revocation lists are
    /// read again whatever the configuration says: a lost card must stop at the next reload.
    @discardableResult
    package func reload() -> Bool {
        let revoked = RevokedCards.load(directory: options.revokedDirectory)
        revocations.withLock { $0 = revoked.list }
        for problem in revoked.problems { logger.error("revoked.d: a line revokes nothing", [("problem", problem)]) }
        logger.info("revoked cards read", [("revoked.count", String(revoked.list.entries.count))])
        do {
            let fresh = try Self.loadConfiguration(options)
            configurationState.value.withLock { $0 = fresh }
            budget.setCapacity(Configuration.kibibytes(mebibytes: fresh.daemon.kdfMemoryMiB))
            logger.info("configuration reloaded", [("daemon-kdf-memory.mib", String(fresh.daemon.kdfMemoryMiB))])
            return true
        } catch {
            logger.error("configuration not reloaded; the old settings stay", [("error", error.description)])
            return false
        }
    }
}

/// The configuration in force, shared with the closures that read it (`SIGHUP` replaces it).
final class ConfigurationBox: Sendable {
    let value: Mutex<Configuration>

    init(_ configuration: Configuration) { value = Mutex(configuration) }
}
