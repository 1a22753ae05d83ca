import TokenpinAge
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin age recipient|identity|plugin`: age files behind the PIN or the card.
///
/// The age identity is the application key of `age` itself, an X25519 secret (X25519 clamps any 32 bytes); its
/// recipient is `age1…` of its public key. `recipient` and `identity` run a verification to compute it (or
/// `recipient --identity FILE` reads it from an identity line, which carries it); `plugin` is the age plugin
/// protocol, run by `age-plugin-tokenpin` in its place, whose verification prompts go through age.
struct AgeCommand: Command {
    enum Action: Equatable {
        /// Print the recipient, after a verification or from an identity file.
        case recipient(identityFile: String?)
        /// Print the identity line (and the recipient as a comment).
        case identity
        /// The plugin protocol's state machine on standard input and output.
        case plugin(stateMachine: String?)
    }

    static let application = ApplicationName("age")!

    var action: Action
    var method: VerificationMethod?

    func run(_ context: Context) -> ExitCode {
        switch action {
        case .recipient(let file?): return recipient(fromIdentityFile: file, context)
        case .plugin(let stateMachine): return plugin(stateMachine, context)
        case .recipient(nil), .identity: break
        }
        var context = context
        if let refusal = context.verificationRefusal(method: method, command: "age") { return refusal }
        context.console.quiet = true  // the line printed is the output; the success sentence would be noise
        var result: DerivedKey
        do {
            result = try context.backend.derive(context.interaction, application: Self.application, method: method)
        } catch {
            return context.fail(error)
        }
        guard let key = result.key.take() else { return context.finish(result.report, success: "") }
        let recipient: AgeRecipient
        do {
            recipient = try AgeX25519.recipient(of: key)
        } catch {
            return context.fail(.crypto(error))
        }
        let identity = TokenpinAgeIdentity(recipient: recipient, user: context.user)
        if !context.console.json {
            if action == .identity {
                Console.write(
                    1,
                    "# tokenpin age identity of \(context.user): opens \(recipient) after the PIN or the card "
                        + "(age-plugin-tokenpin)\n\(identity)\n")
            } else {
                Console.write(1, "\(recipient)\n")
            }
        }
        return context.finish(
            result.report, success: "",
            extra: [("recipient", .string(recipient.description))]
                + (action == .identity ? [("identity", .string(identity.description))] : []))
    }

    /// The recipient an identity file's tokenpin line carries: no verification, nothing secret read.
    func recipient(fromIdentityFile path: String, _ context: Context) -> ExitCode {
        let bytes: [UInt8]
        do throws(Errno) {
            if path == "-" {
                bytes = try FileDescriptor.withBorrowed(0) { (input: borrowing FileDescriptor) throws(Errno) in
                    try input.readAll(maximumCount: 1 << 20)
                }
            } else {
                let file = try FileDescriptor.openForReading(path)
                bytes = try file.readAll(maximumCount: 1 << 20)
            }
        } catch {
            return context.fail(.input("cannot read \(path) (\(error))"))
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
        for line in lines where line.hasPrefix("AGE-PLUGIN-TOKENPIN-") {
            do {
                let identity = try TokenpinAgeIdentity(parsing: String(line))
                if context.console.json {
                    context.console.emit([
                        ("ok", .bool(true)), ("recipient", .string(identity.recipient.description)),
                        ("user", .string(identity.user)),
                    ])
                } else {
                    Console.write(1, "\(identity.recipient)\n")
                }
                return .success
            } catch {
                return context.fail(.input("\(path): \(error.message)"))
            }
        }
        return context.fail(
            .input(
                "\(path) has no tokenpin identity (a line starting AGE-PLUGIN-TOKENPIN-1); make one with "
                    + "`tokenpin age identity`"))
    }

    /// The plugin protocol, as `age-plugin-tokenpin` runs it.
    func plugin(_ stateMachine: String?, _ context: Context) -> ExitCode {
        guard let stateMachine else {
            return context.console.fail(
                .usage, errorCode: "usage",
                message: "age plugin speaks age's plugin protocol: age runs it (as age-plugin-tokenpin) with "
                    + "--age-plugin=identity-v1")
        }
        guard stateMachine == "identity-v1" else {
            // The protocol's rule: refuse to start a state machine this plugin does not know.
            let why =
                stateMachine == "recipient-v1"
                ? "tokenpin's recipients are plain X25519 ones: encrypt with `age -r $(tokenpin age recipient)`"
                : "this plugin speaks identity-v1 only"
            return context.console.fail(
                .usage, errorCode: "usage", message: "unknown age plugin state machine '\(stateMachine)': \(why)")
        }
        // Typed at, it would only wait: the protocol is age's to speak.
        guard !FileDescriptor.withBorrowed(0, { $0.isTerminal }) else {
            return context.console.fail(
                .usage, errorCode: "usage",
                message: "age plugin speaks age's plugin protocol on standard input, which is a terminal: "
                    + "age runs it (age -d -i FILE with a tokenpin identity)")
        }
        let transport = DescriptorTransport()
        let unlocker = TokenpinAgeUnlocker(context: context)
        switch AgeIdentityPlugin.run(transport, unlocker: unlocker) {
        case .done: return .success
        case .failed(let error):
            Console.write(2, "age-plugin-tokenpin: the age plugin protocol failed: \(error.message)\n")
            return .dataError
        }
    }
}

extension AgeCommand {
    /// The command from its parsed arguments.
    init(parsing values: ParsedArguments, arguments: [String], command: String) throws(UsageError) {
        let identityFile = values.value(Options.ageIdentityFile)
        let stateMachine = values.value(Options.agePlugin)
        let method = values.value(Options.ageMethod).flatMap(VerificationMethod.init(rawValue:))
        switch arguments.first {
        case "recipient":
            if stateMachine != nil {
                throw UsageError(message: "--age-plugin applies to `age plugin`", command: command)
            }
            if identityFile != nil, method != nil {
                throw UsageError(
                    message: "--identity reads the recipient without a verification: --method does not go with it",
                    command: command)
            }
            self.init(action: .recipient(identityFile: identityFile), method: method)
        case "identity":
            if identityFile != nil || stateMachine != nil {
                throw UsageError(
                    message: "\(identityFile != nil ? "--identity" : "--age-plugin") does not apply to `age identity`",
                    command: command)
            }
            self.init(action: .identity, method: method)
        case "plugin":
            if identityFile != nil || method != nil {
                throw UsageError(
                    message: "`age plugin` takes only --age-plugin: the verification is asked through age",
                    command: command)
            }
            self.init(action: .plugin(stateMachine: stateMachine), method: nil)
        default:
            throw UsageError(message: "expected recipient, identity or plugin", command: command)
        }
    }
}

/// The plugin's standard input and output.
final class DescriptorTransport: AgeTransport {
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(AgeProtocolError) -> Int {
        do throws(Errno) {
            return try FileDescriptor.withBorrowed(0) { (input: borrowing FileDescriptor) throws(Errno) in
                try input.read(into: buffer)
            }
        } catch {
            throw AgeProtocolError("cannot read from age (\(error))")
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(AgeProtocolError) {
        do throws(Errno) {
            try FileDescriptor.withBorrowed(1) { (output: borrowing FileDescriptor) throws(Errno) in
                try output.writeAll(bytes)
            }
        } catch {
            throw AgeProtocolError("cannot write to age (\(error))")
        }
    }
}

/// Opens a tokenpin identity: the verification `tokenpin derive age` runs, through tokenpind or locally as it
/// decides, with its prompts and notices going through age.
struct TokenpinAgeUnlocker: AgeIdentityUnlocker {
    let context: Context

    func unlock(_ identity: TokenpinAgeIdentity, ui: AgePluginUI) throws(AgeUnlockFailure) -> SecretBytes {
        guard identity.user == context.user else {
            throw AgeUnlockFailure(
                "this identity opens \(identity.user)'s record, and age runs as \(context.user): tokenpin opens "
                    + "only your own; nothing was asked")
        }
        let interaction = AgePluginInteraction(ui: ui, prompts: context.interaction)
        var result: DerivedKey
        do {
            result = try context.backend.derive(interaction, application: AgeCommand.application, method: nil)
        } catch {
            if let broken = interaction.broken { throw AgeUnlockFailure(broken.message, protocolError: broken) }
            switch error {
            case .cancelled:
                throw AgeUnlockFailure("cancelled: nothing was tried or counted, nothing was decrypted")
            default:
                throw AgeUnlockFailure(error.message + "; nothing was decrypted")
            }
        }
        guard let key = result.key.take() else {
            let why: String
            switch result.report.outcome {
            case .rejected(let remaining, let lastTry):
                why =
                    "wrong PIN (" + (lastTry ? "last try: one more wrong entry locks it" : "\(remaining) tries left")
                    + ")"
            case .locked: why = "the PIN is locked: unlock it with `tokenpin reset` and the recovery key"
            case .delayed(let seconds): why = "too many wrong entries: try again in \(seconds) s"
            case .tokenRejected(let reason): why = "the token was not verified: \(reason)"
            case .verified: why = "the verification released no key"
            }
            throw AgeUnlockFailure(why + "; nothing was decrypted")
        }
        return key
    }
}

/// The service's `Interaction` over age's user interface: each secret a `request-secret` (age asks on its
/// terminal), each notice a `msg`. A `fail` answer or an empty one cancels before anything is tried or counted.
final class AgePluginInteraction: Interaction {
    let ui: AgePluginUI
    /// The terminal interaction, for the prompts' wording only (it reads nothing here).
    let prompts: CLIInteraction
    /// The protocol broke while asking (age went away): the verification ends as cancelled, and this says why.
    private(set) var broken: AgeProtocolError?

    init(ui: AgePluginUI, prompts: CLIInteraction) {
        self.ui = ui
        self.prompts = prompts
    }

    var newPINAttempts: Int { 1 }

    func readSecret(_ prompt: SecretPrompt) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: nil)
    }

    func readPIN(_ prompt: SecretPrompt, remaining: Int) throws(ServiceError) -> SecretBytes {
        try read(prompt, remaining: remaining)
    }

    private func read(_ prompt: SecretPrompt, remaining: Int?) throws(ServiceError) -> SecretBytes {
        let answer: SecretBytes?
        do {
            answer = try ui.requestSecret(prompts.promptText(prompt, remaining: remaining) + ":")
        } catch {
            broken = error
            throw .cancelled
        }
        guard let answer, answer.count > 0 else { throw .cancelled }
        return answer
    }

    func report(_ event: Event) {
        let text: String?
        switch event {
        case .tokenFailed(let reason, let fallback, _):
            text = fallback ? "token not used: \(reason); falling back to the PIN" : nil
        case .keypadEntry(let reader, let card, let tries):
            text = CLIInteraction.keypadSentence(reader: reader, card: card, triesLeft: tries)
        case .keypadNotUsed(let reader, let reason):
            text = "keypad not used: \(reason); type the card PIN here (reader \(reader))"
        case .otherAttempts(let notice):
            text = "note: \(notice.sentence)"
        default:
            text = nil
        }
        guard let text, broken == nil else { return }
        do {
            try ui.message(text)
        } catch {
            broken = error
        }
    }

    func confirm(_ question: String) throws(ServiceError) -> Bool { false }

    func choose(_ question: String, options: [String]) throws(ServiceError) -> Int {
        throw .usage(
            "several cards are present (\(options.joined(separator: "; "))); set `reader` in tokenpin.conf, or "
                + "leave only one")
    }
}
