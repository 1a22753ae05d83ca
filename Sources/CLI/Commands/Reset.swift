import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

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

extension ResetCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "reset", group: CommandGroup.pinAndRecord, abstract: "Set a new PIN with the recovery key and clear the lock.",
        discussion: "Prompts: recovery key, new PIN, new PIN again. A wrong recovery key is counted.\n"
            + "Root with --user NAME (through tokenpind): new PIN, new PIN again, without the recovery key; "
            + "the record is made anew (a new recovery key, shown once; the token binding goes) and "
            + "tokenpind logs it.")

    /// `reset`, or for root naming a user `AdministratorResetCommand`: no recovery key, a new record.
    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? {
        if parsed.global.user != nil && CurrentProcess.effectiveUserID == 0 { return AdministratorResetCommand() }
        return ResetCommand()
    }
}

/// `tokenpin --user NAME reset` as root: a new PIN without the recovery key. Nothing of the old record opens the
/// vault key, so it is a new record with a new recovery key (shown once, for the user) and no token binding.
struct AdministratorResetCommand: Command {
    func run(_ context: Context) -> ExitCode {
        let before = try? context.backend.perform(Operation.Status())
        let result: EnrolmentResult
        do {
            result = try context.backend.administratorReset(context.interaction)
        } catch {
            return context.fail(error)
        }
        let hadToken = before?.types.contains { $0.type == .token && $0.enabled } ?? false
        if context.console.json {
            EnrolCommand(recoveryKeyFile: nil).showRecoveryKey(result.recoveryKeyText, fd: 2, context: context)
        } else {
            Console.write(
                1,
                "New PIN set for \(context.user) without the recovery key (logged by tokenpind). The old recovery "
                    + "key\(hadToken ? " and the token binding" : "") no longer open anything"
                    + (hadToken ? " (bind the card again: `tokenpin toggle token on`)" : "") + ".\n"
                    + "The record is new, so are its application keys: what `tokenpin derive` opened before "
                    + "(ssh keys, backups, age files) no longer opens with its keys.\n"
                    + "Give \(context.user) the new recovery key.\n")
            EnrolCommand(recoveryKeyFile: nil).showRecoveryKey(result.recoveryKeyText, fd: 1, context: context)
        }
        context.console.emit([
            ("ok", .bool(true)), ("event", .string("reset")), ("method", .string("administrator")),
            ("user", .string(context.user)),
            ("recoveryKeyShownOn", .string(context.console.json ? "stderr" : "stdout")),
            ("kdf", kdfJSON(result.kdf)), ("record", .string(result.recordPath)),
            ("removed", .array(hadToken ? [.string("token")] : [])), ("applicationKeysReplaced", .bool(true)),
        ])
        return .success
    }
}
