import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// Where a command's operations run: in this process on a local store, or in tokenpind. Decided once, from the
/// command line and the machine, before anything is asked.
///
/// A flag that names a local resource (`--store`/`--state-dir`, `--reader sim`) means local mode; one that names
/// tokenpind (`--socket`, `--user`) means the daemon; both at once is a usage error naming `--local`. No flag is
/// dropped: a `--config` file that sets what only a local store uses is refused through the daemon. When tokenpind
/// should run here (its unit or package is installed) and its socket is missing, operations say so (exit 69)
/// instead of going local, where the user's record is not.
enum Backend: Equatable {
    /// In this process, on the store directory; the reason is the flag that asked for it, or nil when nothing
    /// says tokenpind runs on this machine.
    case local(reason: String?)
    /// tokenpind, on this socket.
    case daemon(socket: String)
    /// tokenpind should run here (`evidence`: the unit or package file found) but nothing listens on `socket`.
    case unreachable(socket: String, evidence: String)

    var isLocal: Bool { if case .local = self { true } else { false } }

    /// How `status` says where the record is served: `through tokenpind (socket …)` or `local (…)`.
    var description: String {
        switch self {
        case .local(let reason?): "local (\(reason)): the record is in this user's store, not in tokenpind"
        case .local(nil): "local: no tokenpind on this machine, the record is in this user's store"
        case .daemon(let socket): "through tokenpind (socket \(socket))"
        case .unreachable(let socket, _): "tokenpind expected on \(socket), not reachable"
        }
    }

    /// Why an operation cannot run when tokenpind is expected and not reachable.
    static func unreachableMessage(socket: String, evidence: String) -> String {
        "tokenpind is not running: nothing listens on \(socket), though \(evidence) says it runs on this machine "
            + "(records are kept there, not in your own store); start it (`systemctl start tokenpind.socket`, "
            + "or `tokenpind` in the foreground), or add --local to use a record of your own"
    }
}

enum ModeSelection {
    /// The backend for `options`, or the usage error of flags that contradict each other.
    static func decide(_ options: ParsedCommandLine, environment: [String: String]) throws(UsageError) -> Backend {
        let global = options.global
        let command = options.command ?? ""
        let traits = Commands.traits(of: options)
        if traits.contains(.recordless) { return .local(reason: command) }
        var localFlags: [String] = []
        if let store = global.store { localFlags.append("--store \(store)") }
        if global.reader == "sim" {
            localFlags.append("--reader sim")
        } else if global.reader == nil, environment["TOKENPIN_READER"] == "sim" {
            localFlags.append("TOKENPIN_READER=sim")
        }
        var daemonFlags: [String] = []
        if let socket = global.socket { daemonFlags.append("--socket \(socket)") }
        if let user = global.user { daemonFlags.append("--user \(user)") }
        if global.local {
            if let flag = daemonFlags.first(where: { $0.hasPrefix("--socket") }) {
                throw UsageError(
                    message: "--local never talks to tokenpind, and \(flag) names it: give one of them",
                    command: options.command)
            }
            return .local(reason: "--local")
        }
        // `import` reads the local record (`--store` names where) and moves it into tokenpind; `doctor` looks at
        // both: for them a local flag does not choose the mode.
        if !traits.contains(.bothSides), let local = localFlags.first {
            if let daemon = daemonFlags.first {
                throw UsageError(
                    message: "\(local) means local mode, and \(daemon) talks to tokenpind: give one of them "
                        + "(add --local to keep the record in the local store)",
                    command: options.command)
            }
            if command == "watch" {
                throw UsageError(
                    message: "watch prints tokenpind's events, and \(local) names a local resource: drop it "
                        + "(there is no local mode to watch)",
                    command: options.command)
            }
            return .local(reason: local)
        }
        let socket = global.socket ?? DaemonClient.defaultSocketPath
        let backend: Backend
        if global.socket != nil || DaemonClient.socketExists(at: socket) {
            backend = .daemon(socket: socket)
        } else if let evidence = DaemonClient.expectedDaemonEvidence() {
            backend = .unreachable(socket: socket, evidence: evidence)
        } else {
            return .local(reason: nil)
        }
        // Settings for a local store would be dropped on the way: tokenpind keeps its own.
        if let file = global.config, !traits.contains(.readsConfigurationItself), let entry = storeEntries(file).first {
            throw UsageError(
                message: "\(file) sets \(entry.key) (line \(entry.line)), which tokenpind does not take from its "
                    + "clients: add --local to use the file with a local store, or keep only colours, prompts and "
                    + "`reader` in it",
                command: options.command)
        }
        return backend
    }

    /// The lines of `file` that set something only a local store uses (a file that cannot be read has none here:
    /// loading the configuration reports it).
    static func storeEntries(_ file: String) -> [Configuration.Entry] {
        ((try? Configuration.entries(file: file)) ?? []).filter { !Configuration.clientKeys.contains($0.key) }
    }
}

/// The operations when tokenpind should run here and does not: each says so (exit 69) instead of going local.
struct UnreachableDaemon: PINBackend {
    let socket: String
    let evidence: String

    var error: ServiceError { .serviceUnavailable(Backend.unreachableMessage(socket: socket, evidence: evidence)) }

    /// Every performable operation (`status`, `types`, `readers`...) says so too.
    func perform<Performed: PerformableOperation>(_ operation: Performed, _ interaction: some Interaction)
        throws(ServiceError) -> Performed.Outcome
    { throw error }
    func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult { throw error }
    func verify(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError) -> VerifyReport {
        throw error
    }
    func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport { throw error }
    func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport { throw error }
    func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) { throw error }
    func enableToken(
        _ interaction: some Interaction, generateKey: Bool, assumeYes: Bool, mode: VerificationMode?, slot: String?
    ) throws(ServiceError) -> VerifyReport { throw error }
    func disableToken(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError)
        -> VerifyReport
    { throw error }
    func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) { throw error }
    func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) { throw error }
    func unenrol(_ interaction: some Interaction, method: VerificationMethod?, administrator: Bool)
        throws(ServiceError) -> VerifyReport
    { throw error }
    func administratorReset(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult { throw error }
}
