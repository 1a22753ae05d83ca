import TokenpinArguments
import TokenpinCore
import TokenpinService

/// `tokenpin verify`: the PIN (the token first once it is enabled).
struct VerifyCommand: Command {
    var method: VerificationMethod?

    func run(_ context: Context) -> ExitCode {
        if let refusal = context.verificationRefusal(method: method, command: "verify") { return refusal }
        do {
            let report = try context.backend.verify(context.interaction, method: method)
            let success: String
            switch report.outcome {
            case .verified(.token): success = "Verified with the token."
            case .verified(.both): success = "Verified with the PIN and the token."
            default: success = "PIN verified."
            }
            return context.finish(report, success: success)
        } catch {
            return context.failVerification(error)
        }
    }
}

extension VerifyCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "verify", group: CommandGroup.verifyAndKeys,
        abstract: "Verify with the token (when enabled and present) or the PIN.",
        discussion: "Prompts: card PIN when the token is used, else PIN; mode = both asks PIN, then card PIN.\n"
            + "A wrong PIN reports the tries left; the last one says so; at 0 the PIN locks.\n"
            + "A missing or failing token falls back to the PIN when fallback = allow; it costs no PIN try.",
        options: [Options.verifyMethod])

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? {
        VerifyCommand(method: parsed.values.value(Options.verifyMethod).flatMap(VerificationMethod.init(rawValue:)))
    }
}

extension Options {
    static let verifyMethod = Option.value(
        "--method", valueName: "method", allowedValues: ["pin", "token"],
        help: "Use only this authentication type, without fallback.")
}
