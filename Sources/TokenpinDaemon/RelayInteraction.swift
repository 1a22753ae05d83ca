import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// The `Interaction` of an operation run for a client: prompts and questions go back over the socket, answers
/// come in, events go out to the client and to `watch` subscribers.
///
/// It also paces the operation: before each prompt it gives back the memory budget (a client slow to answer
/// holds nothing), and when a secret arrives it takes the user's in-process lock (once) and the memory the
/// operation's key derivation needs, in that order, so waiting never deadlocks.
final class RelayInteraction: Interaction {
    let channel: LineChannel
    let daemon: Daemon
    let user: String
    let promptTimeoutMilliseconds: Int32
    let newPINAttempts: Int
    /// The memory the operation's Argon2id work needs, in KiB.
    var weightKiB: Int
    private var holdsBudget = false
    private var holdsUserLock = false
    /// The protocol error that ended the exchange, if the client broke the protocol or went away.
    private(set) var failure: ProtocolError?

    init(channel: LineChannel, daemon: Daemon, user: String, weightKiB: Int, promptTimeoutSeconds: Int,
         newPINAttempts: Int) {
        self.channel = channel
        self.daemon = daemon
        self.user = user
        self.weightKiB = weightKiB
        self.promptTimeoutMilliseconds = Int32(clamping: promptTimeoutSeconds * 1000)
        self.newPINAttempts = newPINAttempts
    }

    /// Takes the user's lock now (operations that ask nothing first, such as `import`).
    func lockUser() {
        guard !holdsUserLock else { return }
        daemon.userLocks.lock(user)
        holdsUserLock = true
    }

    /// Gives back the budget and the user's lock.
    func finish() {
        releaseBudget()
        if holdsUserLock {
            daemon.userLocks.unlock(user)
            holdsUserLock = false
        }
    }

    private func releaseBudget() {
        guard holdsBudget else { return }
        daemon.budget.release(weightKiB)
        holdsBudget = false
    }

    private func acquireBudget() {
        guard !holdsBudget, weightKiB > 0 else { return }
        daemon.budget.acquire(weightKiB)
        holdsBudget = true
    }

    /// Reads the client's next message; any failure ends the exchange as a cancellation.
    private func nextMessage() throws(ServiceError) -> ClientMessage {
        do {
            var line = try channel.readLine(timeoutMilliseconds: promptTimeoutMilliseconds,
                                            deadline: { [daemon] in daemon.isDraining })
            defer { wipe(&line) }
            return try ClientMessage.parse(line)
        } catch {
            failure = error
            throw .cancelled
        }
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        releaseBudget()
        guard !daemon.isDraining else {
            failure = ProtocolError(.busy, "the daemon is shutting down")
            throw .cancelled
        }
        var message = prompt.message
        if prompt == .pin || prompt == .currentPIN, let record = try? daemon.store.load(user: user) {
            // The PIN prompt carries the tries left, so the PAM module can say "last try" before asking.
            message = .prompt(name: prompt.name, card: nil, triesLeft: record.counter.remaining)
        }
        do {
            try channel.send(message)
        } catch {
            failure = error
            throw .cancelled
        }
        var answer = try nextMessage()
        switch answer {
        case .secret(let name, var value) where name == prompt.name:
            answer = .cancel  // drop the enum's reference so `value` is the only one and is wiped in place
            let secret = SecretBytes(consuming: &value)
            lockUser()
            acquireBudget()
            return secret
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

    /// The daemon never asks to choose among cards: the client names one with `--reader` or `--serial`.
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        throw .usage("several cards are present (\(options.joined(separator: "; "))); choose one with --reader or --serial")
    }

    func confirm(_ question: String) throws(ServiceError) -> Bool {
        releaseBudget()
        do {
            try channel.send(ServerMessage.question(question))
        } catch {
            failure = error
            throw .cancelled
        }
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
        try? channel.send(ServerMessage.event(name: event.name, fields: event.protocolFields))
        daemon.hub.publish(user: user, name: event.name, fields: event.protocolFields)
    }
}
