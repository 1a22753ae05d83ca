import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinReaders
import TokenpinService
import TokenpinSystem

/// Everything a command needs: options, settings, the service, the console.
package struct Context {
    var options: ParsedCommandLine
    package var configuration: Configuration
    var store: RecordStore
    package var user: String
    package var console: Console
    var interaction: CLIInteraction
    /// `interaction`, for the commands of tokenpin-bench: the terminal or standard input.
    package var prompts: any Interaction { interaction }

    package var cards: (any CardReaders)?
    package var selection: CardSelection
    /// Whether `cards` is the in-process simulated card (`--reader sim`).
    package var simulatedCard = false

    /// `--pkcs11-module`: the one PKCS#11 module to load (local mode only), over the `pkcs11-module` setting.
    package var pkcs11Module: String?

    /// The cards the site revoked (`/etc/tokenpin/revoked.d`), for local mode (tokenpind reads its own).
    var revokedCards = RevokedCards()

    package var service: PINService {
        var service = PINService(
            store: store, configuration: configuration, user: user, cards: cards, selection: selection)
        service.revokedCards = revokedCards
        if let module = pkcs11Module { service.pkcs11.module = module }
        return service
    }

    /// Suggested commands completed with the flags of this command line.
    var hints: CommandLineHints { console.hints }

    /// Where operations run (`ModeSelection.decide`).
    var mode: Backend = .local(reason: nil)

    /// tokenpind, when the operations run there.
    var daemon: DaemonClient? {
        guard case .daemon(let path) = mode else { return nil }
        var client = DaemonClient(socketPath: path, user: options.global.user)
        client.selection = selection
        client.keyboardOnly = options.global.noPinpad
        return client
    }

    /// Where operations run: the daemon, this process, or nowhere when tokenpind should run and does not.
    package var backend: any PINBackend {
        switch mode {
        case .local: service
        case .daemon: daemon ?? DaemonClient()
        case .unreachable(let socket, let evidence): UnreachableDaemon(socket: socket, evidence: evidence)
        }
    }

    /// Whether the command line asks for the in-process simulated card: `--reader sim`, or `TOKENPIN_READER=sim`
    /// (`readerVariable`) without `--reader`.
    package static func wantsSimulatedCard(_ options: ParsedCommandLine, readerVariable: String?) -> Bool {
        readerOption(options, readerVariable: readerVariable) == "sim"
    }

    /// `--reader`, or else a non-empty `TOKENPIN_READER` (`readerVariable`).
    static func readerOption(_ options: ParsedCommandLine, readerVariable: String?) -> String? {
        options.global.reader ?? readerVariable.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Builds the context: loads the configuration, picks the store and the user; `simulatedCards` makes the
    /// simulated card's readers for `--reader sim` (`CLIProgram.simulatedCards`).
    static func make(
        _ options: ParsedCommandLine, mode: Backend, simulatedCards: CLIProgram.SimulatedCards?
    ) throws(ConfigError) -> Context {
        let environment = ProcessEnvironment.current
        var (configuration, skipped) = try loadConfiguration(options, environment: environment)
        if options.global.noPinpad { configuration.pinpad = .off }
        let out = Style.resolve(appearance: configuration.appearance, noColor: options.global.noColor, fd: 1)
        let err = Style.resolve(appearance: configuration.appearance, noColor: options.global.noColor, fd: 2)
        var console = Console(json: options.global.json, quiet: options.global.quiet, out: out, err: err)
        console.hints = CommandLineHints(options)
        for error in skipped {
            console.note(
                err.warning("warning: ") + "\(error.description); that file is skipped here, and tokenpind keeps the "
                    + "settings it read before (run `tokenpin doctor`)")
        }
        let store = RecordStore(
            directory: options.global.store ?? RecordStore.defaultDirectory(environment: environment))
        let user = options.global.user ?? currentUserName()
        let interaction = CLIInteraction(
            console: console, appearance: configuration.appearance,
            pinStdin: options.global.pinStdin, style: err, user: user)
        // Through tokenpind its own settings apply: the local ones say nothing about them.
        let local = mode.isLocal
        interaction.calibrates = local && configuration.kdfMemoryMiB == nil
        if local { interaction.policy = configuration.policy }
        // `--reader sim` (or TOKENPIN_READER=sim) uses the in-process virtual card; anything else names a
        // PC/SC reader or a glob, as the `reader` setting does.
        let readerOption = readerOption(options, readerVariable: environment["TOKENPIN_READER"])
        let cards: (any CardReaders)?
        var selection = CardSelection(
            reader: readerOption ?? configuration.reader, serial: options.global.serial,
            application: options.values.value(Options.app).flatMap(TokenApplicationKind.init(rawValue:)))
        let pkcs11 = PKCS11Options(options.values)  // checked by `main` (PKCS11Options.problem)
        if pkcs11.tokenURI != nil || pkcs11.module != nil {
            selection.application = .pkcs11
            selection.tokenURI = pkcs11.tokenURI
        }
        if readerOption == "sim" {
            // tokenpin hands `--reader sim` to tokenpin-bench before it gets here (BenchHandOver).
            cards =
                try simulatedCards?(store.directory + "/sim-card.json", environment)
                ?? UnavailableReaders(error: .tokenUnavailable("the simulated card is in tokenpin-bench"))
            selection.reader = nil
        } else {
            cards = PCSCReaders()
        }
        var context = Context(
            options: options, configuration: configuration, store: store,
            user: user, console: console, interaction: interaction,
            cards: cards, selection: selection, simulatedCard: readerOption == "sim", mode: mode)
        context.pkcs11Module = pkcs11.module
        if mode.isLocal {
            let revoked = RevokedCards.load(directory: SystemRoot.path(RevokedCards.defaultDirectory))
            context.revokedCards = revoked.list
            for problem in revoked.problems { console.note("warning: \(problem); it revokes nothing") }
        }
        return context
    }

    /// The configuration, and the broken system files (`/etc/tokenpin`) left out for a read-only command.
    static func loadConfiguration(_ options: ParsedCommandLine, environment: [String: String]) throws(ConfigError)
        -> (Configuration, [ConfigError])
    {
        let system = SystemRoot.path("/etc/tokenpin")
        var files = Configuration.standardFiles(environment: environment, systemDirectory: system)
        var skipped: [ConfigError] = []
        while true {
            do {
                return (try Configuration.load(files: files, explicitFile: options.global.config), skipped)
            } catch {
                guard Commands.traits(of: options).contains(.readOnly), error.file.hasPrefix(system + "/"),
                    files.contains(error.file)
                else { throw error }
                skipped.append(error)
                files.removeAll { $0 == error.file }
            }
        }
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

    /// Whose secrets are asked for (the prompts name them).
    let user: String

    init(console: Console, appearance: Appearance, pinStdin: Bool, style: Style, user: String) {
        self.console = console
        self.appearance = appearance
        self.pinStdin = pinStdin
        self.style = style
        self.user = user
    }

    /// The PIN policy in force, when this process knows it (local mode; tokenpind applies its own).
    var policy: PINPolicy?

    /// What the policy allows, for a refusal by `rule` ("6 to 32 digits"), when it is known here.
    func allowed(_ rule: PolicyRule) -> String? {
        guard let policy else { return nil }
        switch rule {
        case .minLength, .maxLength, .charset: return policy.shape
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

    /// What a prompt shows: what it wants and whose it is, with the tries left where they are known
    /// (`tokenpin PIN for alice (4 tries left)`, `Card PIN for YubiKey 5 12345678 (3 tries left)`).
    func promptText(_ prompt: SecretPrompt, remaining: Int? = nil) -> String {
        func named(_ text: String) -> String { text.replacing("%u", with: user) }
        let tries = remaining.map {
            $0 == 1 ? " (1 try left: a wrong PIN locks it)" : " (\($0) \($0 == 1 ? "try" : "tries") left)"
        }
        return switch prompt {
        case .pin: named(appearance.promptPIN) + (tries ?? "")
        case .currentPIN: named(appearance.promptCurrentPIN) + (tries ?? "")
        case .newPIN: named(appearance.promptNewPIN)
        case .confirmPIN: named(appearance.promptConfirmPIN)
        case .recoveryKey: named(appearance.promptRecoveryKey)
        case .cardPIN(let card, let tries):
            appearance.promptCardPIN.replacing(
                "%s",
                with: tries == cardTriesUntold
                    ? card
                    : "\(card) (\(tries == 1 ? "last try before the card blocks" : "\(tries) tries left"))")
        case .newCardPIN: "New card PIN"
        case .confirmCardPIN: "New card PIN again"
        case .adminPIN(let card, let tries):
            "Admin PIN for \(card) (\(tries) \(tries == 1 ? "try" : "tries") left)"
        case .resetCode(let card, let tries):
            "Reset Code for \(card) (\(tries) \(tries == 1 ? "try" : "tries") left)"
        case .puk(let card, let tries):
            "PUK for \(card)" + (tries.map { " (\($0) \($0 == 1 ? "try" : "tries") left)" } ?? "")
        case .managementKey(let card): "Management key for \(card) (hex)"
        case .loginPassword: "Login password of \(user) (tokenpind checks it before a first PIN)"
        }
    }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: nil)
    }

    /// The PIN prompt shows the tries left before this attempt.
    func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: remaining)
    }

    /// Reads one secret. An empty entry is never a try: it cancels (exit 130) before anything is sent or counted.
    private func read(_ prompt: SecretPrompt, remaining: Int?) throws(ServiceError) -> SecretBytes {
        SlowStepNotice.shared.cancel()
        let secret: SecretBytes
        if pinStdin {
            secret = try stdin.readLine(for: prompt)
        } else {
            if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
            guard let terminal else {
                throw .input("no terminal to ask for the \(prompt.spokenName) on; pipe the lines in with --pin-stdin")
            }
            secret = try terminal.readSecret(prompt: promptText(prompt, remaining: remaining))
        }
        guard secret.count > 0 else {
            console.note("Nothing entered for the \(prompt.spokenName): cancelled, nothing was tried or counted.")
            throw .cancelled
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
        SlowStepNotice.shared.cancel()
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
        SlowStepNotice.shared.cancel()
        if pinStdin { return false }
        if terminal == nil { terminal = TerminalReader.open(style: style, dot: appearance.dot) }
        guard let terminal else { return false }
        return try terminal.confirm(question)
    }

    func confirmTyped(_ question: String, word: String) throws(ServiceError) -> Bool {
        // A progress line armed by the answer before must not land on the question (`Type replace ...`).
        SlowStepNotice.shared.cancel()
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
        case .keypadEntry(let reader, let card, let tries):
            // The card PIN goes in on the reader's keys: no prompt here, only where to type it.
            // It takes a prompt's place, so `--json` and `--quiet` show it too (on standard error).
            SlowStepNotice.shared.cancel()
            Console.write(2, Self.keypadSentence(reader: reader, card: card, triesLeft: tries) + "\n")
        case .keypadCredentialEntry(let reader, let card, let credential, let tries):
            SlowStepNotice.shared.cancel()
            Console.write(
                2, Self.keypadSentence(reader: reader, card: card, triesLeft: tries, pin: credential.displayName) + "\n"
            )
        case .keypadNotUsed(let reader, let reason):
            console.note(style.warning("Keypad not used: ") + "\(reason); type it here (reader \(reader))")

        default:
            break
        }
    }

    /// "Enter the card PIN on the keypad of ‹reader› (card ‹card›, N tries left)": what the person sees instead of
    /// a prompt when the reader takes the card PIN on its own keys.
    /// A PKCS#11 token that does not tell its tries gets no number.
    /// The PUK is followed on the keypad by the new card PIN and its confirmation (one RESET RETRY COUNTER).
    static func keypadSentence(reader: String, card: String, triesLeft: Int, pin: String = "card PIN") -> String {
        let tries =
            triesLeft == cardTriesUntold
            ? "" : ", \(triesLeft) \(triesLeft == 1 ? "try" : "tries") left on the card"
        let then = pin == KeypadCredential.puk.displayName ? ", then the new card PIN twice" : ""
        return "Enter the \(pin) on the keypad of \(reader)\(then) (card \(card)\(tries); Cancel on the keypad stops)"
    }

    static func triesText(remaining: Int, lastTry: Bool) -> String {
        if lastTry { return "Last try: one wrong entry more locks the PIN." }
        return "\(remaining) \(remaining == 1 ? "try" : "tries") left."
    }
}

extension SecretPrompt {
    /// What the prompt asks for, in words for messages (the protocol's names stay out of what users read).
    package var spokenName: String {
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
