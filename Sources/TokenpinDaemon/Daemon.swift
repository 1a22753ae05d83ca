import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import TokenpinCore
import TokenpinProtocol
import TokenpinService
internal import TokenpinSystem

/// Where tokenpind listens and keeps state, and the limits that are not in the configuration file.
public struct DaemonOptions: Sendable {
    /// The Unix socket (ignored under socket activation).
    public var socketPath: String = "/run/tokenpin/socket"
    /// The record directory (0700, owned by the daemon's user).
    public var stateDirectory: String = "/var/lib/tokenpin"
    /// A configuration file read after the system files; when set, the system files are not read.
    public var configFile: String?
    /// The system configuration directory (`tokenpin.conf` and `conf.d/`).
    public var systemConfigDirectory: String = "/etc/tokenpin"
    /// The most connections at once.
    public var maximumConnections = 512
    /// The most connections one uid may hold.
    public var maximumConnectionsPerUID = 128
    /// Whether to watch PC/SC readers and cards for `watch` subscribers and `on-card-removal`.
    public var watchReaders = true
    /// Where cards come from for token operations (PC/SC readers, or the simulated card); nil: no token.
    public var cards: (any CardReaders)?
    /// The loginctl binary `on-card-removal = lock` runs.
    public var loginctl = "/usr/bin/loginctl"
    /// The most operations holding Argon2id memory at once (default: twice the cores, so that one holder's record
    /// writes and fsyncs overlap another's derivation while a status request still gets a fair share of a core).
    public var maximumParallelKDF = 2 * ProcessInfo.processInfo.activeProcessorCount
    /// The longest one write to a client may block (`SO_SNDTIMEO`): a client that stops reading is dropped then.
    public var sendTimeoutMilliseconds = 5000

    /// The defaults.
    public init() {}
}

/// A start-up failure of the daemon.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var description: String

    init(_ description: String) { self.description = description }
}

/// tokenpind: a Unix socket server in front of `PINService`, one thread per connection.
///
/// Every connection is identified by `SO_PEERCRED`; `Authorization` decides which record it may act on.
/// Operations run on their connection's thread, never on the cooperative pool (Argon2id and `flock` block).
/// An operation whose client goes away is finished all the same (the counter is written as for a completed
/// attempt), or abandoned at a prompt, which is always before the counter is touched.
public final class Daemon: Sendable {
    /// The options.
    public let options: DaemonOptions
    let logger: Logger
    let store: RecordStore
    let configurationState: ConfigurationBox
    /// The Argon2id memory budget.
    public let budget: MemoryBudget
    /// One operation per user.
    public let userLocks = UserLocks()
    /// Connection counts.
    public let connections: ConnectionTable
    /// `watch` subscribers.
    public let hub = EventHub()
    /// `on-card-removal`.
    public let cardRemoval: CardRemovalPolicy
    private let draining = Atomic<Bool>(false)
    private let listenFD = Atomic<Int32>(-1)
    private let bound = Atomic<Bool>(false)
    private let operations = OperationCounter()

    /// Loads the configuration and prepares the state directory.
    public init(options: DaemonOptions, logger: Logger) throws(DaemonError) {
        self.options = options
        self.logger = logger
        let configuration = try Self.loadConfiguration(options)
        configurationState = ConfigurationBox(configuration)
        budget = MemoryBudget(capacityKiB: Configuration.kibibytes(mebibytes: configuration.daemonKDFMemoryMiB),
                              maximumHolders: options.maximumParallelKDF)
        connections = ConnectionTable(maximumTotal: options.maximumConnections,
                                      maximumPerUID: options.maximumConnectionsPerUID)
        var store = RecordStore(directory: options.stateDirectory)
        store.lockWaitSeconds = Double(configuration.daemonWaitTimeoutSeconds)
        self.store = store
        let state = configurationState
        let hub = self.hub
        let cards = options.cards
        cardRemoval = CardRemovalPolicy(
            locker: LoginctlLocker(loginctl: options.loginctl), logger: logger,
            settings: { state.value.withLock { ($0.onCardRemoval, $0.lockGraceSeconds) } },
            schedule: CardRemovalPolicy.dispatchSchedule, locate: { serial in cards?.reader(holding: serial) },
            onLocked: { user in hub.publish(user: user, name: "sessionsLocked", fields: []) })
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
            return try Configuration.load(files: options.configFile == nil ? files : [], explicitFile: options.configFile)
        } catch {
            throw DaemonError("configuration: \(error)")
        }
    }

    /// The configuration in force.
    public var configuration: Configuration { configurationState.value.withLock { $0 } }

    /// Whether the daemon is shutting down.
    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Reads the configuration again (`SIGHUP`); a broken file keeps the old settings.
    @discardableResult
    public func reload() -> Bool {
        do {
            let fresh = try Self.loadConfiguration(options)
            configurationState.value.withLock { $0 = fresh }
            budget.setCapacity(Configuration.kibibytes(mebibytes: fresh.daemonKDFMemoryMiB))
            logger.info("configuration reloaded", [("daemon-kdf-memory.mib", String(fresh.daemonKDFMemoryMiB))])
            return true
        } catch {
            logger.error("configuration not reloaded; the old settings stay", [("error", error.description)])
            return false
        }
    }

    // MARK: Listening

    /// Takes the socket systemd passed (`LISTEN_FDS`), or binds `options.socketPath` (mode 0666: every user
    /// may connect; the peer check decides what they may do).
    public func listen() throws(DaemonError) {
        if let fd = Self.activationSocket() {
            listenFD.store(fd, ordering: .releasing)
            logger.info("listening on the socket systemd passed", [("fd", String(fd))])
            return
        }
        let path = options.socketPath
        // Not NSString's deletingLastPathComponent: on Linux it traps on a one-character relative path.
        let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        if !parent.isEmpty && !FileManager.default.fileExists(atPath: parent) {
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o755])
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw DaemonError("\(path) exists and is not a socket") }
            if (try? LineChannel.connect(path: path)) != nil { throw DaemonError("another tokenpind answers on \(path)") }
            unlink(path)
        }
        let socket: FileDescriptor
        do {
            socket = try UnixSocket.listen(path: path, mode: 0o666, backlog: 128)
        } catch {
            if error == .nameTooLong { throw DaemonError("the socket path is too long: \(path)") }
            throw DaemonError("cannot listen on \(path): \(error)")
        }
        let fd = socket.release()
        listenFD.store(fd, ordering: .releasing)
        bound.store(true, ordering: .releasing)
        logger.info("listening", [("socket", path)])
    }

    /// Whether the daemon bound `options.socketPath` itself (and removes it at exit).
    public var boundSocketPath: Bool { bound.load(ordering: .acquiring) }

    /// The first socket passed by systemd socket activation, or nil.
    static func activationSocket() -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        let fd: Int32 = 3  // SD_LISTEN_FDS_START
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Accepts connections until `beginShutdown`, starting a thread for each (and the reader watcher).
    public func serve() {
        if options.watchReaders {
            ReaderWatcher(hub: hub, cardRemoval: cardRemoval, logger: logger) { [self] in isDraining }.start()
        }
        let fd = listenFD.load(ordering: .acquiring)
        while !isDraining {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 200) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            Self.limitWrites(socket: client, milliseconds: options.sendTimeoutMilliseconds)
            guard let peer = Peer.of(socket: client) else {
                close(client)
                continue
            }
            guard connections.open(uid: peer.uid) else {
                let channel = LineChannel(fd: client)
                try? channel.send(ProtocolError(.busy, "too many connections; try again").message)
                logger.warning("connection refused: limit reached", [("peer.uid", String(peer.uid))])
                continue
            }
            let thread = Thread { [self] in
                defer { connections.close(uid: peer.uid) }
                serveConnection(fd: client, peer: peer)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        close(fd)
    }

    /// Bounds every write to `fd`: a peer that stops reading makes a write fail after `milliseconds`, so no reply
    /// or prompt can block a thread (and what it holds) for longer.
    ///
    /// The corresponding C function is `setsockopt(SO_SNDTIMEO)`.
    static func limitWrites(socket fd: Int32, milliseconds: Int) {
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Stops accepting; idle connections close and prompts are abandoned; running operations finish.
    public func beginShutdown() {
        draining.store(true, ordering: .releasing)
    }

    /// Waits until no operation runs (at most `seconds`); true when none does.
    public func waitForOperations(seconds: Double) -> Bool {
        operations.waitForZero(seconds: seconds)
    }

    /// Operations running now.
    public var operationsInFlight: Int { operations.count }

    // MARK: Connections

    /// Serves one connection: requests one after another, each answered with a `result` or an `error`.
    ///
    /// A malformed, oversized or half-finished request, a rate-limit breach or a silent peer gets an `error`
    /// and the connection closes; other clients are not affected.
    public func serveConnection(fd: Int32, peer: Peer) {
        let channel = LineChannel(fd: fd)
        let configuration = self.configuration
        var limiter = RateLimiter(limit: configuration.daemonRequestsPerMinute, windowNanoseconds: 60_000_000_000)
        let idle = Int32(clamping: min(configuration.daemonIdleTimeoutSeconds, 86_400) * 1000)
        while !isDraining {
            var line: [UInt8]
            do {
                line = try channel.readLine(timeoutMilliseconds: idle, deadline: { [self] in isDraining })
            } catch {
                if error.code != .closed && error.code != .busy {
                    logger.info("connection closed on a protocol error",
                                [("peer.uid", String(peer.uid)), ("error", error.code.rawValue)])
                    try? channel.send(error.message)
                }
                return
            }
            var message: ClientMessage
            do {
                message = try ClientMessage.parse(line)
                wipe(&line)
            } catch {
                wipe(&line)
                logger.info("malformed request", [("peer.uid", String(peer.uid)), ("error", error.code.rawValue)])
                try? channel.send(error.message)
                return
            }
            guard case .request(let request) = message else {
                if case .secret(_, var value) = message {
                    message = .cancel
                    wipe(&value)
                }
                try? channel.send(ProtocolError(.unexpected, "expected a request").message)
                return
            }
            guard limiter.allow(now: DispatchTime.now().uptimeNanoseconds) else {
                try? channel.send(ProtocolError(.rateLimited, "too many requests on this connection").message)
                return
            }
            if request.operation == .watch {
                watch(channel: channel, peer: peer, request: request)
                return
            }
            guard perform(request, channel: channel, peer: peer) else { return }
        }
    }

    /// `watch`: registers the subscriber and holds the connection until the client closes it.
    func watch(channel: LineChannel, peer: Peer, request: Request) {
        let filter: String?
        switch Authorization.target(peer: peer, requested: request.user) {
        case .success(let user): filter = (peer.isRoot && request.user == nil) ? nil : user
        case .failure(let error):
            try? channel.send(error.protocolMessage)
            return
        }
        let id = hub.add(peer: peer, filter: filter, fd: channel.fd)
        defer { hub.remove(id) }
        try? channel.send(ServerMessage.result(exitCode: 0, fields: [JSONMember("watching", .text(filter ?? "*"))]))
        while !isDraining {
            do {
                var line = try channel.readLine(timeoutMilliseconds: -1, deadline: { [self] in isDraining })
                wipe(&line)
            } catch {
                return
            }
        }
    }

    /// Runs one request; false when the connection must close (the client broke the protocol or left).
    ///
    /// The order is fixed, so no two operations can wait for each other in a cycle: the login password (when
    /// the operation creates a first way in), then the user's lock (bounded wait), then inside the service the
    /// record's `flock`, then key-derivation memory around each derivation only. The lock is given back before
    /// the reply is written, and writes are bounded by the send timeout, so a client that does not read holds
    /// nothing that anyone else needs.
    func perform(_ request: Request, channel: LineChannel, peer: Peer) -> Bool {
        let configuration = self.configuration
        let user: String
        switch Authorization.target(peer: peer, requested: request.user) {
        case .success(let target): user = target
        case .failure(let error):
            logger.warning("refused", [("peer.uid", String(peer.uid)), ("op", request.operation.rawValue)])
            return (try? channel.send(error.protocolMessage)) != nil
        }
        operations.increment()
        defer { operations.decrement() }
        let relay = RelayInteraction(channel: channel, daemon: self, user: user,
                                     promptTimeoutSeconds: configuration.daemonPromptTimeoutSeconds,
                                     newPINAttempts: min(max(1, request.newPINAttempts ?? 1), 5))
        let selection = CardSelection(reader: request.reader ?? configuration.reader, serial: request.serial)
        var service = PINService(store: store, configuration: configuration, user: user, logger: logger,
                                 cards: options.cards, selection: selection)
        let waitSeconds = Double(configuration.daemonWaitTimeoutSeconds)
        service.derivationGate = BudgetGate(budget: budget, waitSeconds: waitSeconds,
                                            capacityMiB: configuration.daemonKDFMemoryMiB)
        // A root daemon must not lend its pcscd rights: a user reaches only the card bound to their own record.
        service.cardScope = peer.isRoot ? .any : .boundCardOnly
        logger.debug("request", [("peer.uid", String(peer.uid)), ("user", user), ("op", request.operation.rawValue)])
        var reply: Reply?
        var error: ServiceError?
        var locked = false
        do throws(ServiceError) {
            if request.operation.createsFirstWayIn {
                try checkFirstWayIn(peer: peer, user: user, relay: relay, configuration: configuration)
            }
            if request.operation.needsUserLock {
                guard userLocks.lock(user, waitingAtMost: waitSeconds) else {
                    throw .busy("another operation for \(user) is running")
                }
                locked = true
            }
            reply = try execute(request, service: service, relay: relay, configuration: configuration)
        } catch let caught {
            error = caught
        }
        // Everything is given back before the client is written to: the reply waits for no one.
        if locked { userLocks.unlock(user) }
        if let failure = relay.failure {
            if failure.code != .closed && failure.code != .truncated && failure.code != .io {
                try? channel.send(failure.message)
            }
            if var unsent = reply.take() { unsent.wipe() }
            return false
        }
        if var reply = reply.take() {
            let sent = (try? channel.write(reply.line)) != nil
            reply.wipe()
            return sent
        }
        guard let error else { return true }
        return (try? channel.send(error.protocolMessage)) != nil
    }

    /// `enrol` and `import` create a first way in: a user (not root) proves who they are with their login password
    /// first (`enrol-auth = password`), before any lock is taken. An existing record is refused before the password
    /// is asked (the operation checks again under the lock).
    func checkFirstWayIn(peer: Peer, user: String, relay: RelayInteraction,
                         configuration: Configuration) throws(ServiceError) {
        guard !peer.isRoot, configuration.enrolAuth == .password else { return }
        let existing: EnrolmentRecord?
        do {
            existing = try store.load(user: user)
        } catch {
            throw .store(error)
        }
        if existing != nil { throw .alreadyEnrolled(user: user, path: store.recordPath(for: user)) }
        let check = LoginPasswordCheck(service: configuration.enrolPAMService)
        do {
            try check.verify(user: user, relay)
        } catch {
            if case .passwordRejected = error {
                logger.warning("login password refused before enrolment", [("user", user)])
                hub.publish(user: user, name: "passwordRejected", fields: [])
            }
            throw error
        }
        logger.info("login password checked before enrolment", [("user", user)])
    }

    /// Runs the operation and builds the final message.
    func execute(_ request: Request, service: PINService, relay: RelayInteraction,
                 configuration: Configuration) throws(ServiceError) -> Reply {
        let user = service.user
        switch request.operation {
        case .ping:
            return Reply(.result(exitCode: 0, fields: [JSONMember("version", .int(ProtocolLimits.version))]))
        case .enrol:
            let result = try service.enrol(relay)
            return Reply.enrolment(result)
        case .verify:
            let report = try service.verify(relay, method: request.method)
            publishOutcome(report, user: user, success: nil)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .change:
            let report = try service.change(relay)
            publishOutcome(report, user: user, success: .changed)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .reset:
            let report = try service.reset(relay)
            publishOutcome(report, user: user, success: .reset)
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields))
        case .status:
            let report = try service.status()
            return Reply(.result(exitCode: 0, fields: [JSONMember("status", report.protocolValue)]))
        case .types:
            let types = try service.types()
            return Reply(.result(exitCode: 0, fields: [JSONMember("types", TypeStatus.protocolValue(types))]))
        case .toggle:
            guard request.authenticationType == .token else {
                try service.togglePIN(on: request.on ?? true)
                return Reply(.result(exitCode: 0, fields: [JSONMember("authType", .text("pin")), JSONMember("enabled", .bool(true))]))
            }
            let on = request.on ?? true
            let report = on
                ? try service.enableToken(relay, generateKey: request.generateKey ?? false, assumeYes: request.assumeYes ?? false,
                                          mode: request.mode)
                : try service.disableToken(relay, method: request.method)
            publishOutcome(report, user: user, success: .typeChanged(type: .token, enabled: on))
            let serial = (try? service.types())?.first { $0.type == .token }?.serial
            return Reply(.result(exitCode: Int(report.exitCode.rawValue), fields: report.protocolFields + [
                JSONMember("authType", .text("token")), JSONMember("enabled", .bool(on)),
                JSONMember("serial", serial.map(JSONValue.text) ?? .null),
            ]))
        case .readers:
            let readers = try service.listReaders()
            return Reply(.result(exitCode: 0, fields: [JSONMember("readers", .array(readers.map(\.protocolValue)))]))
        case .cardChangePIN:
            try service.changeCardPIN(relay)
            return Reply(.result(exitCode: 0, fields: []))
        case .cardUnblock:
            try service.unblockCardPIN(relay, admin: request.admin ?? false)
            return Reply(.result(exitCode: 0, fields: []))
        case .import:
            let path = try importRecord(request.record ?? [], user: user, configuration: configuration)
            return Reply(.result(exitCode: 0, fields: [JSONMember("record", .text(path))]))
        case .watch:
            throw .input("watch is not an operation")
        }
    }

    /// Publishes the outcome of a counted attempt to `watch` subscribers.
    func publishOutcome(_ report: VerifyReport, user: String, success: Event?) {
        let event: Event
        if case .verified = report.outcome, let success { event = success } else { event = report.outcome.event }
        var fields = event.protocolFields
        if case .rejected = report.outcome, let counter = report.counter {
            fields = [JSONMember("remaining", .int(counter.remaining)), JSONMember("lastTry", .bool(counter.remaining == 1))]
        }
        hub.publish(user: user, name: event.name, fields: fields)
        if case .verified(let method) = report.outcome, method == .token || method == .both, let card = report.card {
            cardRemoval.tokenVerified(user: user, serial: card.serial, reader: card.reader)
        }
        if let counter = report.counter, counter.isLocked, report.outcome != .locked {
            hub.publish(user: user, name: "locked", fields: [])
        }
    }

    /// `import`: stores a record the user brings, once: an existing daemon record is never replaced.
    ///
    /// The record must decode, pass the structural checks, belong to `user`, and ask for no more memory than
    /// the budget; its counter is capped at `retries-max`.
    func importRecord(_ bytes: [UInt8], user: String, configuration: Configuration) throws(ServiceError) -> String {
        let path = store.recordPath(for: user)
        var record: EnrolmentRecord
        do {
            record = try RecordStore.decode(Data(bytes), path: "imported record", user: user)
        } catch {
            throw .store(error)
        }
        if let heavy = record.slots.first(where: { !budget.fits($0.kdf.memoryKiB) }) {
            throw .configuration("the record's \(heavy.kind.rawValue) slot needs \(heavy.kdf.memoryKiB / 1024) MiB, more than daemon-kdf-memory")
        }
        if record.counter.max > configuration.retriesMax {
            record.counter.max = configuration.retriesMax
            record.counter.remaining = min(record.counter.remaining, configuration.retriesMax)
        }
        do {
            try store.withLock(user: user) { () throws -> Void in
                if try store.load(user: user) != nil {
                    throw ServiceError.alreadyEnrolled(user: user, path: path)
                }
                try store.save(record)
            }
        } catch let error as ServiceError {
            throw error
        } catch let error as StoreError {
            throw .store(error)
        } catch {
            throw .input("import failed: \(error)")
        }
        logger.info("record imported", [("user", user)])
        hub.publish(user: user, name: "created", fields: [JSONMember("imported", .bool(true))])
        return path
    }
}

/// The final message of an operation; the enrolment's carries the recovery key and is wiped once sent.
struct Reply: ~Copyable {

    private var bytes: [UInt8]

    init(_ message: ServerMessage) { bytes = message.line }

    /// The enrolment result: the recovery key written straight into a reserved buffer, never a `String`.
    static func enrolment(_ result: consuming EnrolmentResult) -> Reply {
        let head = ServerMessage.result(exitCode: 0, fields: [
            JSONMember("event", .text("created")), JSONMember("kdf", result.kdf.protocolValue),
            JSONMember("record", .text(result.recordPath)),
        ]).line
        var line: [UInt8] = []
        line.reserveCapacity(head.count + 32 + result.recoveryKeyText.count * 6)
        line += head.dropLast(2)  // `}` and the newline
        line += Array(",\"recoveryKey\":".utf8)
        var raw = result.recoveryKeyText.withUnsafeBytes { [UInt8]($0) }
        JSONValue.quote(raw, into: &line)
        TokenpinCore.wipe(&raw)
        line += Array("}\n".utf8)
        return Reply(bytes: line)
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    var line: [UInt8] { bytes }

    mutating func wipe() {
        TokenpinCore.wipe(&bytes)
    }
}

/// The configuration in force, shared with the closures that read it (`SIGHUP` replaces it).
final class ConfigurationBox: Sendable {
    let value: Mutex<Configuration>

    init(_ configuration: Configuration) { value = Mutex(configuration) }
}

/// Counts running operations, so shutdown can wait for them.
final class OperationCounter: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only while `condition` is locked.
    private let condition = NSCondition()
    private var value = 0

    func increment() {
        condition.lock()
        value += 1
        condition.unlock()
    }

    func decrement() {
        condition.lock()
        value -= 1
        condition.broadcast()
        condition.unlock()
    }

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    func waitForZero(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while value > 0 {
            if !condition.wait(until: deadline) { return value == 0 }
        }
        return true
    }
}

extension TokenpinProtocol.Operation {
    /// Whether the operation reads and writes the user's record, so runs under the user's lock.
    var needsUserLock: Bool {
        switch self {
        case .enrol, .verify, .change, .reset, .toggle, .import, .cardChangePIN, .cardUnblock: true
        case .ping, .status, .types, .readers, .watch: false
        }
    }

    /// Whether the operation creates a first way in for a user who has none (`enrol`, `import`).
    var createsFirstWayIn: Bool { self == .enrol || self == .import }
}
