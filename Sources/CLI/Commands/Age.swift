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

extension AgeCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "age", group: CommandGroup.verifyAndKeys,
        abstract: "age files behind the PIN or the card: the recipient, the identity, the plugin.",
        discussion: "recipient: the age1… recipient of the X25519 key derived for app age, after a "
            + "verification (prompts: as verify); with --identity FILE read from the identity, no PIN.\n"
            + "identity: the identity line AGE-PLUGIN-TOKENPIN-1… (and the recipient as a comment) for "
            + "an identity file: it holds no secret, only the recipient and the user.\n"
            + "plugin: the age plugin protocol on standard input and output; age runs it through "
            + "age-plugin-tokenpin, and asks the PIN or the card PIN itself (age -d -i FILE).",
        arguments: [Positional("action", values: .oneOf(["recipient", "identity", "plugin"]))],
        options: [Options.ageMethod, Options.ageIdentityFile, Options.agePlugin])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try AgeCommand(parsing: parsed.values, arguments: parsed.arguments, command: declaration.name)
    }
}

extension Options {
    static let ageMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "recipient, identity: verify with only this type, without fallback (the same as verify's).")
    static let ageIdentityFile = Option.value(
        "--identity", valueName: "file",
        help: "recipient: read it from this identity file's tokenpin line (- for standard input), without a PIN.")
    static let agePlugin = Option.value(
        "--age-plugin", valueName: "state-machine",
        help: "plugin: the age plugin state machine age asks for (identity-v1; age-plugin-tokenpin passes it).")
}
