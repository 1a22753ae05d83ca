import FoundationEssentials
import TokenpinCore
import TokenpinService

#if canImport(Glibc)
    import Glibc
#endif

/// A service event or a reader/card event, as `watch` streams them.
public struct WatchedEvent: Sendable, Equatable {
    /// The event name (`verified`, `wrongPIN`, `locked`, `readerAdded`, ...).
    public var name: String
    /// The user it concerns, when it concerns one.
    public var user: String?
    /// All fields of the message (`event` excluded).
    public var fields: [JSONMember]
    /// The service event, when it is one.
    public var event: Event? { Event(name: name, fields: fields) }
    /// The JSON line the CLI prints for it (no newline).
    public var jsonLine: String {
        String(decoding: JSONValue.object([JSONMember("event", .text(name))] + fields).serialized, as: UTF8.self)
    }
}

/// Runs the PIN operations in `tokenpind` over its socket, relaying prompts to a local `Interaction`.
///
/// Mirrors `PINService`: the same operations, the same value types and the same `ServiceError`s, so output and
/// exit codes are the same in both modes. A daemon that cannot be reached is `.serviceUnavailable`. Secrets
/// typed into the interaction cross only the socket; each line that held one is wiped once written.
public struct DaemonClient: Sendable {
    /// The daemon's socket.
    public var socketPath: String
    /// The user to act on (`--user`; only root may name another user); nil for the caller.
    public var user: String?
    /// How long to wait for the daemon's next message, in milliseconds (KDF queues count).
    public var timeoutMilliseconds: Int32
    /// The reader or card the token operations should use (`--reader`, `--serial`).
    public var selection: CardSelection = CardSelection()
    /// Who runs the PAM stack, sent with every request when set (what pam_tokenpin reports; tests speak as it).
    public var invoker: Invoker?
    /// Card PINs at the keyboard even where the reader has a keypad (`--no-pinpad`).
    public var keyboardOnly = false

    /// The default socket.
    public static let defaultSocketPath = "/run/tokenpin/socket"

    /// Creates a client.
    public init(
        socketPath: String = DaemonClient.defaultSocketPath, user: String? = nil,
        timeoutMilliseconds: Int32 = 120_000
    ) {
        self.socketPath = socketPath
        self.user = user
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Whether a daemon socket exists at `path` (the CLI's test for "use the daemon").
    public static func socketExists(at path: String = defaultSocketPath) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    /// Files whose presence says tokenpind is meant to run on this machine: its units, from the package or
    /// `make install`, enabled or not (the package's own are in `/lib/systemd/system`). Debug builds (the tests) read the list from
    /// `TOKENPIN_DAEMON_MARKERS` (colon-separated), so that a test decides without touching the machine.
    public static var daemonMarkers: [String] {
        #if DEBUG
            if let list = getenv("TOKENPIN_DAEMON_MARKERS").map({ String(cString: $0) }) {
                return list.split(separator: ":").map(String.init)
            }
        #endif
        var markers: [String] = []
        for directory in [
            "/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system",
            "/lib/systemd/system",
        ] {
            markers += [directory + "/tokenpind.socket", directory + "/tokenpind.service"]
        }
        return markers
    }

    /// The first marker present (`daemonMarkers`): why a missing socket means tokenpind is down, not absent;
    /// nil when nothing says it should run here.
    public static func expectedDaemonEvidence() -> String? {
        daemonMarkers.first { path in
            var info = stat()
            return stat(path, &info) == 0
        }
    }

    // MARK: Operations

    /// Enrols a PIN; the recovery key comes back in guarded memory.
    public func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        try enrolment(Request(.enrol, user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }

    /// Root's reset without the recovery key (`reset` with `admin`): a new record, its recovery key in guarded
    /// memory.
    public func administratorReset(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        var request = Request(.reset, user: user, newPINAttempts: Self.attempts(interaction))
        request.admin = true
        return try enrolment(request, interaction)
    }

    /// Removes the record after a verification, or as root (`administrator`) without one.
    public func unenrol(_ interaction: some Interaction, method: VerificationMethod?, administrator: Bool)
        throws(ServiceError) -> VerifyReport
    {
        var request = selected(Request(.unenrol, user: user))
        request.method = method
        if administrator { request.admin = true }
        return try report(request, interaction)
    }

    /// Runs `request`, whose result carries a new record's recovery key (`enrol`, root's `reset`).
    func enrolment(_ request: Request, _ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        var fields = try run(request, interaction)
        let kdf = KDFParameters(protocolValue: JSONValue.object(fields)["kdf"])
        let recordPath = JSONValue.object(fields)["record"]?.stringValue ?? ""
        guard let index = fields.firstIndex(where: { $0.key == "recoveryKey" }),
            case .string(var key) = fields[index].value,
            let kdf
        else {
            throw .serviceUnavailable("tokenpind sent a malformed enrolment result")
        }
        // Drop every other reference to the key's bytes so that `consuming` wipes them in place.
        fields[index].value = .null
        fields.removeAll()
        let text = SecretBytes(consuming: &key)
        return EnrolmentResult(recoveryKeyText: text, kdf: kdf, recordPath: recordPath)
    }

    /// Verifies: the token first when enabled and present, else the PIN; `method` forces one.
    public func verify(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        var request = selected(Request(.verify, user: user))
        request.method = method
        return try report(request, interaction)
    }

    /// Changes the PIN.
    public func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try report(Request(.change, user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }

    /// Resets the PIN with the recovery key.
    public func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try report(Request(.reset, user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }

    /// The record's state.
    public func status() throws(ServiceError) -> StatusReport {
        let fields = try run(Request(.status, user: user), NoInteraction())
        do {
            return try StatusReport(protocolValue: JSONValue.object(fields)["status"])
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed status: \(error.detail)")
        }
    }

    /// The authentication types.
    public func types() throws(ServiceError) -> [TypeStatus] {
        let fields = try run(Request(.types, user: user), NoInteraction())
        do {
            return try TypeStatus.list(protocolValue: JSONValue.object(fields)["types"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed types: \(error.detail)")
        }
    }

    /// Switches the PIN type on (`toggle pin off` is refused as in local mode).
    public func toggle(_ type: AuthenticationType, on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        _ = try run(selected(Request(.toggle, user: user, authenticationType: type, on: on)), interaction)
    }

    /// `toggle token on`: binds the card present, with the daemon asking the PIN, admin PIN and card PIN here.
    public func enableToken(
        _ interaction: some Interaction, generateKey: Bool = false, assumeYes: Bool = false,
        mode: VerificationMode? = nil, slot: String? = nil
    ) throws(ServiceError) -> VerifyReport {
        var request = selected(Request(.toggle, user: user, authenticationType: .token, on: true))
        request.generateKey = generateKey
        request.assumeYes = assumeYes
        request.mode = mode
        request.slot = slot
        return try report(request, interaction)
    }

    /// `toggle token off`, after the PIN (`method` nil or `.pin`) or the card (`.token`) verified.
    public func disableToken(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        var request = selected(Request(.toggle, user: user, authenticationType: .token, on: false))
        request.method = method
        return try report(request, interaction)
    }

    /// The readers the daemon sees and the card in each.
    public func listReaders() throws(ServiceError) -> [ReaderInfo] {
        let fields = try run(selected(Request(.readers, user: user)), NoInteraction())
        do {
            return try ReaderInfo.list(protocolValue: JSONValue.object(fields)["readers"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed readers: \(error.detail)")
        }
    }

    /// `tokenpin token change-pin` through the daemon.
    public func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) {
        _ = try run(selected(Request(.cardChangePIN, user: user)), interaction)
    }

    /// `tokenpin token unblock [--admin]` through the daemon.
    public func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) {
        var request = selected(Request(.cardUnblock, user: user))
        request.admin = admin
        _ = try run(request, interaction)
    }

    func selected(_ request: Request) -> Request {
        var request = request
        request.reader = selection.reader
        request.serial = selection.serial
        request.application = selection.application
        request.tokenURI = selection.tokenURI
        if keyboardOnly { request.pinpad = false }
        return request
    }

    /// Moves a local record (its file's bytes) into the daemon's store; refuses when the daemon has one.
    ///
    /// Returns the record's path on the daemon's side.
    public func importRecord(_ bytes: [UInt8]) throws(ServiceError) -> String {
        try importRecord(bytes, NoInteraction())
    }

    /// `importRecord`, answering the daemon's prompt for the login password (a user's first record) through
    /// `interaction`.
    public func importRecord(_ bytes: [UInt8], _ interaction: some Interaction) throws(ServiceError) -> String {
        let fields = try run(Request(.import, user: user, record: bytes), interaction)
        return JSONValue.object(fields)["record"]?.stringValue ?? ""
    }

    /// The protocol version the daemon speaks.
    public func ping() throws(ServiceError) -> Int {
        let fields = try run(Request(.ping), NoInteraction())
        return JSONValue.object(fields)["version"]?.intValue ?? 0
    }

    /// Streams events to `handler` until it returns false or the daemon closes; a user sees their own events,
    /// root sees everyone's.
    ///
    /// `onSubscribed` is called once, when the daemon confirms the subscription, with whose events it sends: a user
    /// name, or nil for every user (root without `user`). Every event after that point reaches `handler`, so a
    /// caller that waits for it misses none (an event from before it may arrive too, ahead of it).
    public func watch(
        _ handler: (WatchedEvent) -> Bool, onSubscribed: (_ user: String?) -> Void = { _ in }
    ) throws(ServiceError) {
        let channel = try connect()
        do {
            try channel.send(ClientMessage.request(Request(.watch, user: user)))
            var subscribed = false
            while true {
                let line = try channel.readLine(timeoutMilliseconds: -1)
                switch try ServerMessage.parse(line) {
                case .event(let name, let fields):
                    let event = WatchedEvent(
                        name: name, user: JSONValue.object(fields)["user"]?.stringValue,
                        fields: fields)
                    if !handler(event) { return }
                case .result(_, let fields) where !subscribed:
                    subscribed = true
                    let scope = JSONValue.object(fields)["watching"]?.stringValue
                    onSubscribed(scope == "*" ? nil : scope)
                case .error(let code, let message, _, let fields):
                    throw ServiceError(protocolCode: code, message: message, fields: fields)
                case .result, .prompt, .question, .choice:
                    continue
                }
            }
        } catch let error as ProtocolError {
            if error.code == .closed { return }
            throw .serviceUnavailable("tokenpind: \(error.detail)")
        } catch let error as ServiceError {
            throw error
        } catch {
            throw .serviceUnavailable("tokenpind: \(error)")
        }
    }

    // MARK: The exchange

    static func attempts(_ interaction: some Interaction) -> Int { min(5, max(1, interaction.newPINAttempts)) }

    func report(_ request: Request, _ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        let fields = try run(request, interaction)
        do {
            return try VerifyReport(protocolFields: fields)
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed result: \(error.detail)")
        }
    }

    func connect() throws(ServiceError) -> LineChannel {
        do {
            return try LineChannel.connect(path: socketPath)
        } catch {
            throw .serviceUnavailable(
                "tokenpind is not reachable: \(error.detail); start it (systemctl start tokenpind) or use --local")
        }
    }

    /// Sends `request`, answers prompts and questions through `interaction`, passes events on, and returns the
    /// result's fields or throws the error the daemon sent.
    func run(_ request: Request, _ interaction: some Interaction) throws(ServiceError) -> [JSONMember] {
        let channel = try connect()
        // A prompt this side could not answer (standard input ended, no terminal, the person cancelled): the
        // daemon is told `cancel` and answers `cancelled`, but the reason the user sees is this side's own.
        var localFailure: ServiceError?
        var request = request
        if request.invoker == nil { request.invoker = invoker }
        do {
            try channel.send(ClientMessage.request(request))
            while true {
                var line = try channel.readLine(timeoutMilliseconds: timeoutMilliseconds)
                let message = try ServerMessage.parse(line)
                wipe(&line)
                switch message {
                case .prompt(let name, let card, let triesLeft):
                    guard let prompt = SecretPrompt(name: name, card: card, triesLeft: triesLeft) else {
                        try channel.send(ClientMessage.cancel)
                        continue
                    }
                    let secret: SecretBytes
                    do {
                        // The PIN prompts carry the tries left before this attempt: the person sees them.
                        if let triesLeft, prompt == .pin || prompt == .currentPIN {
                            secret = try interaction.readPIN(prompt, remaining: triesLeft)
                        } else {
                            secret = try interaction.readSecret(prompt)
                        }
                    } catch {
                        localFailure = localFailure ?? error
                        try channel.send(ClientMessage.cancel)
                        continue
                    }
                    try channel.sendSecret(prompt: name, secret)
                case .choice(let text, let options):
                    do {
                        try channel.send(ClientMessage.choice(try interaction.choose(text, options: options)))
                    } catch let error as ServiceError {
                        localFailure = localFailure ?? error
                        try channel.send(ClientMessage.cancel)
                    }
                case .question(let text, nil):
                    let answer = (try? interaction.confirm(text)) ?? false
                    try channel.send(ClientMessage.confirm(answer))
                case .question(let text, let word?):
                    // A key about to be replaced: the same typed confirmation as in local mode, and the same error
                    // (naming --yes) when this side cannot ask.
                    do {
                        try channel.send(ClientMessage.confirm(try interaction.confirmTyped(text, word: word)))
                    } catch let error as ServiceError {
                        localFailure = localFailure ?? error
                        try channel.send(ClientMessage.cancel)
                    }
                case .event(let name, let fields):
                    if let event = Event(name: name, fields: fields) { interaction.report(event) }
                case .result(_, let fields):
                    return fields
                case .error(let code, let message, _, let fields):
                    let remote = ServiceError(protocolCode: code, message: message, fields: fields)
                    if remote == .cancelled, let localFailure { throw localFailure }
                    throw remote
                }
            }
        } catch let error as ServiceError {
            throw error
        } catch let error as ProtocolError {
            throw .serviceUnavailable("tokenpind: \(error.detail)")
        } catch {
            throw .serviceUnavailable("tokenpind: \(error)")
        }
    }
}

/// The interaction of operations that ask nothing.
struct NoInteraction: Interaction {
    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes { throw .cancelled }
    func report(_ event: Event) {}
    func confirm(_ question: String) throws(ServiceError) -> Bool { false }
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int { throw .cancelled }
    var newPINAttempts: Int { 1 }
}

extension DaemonClient: PINOperations {
    public func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        try toggle(.pin, on: on, interaction)
    }
}
