import TokenpinArguments
import TokenpinCore
import TokenpinService

/// `tokenpin change`: the current PIN, then the new PIN twice.
struct ChangeCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            let report = try context.backend.change(context.interaction)
            return context.finish(report, success: "PIN changed.", event: .changed)
        } catch {
            return context.fail(error)
        }
    }
}

extension ChangeCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "change", group: CommandGroup.pinAndRecord, abstract: "Change the PIN.",
        discussion: "Prompts: current PIN, new PIN, new PIN again. The token is never used here and stays enabled.")

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? { ChangeCommand() }
}
