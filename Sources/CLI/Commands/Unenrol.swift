import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// Whether this command acts as the administrator: root naming a user with `--user` (through tokenpind).
func actsAsAdministrator(_ context: Context) -> Bool {
    context.options.global.user != nil && CurrentProcess.effectiveUserID == 0
}

/// `tokenpin unenrol [--method pin|token] [--yes]`: removes the record, after a verification; root with
/// `--user NAME` removes it after a typed confirmation instead.
struct UnenrolCommand: Command {
    var method: VerificationMethod?
    var assumeYes = false

    func run(_ context: Context) -> ExitCode {
        let administrator = actsAsAdministrator(context)
        let status: StatusReport
        do {
            status = try context.backend.perform(Operation.Status())
        } catch {
            return context.fail(error)
        }
        guard status.enrolled else { return context.fail(.notEnrolled(user: context.user, path: status.recordPath)) }
        let card = status.types.first { $0.type == .token && $0.enabled }?.serial
        var removed = ["pin", "recovery"]
        var what = "the PIN and the recovery key"
        if let card {
            removed.append("token")
            what = "the PIN, the recovery key and the token binding (card \(cardLabel(serial: card)))"
        }
        let sentence = "\(what) of \(context.user) (\(status.recordPath))"
        if administrator && !assumeYes {
            do {
                let question =
                    "This removes \(sentence); \(context.user) then logs in with a password only, "
                    + "until a new `tokenpin enrol`."
                guard try context.interaction.confirmTyped(question, word: context.user) else {
                    return context.fail(.cancelled)
                }
            } catch {
                return context.fail(error)
            }
        }
        if !administrator, method == nil, card != nil, !context.interaction.asksOnTerminal {
            // As for verify: a script's line must never reach the card as its card PIN by a guess.
            return context.console.fail(
                .usage, errorCode: "usage",
                message: "the token is enabled: without a terminal, unenrol needs --method pin|token to know what "
                    + "the line is",
                hint: context.hints.command(adding: ["--method", "pin"]))
        }
        do {
            let report = try context.backend.unenrol(
                context.interaction, method: method, administrator: administrator)
            if case .locked = report.outcome, context.mode.isLocal {
                context.console.note(
                    "The record is locked: `tokenpin reset` with the recovery key unlocks it; without the key, the "
                        + "record is yours in local mode: remove \(status.recordPath) to start over.")
            }
            return context.finish(
                report,
                success: "Removed \(sentence). To use tokenpin again: `tokenpin enrol` (a new record: new application "
                    + "keys for `tokenpin derive`; what the old ones opened stays shut).",
                event: .unenrolled,
                extra: [
                    ("user", .string(context.user)), ("record", .string(status.recordPath)),
                    ("removed", .array(removed.map(JSONValue.string))),
                ])
        } catch {
            return context.fail(error)
        }
    }
}

extension UnenrolCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "unenrol", aliases: ["unenroll"], group: CommandGroup.pinAndRecord,
        abstract: "Remove the record: the PIN, the recovery key, the token.",
        discussion: "Prompts: as verify (the PIN, or the card PIN); a wrong PIN counts and removes nothing.\n"
            + "Root with --user NAME (through tokenpind): no verification; the user's name typed to go "
            + "ahead, or --yes.",
        options: [Options.unenrolMethod, Options.unenrolYes])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? {
        UnenrolCommand(
            method: parsed.values.value(Options.unenrolMethod).flatMap(VerificationMethod.init(rawValue:)),
            assumeYes: parsed.values.isSet(Options.unenrolYes))
    }
}

extension Options {
    static let unenrolMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Verify with this type before the record goes (the same as verify's).")
    static let unenrolYes = Option.flag(
        "--yes", help: "Root with --user: remove the record without the typed confirmation.")
}
