import FoundationEssentials
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

extension Context {
    /// What refuses a verification (`verify`, `derive`) before anything is asked, or nil.
    func verificationRefusal(method: VerificationMethod?, command: String) -> ExitCode? {
        // Scripts never have their lines guessed: with the token enabled a line could be the card PIN or the
        // PIN, and a PIN sent to the card as its card PIN costs card tries (three block it).
        if method == nil, !interaction.asksOnTerminal,
            let types = try? backend.perform(Operation.Types()),
            types.contains(where: { $0.type == .token && $0.enabled })
        {
            return console.fail(
                .usage, errorCode: "usage",
                message:
                    "the token is enabled: without a terminal, \(command) needs --method pin|token to know what the line is",
                hint: "echo \"$PIN\" | " + hints.command(adding: ["--method", "pin", "--pin-stdin"])
                    + " (or --method token for the card PIN)")
        }
        // Which card the card PIN may go to (`--serial` naming another than the bound one) is the verifier's to
        // decide (PINService.verificationPlan), in this process and in tokenpind alike.
        return nil
    }
}

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

/// `tokenpin reset`: the recovery key, then a new PIN twice; clears the lock.
struct ResetCommand: Command {
    func run(_ context: Context) -> ExitCode {
        do {
            let report = try context.backend.reset(context.interaction)
            return context.finish(report, success: "New PIN set; the lock is cleared.", event: .reset)
        } catch {
            return context.fail(error)
        }
    }
}
