import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

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
