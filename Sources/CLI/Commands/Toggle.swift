import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// `tokenpin toggle TYPE on|off [--generate-key] [--yes] [--method pin|token]`.
struct ToggleCommand: Command {
    var type: AuthenticationType
    var on: Bool
    var generateKey = false
    var assumeYes = false
    /// `toggle token off`: verify with the PIN (nil, the default) or the card.
    var method: VerificationMethod?
    /// `toggle token on`: the mode to bind in; `both` re-binds a card bound in `either`.
    var mode: VerificationMode?
    /// `toggle token on --app piv`: the slot whose key to bind or to generate into.
    var slot: String?

    func run(_ context: Context) -> ExitCode {
        switch (type, on) {
        case (.pin, _):
            do {
                try context.backend.togglePIN(on: on, context.interaction)
            } catch {
                return context.fail(error)
            }
            context.console.say("The PIN type is always enabled.")
            context.console.emit([
                ("ok", .bool(true)), ("event", .string("typeChanged")), ("type", .string("pin")),
                ("enabled", .bool(true)),
            ])
            return .success
        case (.token, true):
            do {
                let before = mode == .both ? try? context.backend.perform(Operation.Types()) : nil
                let wasOn = before?.contains { $0.type == .token && $0.enabled } ?? false
                let report = try context.backend.enableToken(
                    context.interaction, generateKey: generateKey,
                    assumeYes: assumeYes, mode: mode, slot: slot)
                let serial = (try? context.backend.perform(Operation.Types()))?.first { $0.type == .token }?.serial
                let card = serial.map { cardLabel(serial: $0) } ?? "?"
                return context.finish(
                    report,
                    success: wasOn
                        ? "Token re-bound in mode both: card \(card); the record opens only with the PIN and the card."
                        : "Token enabled: card \(card).",
                    event: .typeChanged(type: .token, enabled: true),
                    extra: [("type", .string("token")), ("enabled", .bool(true)), ("serial", .optional(serial))])
            } catch .tokenAlreadyEnabled(let serial) {
                return unchanged(
                    context,
                    "The token is already enabled (card \(serial)); to bind another card, "
                        + "`tokenpin toggle token off` first.", enabled: true)
            } catch {
                return context.fail(error)
            }
        case (.token, false):
            do {
                let report = try context.backend.disableToken(context.interaction, method: method)
                return context.finish(
                    report, success: "Token disabled; verify with the PIN.",
                    event: .typeChanged(type: .token, enabled: false),
                    extra: [("type", .string("token")), ("enabled", .bool(false))])
            } catch .tokenNotEnabled {
                return unchanged(context, "The token is already disabled.", enabled: false)
            } catch {
                return context.fail(error)
            }
        }
    }

    /// `toggle token on` when on and `off` when off: the same answer both ways, success with nothing changed.
    func unchanged(_ context: Context, _ text: String, enabled: Bool) -> ExitCode {
        context.console.say(text)
        context.console.emit([
            ("ok", .bool(true)), ("event", .string("unchanged")), ("type", .string("token")),
            ("enabled", .bool(enabled)),
        ])
        return .success
    }
}

extension ToggleCommand {
    /// The command from its parsed arguments (`<type> on|off`); what the declarations cannot check is a usage
    /// error here: a flag given to the wrong type or direction, a `--slot` that is no PIV slot or comes without
    /// `--app piv`.
    init(parsing values: ParsedArguments, arguments: [String], command: String) throws(UsageError) {
        guard arguments.count == 2, let type = AuthenticationType(rawValue: arguments[0]) else {
            throw UsageError(message: "expected <type> on|off", command: command)
        }
        let on = arguments[1] == "on"
        if type == .pin && (values.isSet(Options.generateKey) || values.isSet(Options.yes)) {
            throw UsageError(message: "--generate-key and --yes apply to `toggle token on`", command: command)
        }
        if values.isSet(Options.toggleMethod) && (type != .token || on) {
            throw UsageError(message: "--method applies to `toggle token off`", command: command)
        }
        for option in [Options.toggleMode, Options.app, Options.slot, Options.tokenURI, Options.pkcs11Module]
        where values.isSet(option) && (type != .token || !on) {
            throw UsageError(message: "\(option.names[0]) applies to `toggle token on`", command: command)
        }
        let slot = values.value(Options.slot).map { $0.lowercased() }
        if let slot {
            guard PIVSlotName.all.contains(slot) else {
                throw UsageError(
                    message: "--slot takes a PIV slot: \(PIVSlotName.all.joined(separator: ", ")), not '\(slot)'",
                    command: command)
            }
            guard values.value(Options.app) == TokenApplicationKind.piv.rawValue else {
                throw UsageError(message: "--slot applies to PIV: add --app piv", command: command)
            }
        }
        self.init(
            type: type, on: on, generateKey: values.isSet(Options.generateKey),
            assumeYes: values.isSet(Options.yes),
            method: values.value(Options.toggleMethod).flatMap(VerificationMethod.init(rawValue:)),
            mode: values.value(Options.toggleMode).flatMap(VerificationMode.init(rawValue:)), slot: slot)
    }
}

extension ToggleCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "toggle", group: CommandGroup.card, abstract: "Switch an authentication type on or off.",
        discussion: "Types: pin (always enabled; `toggle pin off` is refused), token.\n"
            + "Prompts for `token on`: PIN, card PIN; with --generate-key then the admin PIN (PIV: management key).\n"
            + "`token on --mode both` on a card bound in either re-binds it in both (prompts: PIN, card PIN): "
            + "one composite slot that no copy of the record opens without the card.\n"
            + "Prompts for `token off`: PIN (a wrong one counts), or card PIN with --method token; "
            + "mode = both: PIN, card PIN.",
        arguments: [
            Positional("type", values: .oneOf(AuthenticationType.allCases.map(\.rawValue)), label: "<type>"),
            Positional("state", values: .oneOf(["on", "off"])),
        ],
        options: [
            Options.generateKey, Options.yes, Options.toggleMethod, Options.toggleMode, Options.app, Options.slot,
            Options.tokenURI, Options.pkcs11Module,
        ])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try ToggleCommand(parsing: parsed.values, arguments: parsed.arguments, command: declaration.name)
    }
}

extension Options {
    static let toggleMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify `token off` with the PIN (default) or the card.")
    static let toggleMode = Option.value(
        "--mode", valueName: "mode", allowedValues: ["either", "both"],
        help: "Bind `token on` in this mode; the stricter of it and `mode` wins.")
    static let generateKey = Option.flag(
        "--generate-key",
        help:
            "Replace the card's decryption key with a new cv25519 key (admin PIN; PIV: a new P-256 key in an empty "
            + "retired slot, management key); without it, the key is used as it is."
    )
    static let yes = Option.flag("--yes", help: "Confirm that --generate-key replaces the card's decryption key.")
    static let slot = Option.value(
        "--slot", valueName: "slot",
        help: "PIV: the slot whose key to bind (9d by default; 9a, 9c, 9e, 82-95), or to generate into.")
}
