import TokenpinArguments
import TokenpinCore
import TokenpinService

/// `tokenpin token change-pin | unblock [--admin]`: the card's own PIN.
struct TokenCommand: Command {
    enum Action { case changePIN, unblock }
    var action: Action
    var admin: Bool

    func run(_ context: Context) -> ExitCode {
        do {
            switch action {
            case .changePIN:
                try context.backend.changeCardPIN(context.interaction)
                context.console.say(context.console.out.success("Card PIN changed."))
            case .unblock:
                try context.backend.unblockCardPIN(context.interaction, admin: admin)
                context.console.say(context.console.out.success("Card PIN set; the card's PIN counter is reset."))
            }
            context.console.emit([
                ("ok", .bool(true)), ("event", .string(action == .changePIN ? "cardPINChanged" : "cardPINUnblocked")),
            ])
            return .success
        } catch {
            return context.fail(error)
        }
    }
}

extension TokenCommand {
    /// The command from its parsed arguments (the action first); `--admin` with `change-pin` is a usage error.
    init(parsing values: ParsedArguments, arguments: [String], command: String) throws(UsageError) {
        switch arguments.first {
        case "change-pin":
            guard !values.isSet(Options.admin) else {
                throw UsageError(message: "--admin applies to `token unblock`", command: command)
            }
            self.init(action: .changePIN, admin: false)
        case "unblock": self.init(action: .unblock, admin: values.isSet(Options.admin))
        default: throw UsageError(message: "expected change-pin or unblock", command: command)
        }
    }
}

extension TokenCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "token", group: CommandGroup.card, abstract: "Change or unblock the card's own PIN.",
        discussion: "Prompts: card PIN (or Reset Code / admin PIN), new card PIN, new card PIN again.",
        arguments: [Positional("action", values: .oneOf(["change-pin", "unblock"]))],
        options: [Options.admin, Options.app, Options.tokenURI, Options.pkcs11Module])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try TokenCommand(parsing: parsed.values, arguments: parsed.arguments, command: declaration.name)
    }
}

extension Options {
    static let admin = Option.flag("--admin", help: "Unblock with the admin PIN instead of the Reset Code.")
}
