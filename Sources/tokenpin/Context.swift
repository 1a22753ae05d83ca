import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinReaders
import TokenpinService
import TokenpinSystem

/// Everything a command needs: options, settings, the service, the console.
struct Context {
    var options: ParsedCommandLine
    var configuration: Configuration
    var store: RecordStore
    var user: String
    var console: Console
    var interaction: CLIInteraction

    var cards: (any CardReaders)?
    var selection: CardSelection
    /// Whether `cards` is the in-process simulated card (`--reader sim`).
    var simulatedCard = false

    var service: PINService {
        PINService(store: store, configuration: configuration, user: user, cards: cards, selection: selection)
    }

    /// tokenpind, when its socket exists (or `--socket` names one) and `--local` is not given.
    var daemon: DaemonClient? {
        if options.global.local { return nil }
        let path = options.global.socket ?? DaemonClient.defaultSocketPath
        guard options.global.socket != nil || DaemonClient.socketExists(at: path) else { return nil }
        var client = DaemonClient(socketPath: path, user: options.global.user)
        client.selection = selection
        return client
    }

    /// Where operations run: the daemon when there is one, else this process.
    var backend: any PINOperations { daemon ?? service }

    /// Builds the context: loads the configuration, picks the store and the user.
    static func make(_ options: ParsedCommandLine) throws(ConfigError) -> Context {
        let environment = ProcessInfo.processInfo.environment
        let configuration = try Configuration.load(
            files: Configuration.standardFiles(environment: environment),
            explicitFile: options.global.config)
        let out = Style.resolve(appearance: configuration.appearance, noColor: options.global.noColor, fd: 1)
        let err = Style.resolve(appearance: configuration.appearance, noColor: options.global.noColor, fd: 2)
        let console = Console(json: options.global.json, quiet: options.global.quiet, out: out, err: err)
        let store = RecordStore(
            directory: options.global.store ?? RecordStore.defaultDirectory(environment: environment))
        let interaction = CLIInteraction(
            console: console, appearance: configuration.appearance,
            pinStdin: options.global.pinStdin, style: err)
        // Through tokenpind its own settings apply: the local ones say nothing about them.
        let local = options.global.local || (options.global.socket == nil && !DaemonClient.socketExists())
        interaction.calibrates = local && configuration.kdfMemoryMiB == nil
        if local { interaction.policy = configuration.policy }
        // `--reader sim` (or TOKENPIN_READER=sim) uses the in-process virtual card; anything else names a
        // PC/SC reader or a glob, as the `reader` setting does.
        let readerOption = options.global.reader ?? environment["TOKENPIN_READER"].flatMap { $0.isEmpty ? nil : $0 }
        let cards: (any CardReaders)?
        var selection = CardSelection(
            reader: readerOption ?? configuration.reader, serial: options.global.serial,
            application: options.values.value(Options.app).flatMap(TokenApplicationKind.init(rawValue:)))
        if readerOption == "sim" {
            cards = SimulatorCards.shared(
                stateFile: store.directory + "/sim-card.json",
                profile: try SimulatorCards.requestedProfile(environment: environment))
            selection.reader = nil
        } else {
            cards = PCSCReaders()
        }
        return Context(
            options: options, configuration: configuration, store: store,
            user: options.global.user ?? currentUserName(), console: console, interaction: interaction,
            cards: cards, selection: selection, simulatedCard: readerOption == "sim")
    }

    /// The effective user's login name, or `uid<N>` when it has none.
    static func currentUserName() -> String {
        let uid = CurrentProcess.effectiveUserID
        return CurrentProcess.userName(of: uid) ?? "uid\(uid)"
    }
}

/// The terminal or standard input as the service's `Interaction`.
final class CLIInteraction: Interaction {
    let console: Console
    let appearance: Appearance
    let pinStdin: Bool
    let style: Style
    private var terminal: TerminalReader?
    private let stdin = StdinReader()

    init(console: Console, appearance: Appearance, pinStdin: Bool, style: Style) {
        self.console = console
        self.appearance = appearance
        self.pinStdin = pinStdin
        self.style = style
    }

    /// The PIN policy in force, when this process knows it (local mode; tokenpind applies its own).
    var policy: PINPolicy?

    /// What the policy allows, for a refusal by `rule` ("6 to 32 digits"), when it is known here.
    func allowed(_ rule: PolicyRule) -> String? {
        guard let policy else { return nil }
        let kind =
            switch policy.charset {
            case .digits: "digits"
            case .alnum: "letters and digits"
            case .any: "characters"
            }
        switch rule {
        case .minLength, .maxLength, .charset: return "\(policy.minLength) to \(policy.maxLength) \(kind)"
        case .minUnique: return "at least \(policy.minUnique) different characters"
        default: return nil
        }
    }

    /// Policy refusals reported so far (the last one is the command's error, not a note).
    private var policyRefusals = 0

    /// The last token failure the service reported (a refused card PIN, a missing card), for `--json`.
    private(set) var tokenFailure: String?
    /// The card PIN's tries left the last token failure reported, as read from the card (nil: not reached).
    private(set) var tokenFailureCardTries: Int?

    var newPINAttempts: Int { pinStdin ? 1 : 3 }

    /// Whether secrets are typed on a terminal: not `--pin-stdin`, and a controlling terminal exists.
    var asksOnTerminal: Bool {
        if pinStdin { return false }
        if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
        return terminal != nil
    }

    func promptText(_ prompt: SecretPrompt) -> String {
        switch prompt {
        case .pin: appearance.promptPIN
        case .currentPIN: appearance.promptCurrentPIN
        case .newPIN: appearance.promptNewPIN
        case .confirmPIN: appearance.promptConfirmPIN
        case .recoveryKey: appearance.promptRecoveryKey
        case .cardPIN(let card, let tries):
            appearance.promptCardPIN.replacing(
                "%s", with: "card \(card) (\(tries == 1 ? "last try before the card blocks" : "\(tries) tries left"))")
        case .newCardPIN: "New card PIN"
        case .confirmCardPIN: "New card PIN again"
        case .adminPIN(let card, let tries):
            "Admin PIN for card \(card) (\(tries) \(tries == 1 ? "try" : "tries") left)"
        case .resetCode(let card, let tries):
            "Reset Code for card \(card) (\(tries) \(tries == 1 ? "try" : "tries") left)"
        case .puk(let card, let tries):
            "PUK for card \(card)" + (tries.map { " (\($0) \($0 == 1 ? "try" : "tries") left)" } ?? "")
        case .managementKey(let card): "Management key for card \(card) (hex)"
        case .loginPassword: "Login password (tokenpind checks it before a first PIN)"
        }
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        SlowStepNotice.shared.cancel()
        let secret: SecretBytes
        if pinStdin {
            secret = try stdin.readLine(for: prompt)
        } else {
            if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
            guard let terminal else {
                throw .input("no terminal to ask for the \(prompt.spokenName) on; pipe the lines in with --pin-stdin")
            }
            secret = try terminal.readSecret(prompt: promptText(prompt))
        }
        if showsSlowSteps { SlowStepNotice.shared.arm(slowStep(after: prompt)) }
        return secret
    }

    /// Slow steps are announced on a terminal only: not with `--json` or `--quiet`.
    var showsSlowSteps: Bool { !console.json && !console.quiet && FileDescriptor.withBorrowed(2, { $0.isTerminal }) }

    /// Whether a new PIN's key derivation is calibrated here (local mode without `kdf-memory-mib`).
    var calibrates = false

    /// What is going on after `prompt` was answered, for a step that takes more than a second.
    func slowStep(after prompt: SecretPrompt) -> String {
        switch prompt {
        case .pin, .currentPIN: "Checking the PIN (the key derivation takes a moment)..."
        case .confirmPIN:
            calibrates
                ? "Calibrating the key derivation for this machine, then deriving the key..."
                : "Deriving the key for the new PIN..."
        case .recoveryKey: "Checking the recovery key..."
        case .adminPIN, .managementKey: "Working on the card (generating a key on a card can take a while)..."
        case .cardPIN, .resetCode, .puk: "Waiting for the card..."
        default: "Working..."
        }
    }

    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        if pinStdin {
            throw .usage(
                "several cards are present (\(options.joined(separator: "; "))); choose one with --reader or --serial")
        }
        if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
        guard let terminal else {
            throw .usage("several cards are present; choose one with --reader or --serial")
        }
        return try terminal.choose(question, options: options)
    }

    func confirm(_ question: String) throws(ServiceError) -> Bool {
        if pinStdin { return false }
        if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
        guard let terminal else { return false }
        return try terminal.confirm(question)
    }

    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        if !pinStdin, terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
        guard !pinStdin, let terminal else {
            throw .usage(question + " Without a terminal to confirm on, add --yes.")
        }
        return try terminal.confirmTyped(question, word: word)
    }

    func report(_ event: Event) {
        switch event {
        case .policyViolation(let rule, let reason):
            // The last refusal ends the command, whose error says it: one message per refusal.
            policyRefusals += 1
            guard policyRefusals < newPINAttempts else { return }
            let explanation = reason ?? PolicyRule(rawValue: rule)?.explanation ?? rule
            let allowed = PolicyRule(rawValue: rule).flatMap(allowed).map { " (allowed: \($0))" } ?? ""
            console.note(style.error("PIN refused: ") + "\(explanation) (rule \(rule))\(allowed); try another")
        case .tokenFailed(let reason, let fallback, let tries):
            tokenFailure = reason
            tokenFailureCardTries = tries
            // Without a fallback the command's own error or outcome says it: one message per refusal.
            if fallback { console.note(style.warning("Token not used: ") + reason + "; falling back to the PIN") }
        case .wrongPIN(let remaining, let lastTry):
            console.note(style.error("Wrong PIN. ") + Self.triesText(remaining: remaining, lastTry: lastTry))
        case .otherAttempts(let notice):
            // Told once, at the success that cleared them: su and remote logins that tried this user's PIN.
            console.note(style.warning("Note: ") + notice.sentence + ".")

        default:
            break
        }
    }

    static func triesText(remaining: Int, lastTry: Bool) -> String {
        if lastTry { return "Last try: one wrong entry more locks the PIN." }
        return "\(remaining) \(remaining == 1 ? "try" : "tries") left."
    }
}

extension SecretPrompt {
    /// What the prompt asks for, in words for messages (the protocol's names stay out of what users read).
    var spokenName: String {
        switch self {
        case .pin: "PIN"
        case .currentPIN: "current PIN"
        case .newPIN: "new PIN"
        case .confirmPIN: "new PIN again"
        case .recoveryKey: "recovery key"
        case .cardPIN: "card PIN"
        case .newCardPIN: "new card PIN"
        case .confirmCardPIN: "new card PIN again"
        case .adminPIN: "admin PIN"
        case .resetCode: "Reset Code"
        case .puk: "PUK"
        case .managementKey: "management key"
        case .loginPassword: "login password"
        }
    }
}
