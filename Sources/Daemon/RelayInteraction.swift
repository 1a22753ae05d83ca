import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// The `Interaction` of an operation run for a client: prompts and questions go back over the socket, answers
/// come in, events go out to the client and to `watch` subscribers.
///
/// It is only a channel: it takes no lock and no memory. The daemon takes the user's lock before the operation
/// starts, and the service takes key-derivation memory around each derivation, never across a prompt. Every
/// write is bounded by the socket's send timeout; after the first failed write nothing more is sent, so a client
/// that stops reading costs at most one timeout.
final class RelayInteraction: Interaction {
    let channel: LineChannel
    let daemon: Daemon
    let user: String
    let promptTimeoutMilliseconds: Int32
    let newPINAttempts: Int
    /// The protocol error that ended the exchange, if the client broke the protocol or went away.
    private(set) var failure: ProtocolError?

    init(channel: LineChannel, daemon: Daemon, user: String, promptTimeoutSeconds: Int, newPINAttempts: Int) {
        self.channel = channel
        self.daemon = daemon
        self.user = user
        self.promptTimeoutMilliseconds = Int32(clamping: min(max(0, promptTimeoutSeconds), 86_400) * 1000)
        self.newPINAttempts = newPINAttempts
    }

    /// Writes `message`; the first failure ends the exchange and later writes are skipped.
    private func send(_ message: ServerMessage) throws(ServiceError) {
        guard failure == nil else { throw .cancelled }
        do {
            try channel.send(message)
        } catch {
            failure = error
            throw .cancelled
        }
    }

    /// Reads the client's next message; any failure ends the exchange as a cancellation.
    private func nextMessage() throws(ServiceError) -> ClientMessage {
        do {
            var line = try channel.readLine(
                timeoutMilliseconds: promptTimeoutMilliseconds,
                deadline: { [daemon] in daemon.isDraining })
            defer { wipe(&line) }
            return try ClientMessage.parse(line)
        } catch {
            failure = error
            throw .cancelled
        }
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        try ask(prompt, prompt.message)
    }

    /// The PIN prompt carries the tries left, so the PAM module can say "last try" before asking.
    func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes {
        try ask(prompt, .prompt(name: prompt.name, card: nil, triesLeft: remaining))
    }

    /// Sends `message` for `prompt` and reads the answer to it.
    private func ask(_ prompt: SecretPrompt, _ message: ServerMessage) throws(ServiceError) -> SecretBytes {
        guard !daemon.isDraining else {
            failure = ProtocolError(.busy, "the daemon is shutting down")
            throw .cancelled
        }
        try send(message)
        var answer = try nextMessage()
        switch answer {
        case .secret(let name, var value) where name == prompt.name:
            answer = .cancel  // drop the enum's reference so `value` is the only one and is wiped in place
            // An empty answer is never a try, whoever sends it: it cancels, as Enter alone does at every client.
            guard !value.isEmpty else { throw .cancelled }
            return SecretBytes(consuming: &value)
        case .secret(_, var value):
            answer = .cancel
            wipe(&value)
            failure = ProtocolError(.unexpected, "the answer is for another prompt than \(prompt.name)")
            throw .cancelled
        case .cancel:
            throw .cancelled
        default:
            failure = ProtocolError(.unexpected, "expected an answer to the \(prompt.name) prompt")
            throw .cancelled
        }
    }

    /// Several cards and none named: the choice goes to the client, which asks as local mode does (a script, which
    /// cannot, answers `cancel` after saying to name one with `--reader` or `--serial`).
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        let offered = Array(options.prefix(ProtocolLimits.maximumChoices))
        try send(ServerMessage.choice(question, options: offered))
        switch try nextMessage() {
        case .choice(let index) where offered.indices.contains(index):
            return index
        case .cancel:
            throw .cancelled
        default:
            failure = ProtocolError(.unexpected, "expected the index of one of the options")
            throw .cancelled
        }
    }

    func confirm(_ question: String) throws(ServiceError) -> Bool {
        try answer(to: ServerMessage.question(question))
    }

    /// Relayed like other questions: the client shows it and answers yes only when the word was typed there.
    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        try answer(to: ServerMessage.question(question, typed: word))
    }

    private func answer(to question: ServerMessage) throws(ServiceError) -> Bool {
        try send(question)
        switch try nextMessage() {
        case .confirm(let answer):
            return answer
        case .cancel:
            throw .cancelled
        default:
            failure = ProtocolError(.unexpected, "expected an answer to the question")
            throw .cancelled
        }
    }

    func report(_ event: Event) {
        try? send(ServerMessage.event(name: event.name, fields: event.protocolFields))
        daemon.hub.publish(user: user, name: event.name, fields: event.protocolFields)
        if case .tokenFailed(let reason, let fallback, let tries) = event {
            // A card PIN the card refused counts on the card: the site's log must show it.
            daemon.logger.warning(
                "token not used",
                [
                    ("user", user), ("reason", reason), ("fallback", fallback ? "pin" : "none"),
                    ("card.triesLeft", tries.map(String.init) ?? "unknown"),
                ])
        }
    }
}

/// The daemon's `DerivationGate`: the shared Argon2id memory budget, with a bounded wait.
struct BudgetGate: DerivationGate {
    let budget: MemoryBudget
    /// The longest a derivation waits for memory before the operation answers `busy`.
    let waitSeconds: Double
    /// `daemon-kdf-memory`, for the message when a derivation can never fit.
    let capacityMiB: Int

    func withMemory<R: ~Copyable>(kibibytes: Int, _ body: () throws -> R) throws -> R {
        guard budget.fits(kibibytes) else {
            throw ServiceError.configuration(
                "the key derivation needs \(kibibytes / 1024) MiB, more than daemon-kdf-memory (\(capacityMiB) MiB)")
        }
        guard budget.acquire(kibibytes, waitingAtMost: waitSeconds) else {
            throw ServiceError.busy("no key-derivation memory came free within \(Int(waitSeconds)) s")
        }
        defer { budget.release(kibibytes) }
        return try body()
    }
}
