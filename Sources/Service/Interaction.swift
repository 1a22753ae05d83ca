package import TokenpinCore

/// What the service asks the person for, in the order the command defines.
package enum SecretPrompt: Sendable, Equatable {
    /// The PIN, to verify.
    case pin
    /// The current PIN, before a change.
    case currentPIN
    /// A new PIN.
    case newPIN
    /// The new PIN again.
    case confirmPIN
    /// The recovery key.
    case recoveryKey
    /// The card's PIN (PW1), naming the card and its tries left.
    case cardPIN(card: String, triesLeft: Int)
    /// A new card PIN, and again.
    case newCardPIN
    /// The new card PIN again.
    case confirmCardPIN
    /// The card's admin PIN (PW3), naming the card and its tries left.
    case adminPIN(card: String, triesLeft: Int)
    /// The card's Reset Code, naming the card and its tries left.
    case resetCode(card: String, triesLeft: Int)
    /// A PIV card's PUK, naming the card and its tries left (nil: the card cannot tell without spending one).
    case puk(card: String, triesLeft: Int?)
    /// A PIV card's management key, as hex, naming the card.
    case managementKey(card: String)
    /// The user's login password, which tokenpind checks through PAM before a first way in (`enrol`, `import`).
    case loginPassword

    /// The stable name used by the daemon protocol and tests.
    package var name: String {
        switch self {
        case .pin: "pin"
        case .currentPIN: "current-pin"
        case .newPIN: "new-pin"
        case .confirmPIN: "confirm-pin"
        case .recoveryKey: "recovery-key"
        case .cardPIN: "card-pin"
        case .newCardPIN: "new-card-pin"
        case .confirmCardPIN: "confirm-card-pin"
        case .adminPIN: "admin-pin"
        case .resetCode: "reset-code"
        case .puk: "puk"
        case .managementKey: "management-key"
        case .loginPassword: "password"
        }
    }
}

/// The person on the other side of an operation: a terminal, a test script, a daemon client, a PAM conversation.
///
/// Operations call these synchronously, in prompt order. Implementations must not log or keep the secrets.
package protocol Interaction {
    /// Reads one secret for `prompt`; throws `ServiceError.cancelled` when the person cancels.
    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes
    /// Reports an event as it happens (a wrong PIN, a token failure before the fallback, a policy refusal).
    func report(_ event: Event)
    /// Asks a yes/no question; throws `ServiceError.cancelled` when the person cancels.
    func confirm(_ question: String) throws(ServiceError) -> Bool
    /// Shows `question` (what an operation would destroy) and asks the person to type `word` to go ahead; true
    /// only when they typed it. Throws `.usage` naming `--yes` when it cannot ask (no terminal, a script).
    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool
    /// Asks the person to pick one of `options`; returns its index. Throws `.cancelled` on cancel, and an
    /// error saying how to choose without asking when it cannot ask (scripts).
    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int
    /// How many times to ask again for a new PIN the policy refused (1: no second chance, as for scripts).
    var newPINAttempts: Int { get }
    /// Reads the PIN for `prompt` (`pin`, `current-pin`) knowing its tries left before this attempt, which a relay
    /// passes on (so a PAM stack can say "last try" first). The default reads the secret as any other.
    func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes
}

extension Interaction {
    package func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes {
        try readSecret(prompt)
    }
}

extension Interaction {
    /// Interactions that cannot show a question and read a typed answer refuse: only `--yes` goes ahead.
    package func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        throw .usage(question + " Nothing here can ask for a typed confirmation; add --yes to go ahead.")
    }
}
