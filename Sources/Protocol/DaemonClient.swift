import FoundationEssentials
internal import TokenpinCore
package import TokenpinService
internal import TokenpinSystem

/// Runs the PIN operations in `tokenpind` over its socket, relaying prompts to a local `Interaction`.
///
/// Mirrors `PINService`: the same operations, the same value types and the same `ServiceError`s, so output and
/// exit codes are the same in both modes. A daemon that cannot be reached is `.serviceUnavailable`. Secrets
/// typed into the interaction cross only the socket; each line that held one is wiped once written.
package struct DaemonClient: Sendable {
    /// The daemon's socket.
    package var socketPath: String
    /// The user to act on (`--user`; only root may name another user); nil for the caller.
    package var user: String?
    /// How long to wait for the daemon's next message, in milliseconds (KDF queues count).
    package var timeoutMilliseconds: Int32
    /// The reader or card the token operations should use (`--reader`, `--serial`).
    package var selection: CardSelection = CardSelection()
    /// Who runs the PAM stack, sent with every request when set (what pam_tokenpin reports; tests speak as it).
    package var invoker: Invoker?
    /// Card PINs at the keyboard even where the reader has a keypad (`--no-pinpad`).
    package var keyboardOnly = false

    /// The default socket.
    package static let defaultSocketPath = "/run/tokenpin/socket"

    /// Creates a client.
    package init(
        socketPath: String = DaemonClient.defaultSocketPath, user: String? = nil,
        timeoutMilliseconds: Int32 = 120_000
    ) {
        self.socketPath = socketPath
        self.user = user
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Whether a daemon socket exists at `path` (the CLI's test for "use the daemon").
    package static func socketExists(at path: String = defaultSocketPath) -> Bool {
        Paths.isSocket(path)
    }

    /// Files whose presence says tokenpind is meant to run on this machine: its units, from the package or
    /// `make install`, enabled or not (the package's own are in `/lib/systemd/system`). Debug builds (the tests) read the list from
    /// `TOKENPIN_DAEMON_MARKERS` (colon-separated), so that a test decides without touching the machine.
    package static var daemonMarkers: [String] {
        #if DEBUG
            if let list = CurrentProcess.environmentValue("TOKENPIN_DAEMON_MARKERS") {
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
    package static func expectedDaemonEvidence() -> String? {
        daemonMarkers.first { Paths.exists($0) }
    }

    // MARK: The exchange

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

    /// `request` with the card selection and the keypad choice of this client.
    func selected(_ request: Request) -> Request {
        var request = request
        request.reader = selection.reader
        request.serial = selection.serial
        request.application = selection.application
        request.tokenURI = selection.tokenURI
        if keyboardOnly { request.pinpad = false }
        return request
    }

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
        var relay = PromptRelay(channel: channel, interaction: interaction)
        var request = request
        if request.invoker == nil { request.invoker = invoker }
        do {
            try channel.send(ClientMessage.request(request))
            while true {
                var line = try channel.readLine(timeoutMilliseconds: timeoutMilliseconds)
                // A result may carry a recovery or application key: the line is wiped whether or not it parses.
                defer { wipe(&line) }
                let message = try ServerMessage.parse(line)
                if let ending = try relay.answer(message) { return try ending.get() }
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

/// `DaemonClient.run`'s side of one exchange: answers the daemon's prompts, questions and choices through a local
/// `Interaction` and passes its events on, until the daemon sends a result or an error.
///
/// A secret read through the interaction goes out through `LineChannel.sendSecret` alone, never copied, and is wiped
/// when sent. A prompt this side could not answer (standard input ended, no terminal, the person cancelled) is
/// answered `cancel`: the daemon then ends with `cancelled`, but the reason the user sees is this side's own, the
/// first such failure.
private struct PromptRelay<Local: Interaction> {
    /// The connection to the daemon.
    let channel: LineChannel
    /// Where prompts, questions and choices are answered and events reported.
    let interaction: Local
    /// The first prompt this side could not answer, and why.
    private var localFailure: ServiceError?

    init(channel: LineChannel, interaction: Local) {
        self.channel = channel
        self.interaction = interaction
    }

    /// Answers `message`: nil while the exchange goes on, else how it ended, with the result's fields or the error
    /// to throw (the first local failure in place of the daemon's `cancelled`).
    mutating func answer(_ message: ServerMessage) throws(ProtocolError) -> Result<[JSONMember], ServiceError>? {
        switch message {
        case .prompt(let name, let card, let triesLeft):
            try answerPrompt(name, card: card, triesLeft: triesLeft)
        case .choice(let text, let options):
            try reply { local throws(ServiceError) in .choice(try local.choose(text, options: options)) }
        case .question(let text, nil):
            let answer = (try? interaction.confirm(text)) ?? false
            try channel.send(ClientMessage.confirm(answer))
        case .question(let text, let word?):
            // A key about to be replaced: the same typed confirmation as in local mode, and the same error (naming
            // --yes) when this side cannot ask.
            try reply { local throws(ServiceError) in .confirm(try local.confirmTyped(text, word: word)) }
        case .event(let name, let fields):
            if let event = Event(name: name, fields: fields) { interaction.report(event) }
        case .result(_, let fields):
            return .success(fields)
        case .error(let code, let message, _, let fields):
            let remote = ServiceError(protocolCode: code, message: message, fields: fields)
            if remote == .cancelled, let localFailure { return .failure(localFailure) }
            return .failure(remote)
        }
        return nil
    }

    /// Reads the secret the daemon asks for and sends it; `cancel` for a prompt this side does not know or could not
    /// answer. The secret is wiped once sent.
    private mutating func answerPrompt(_ name: String, card: String?, triesLeft: Int?) throws(ProtocolError) {
        guard let prompt = SecretPrompt(name: name, card: card, triesLeft: triesLeft) else {
            try channel.send(ClientMessage.cancel)
            return
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
            return
        }
        try channel.sendSecret(prompt: name, secret)
    }

    /// Sends the answer `ask` gets from the interaction, or `cancel` when it cannot get one (keeping the first such
    /// failure).
    private mutating func reply(_ ask: (Local) throws(ServiceError) -> ClientMessage) throws(ProtocolError) {
        let answer: ClientMessage
        do {
            answer = try ask(interaction)
        } catch {
            localFailure = localFailure ?? error
            answer = .cancel
        }
        try channel.send(answer)
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
