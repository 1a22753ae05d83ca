import FoundationEssentials
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
                let wasOn =
                    mode == .both
                    && ((try? context.backend.types())?.contains { $0.type == .token && $0.enabled } ?? false)
                let report = try context.backend.enableToken(
                    context.interaction, generateKey: generateKey,
                    assumeYes: assumeYes, mode: mode, slot: slot)
                let serial = (try? context.backend.types())?.first { $0.type == .token }?.serial
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
