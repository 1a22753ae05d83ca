import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// One command: parsed into a plain value with one `run()`.
package protocol Command {
    func run(_ context: Context) -> ExitCode
}

/// A command of tokenpin's command line, declared in its one file in Sources/CLI/Commands (named after the type:
/// Verify.swift declares `VerifyCommand`): its declaration, the options only it takes (`extension Options`), how it
/// is made from the parsed command line, and its `run`. The Registries build plugin lists every such file in
/// `Commands.all`, so adding a command is adding its file. Sendable, so that list of its types may be a `static let`.
protocol DeclaredCommand: Sendable {
    /// Its declaration: what parsing, help, usage lines and completions read.
    static var declaration: Subcommand { get }

    /// The command for the parsed command line (the parser has checked its options and values); a usage error for
    /// what the declaration cannot say (which flags go together). Nil when this executable does not run it:
    /// tokenpin's `bench` and `demo`, which it hands to tokenpin-bench before this is asked.
    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)?

    /// What it needs of the record, the configuration and tokenpind, which the mode and the configuration are
    /// chosen by before it runs; none for most.
    static var traits: CommandTraits { get }
}

extension DeclaredCommand {
    static var traits: CommandTraits { [] }
}

/// What a command needs of the record, the configuration and tokenpind (`DeclaredCommand.traits`): what
/// `ModeSelection` and `Context` ask instead of its name.
struct CommandTraits: OptionSet, Sendable {
    let rawValue: Int

    /// It touches no record, so its flags say nothing about where one is: local mode, whatever they say (help,
    /// completions, demo).
    static let recordless = CommandTraits(rawValue: 1 << 0)
    /// It changes nothing: a broken system configuration file is a warning for it, not the end (the daemon keeps
    /// serving with the settings it had, and the command still says what is there).
    static let readOnly = CommandTraits(rawValue: 1 << 1)
    /// It reads the local record and tokenpind's side alike (import, doctor): a flag naming a local resource does
    /// not choose local mode.
    static let bothSides = CommandTraits(rawValue: 1 << 2)
    /// It reads the configuration itself, file by file (doctor): a `--config` file's store settings are not refused
    /// on the way to tokenpind.
    static let readsConfigurationItself = CommandTraits(rawValue: 1 << 3)
}

/// tokenpin's commands: `all` is written at build time from the files in Sources/CLI/Commands (Registries).
enum Commands {
    /// The command called `name` or one of its aliases.
    static func named(_ name: String) -> (any DeclaredCommand.Type)? {
        all.first { $0.declaration.name == name || $0.declaration.aliases.contains(name) }
    }

    /// The traits of the command the command line gives; none without one.
    static func traits(of parsed: ParsedCommandLine) -> CommandTraits {
        parsed.command.flatMap(named)?.traits ?? []
    }
}

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

    /// Why a command that only tokenpind can run (`import`, `watch`) cannot run here.
    var noDaemon: ServiceError {
        if case .unreachable(let socket, let evidence) = mode {
            return .serviceUnavailable(Backend.unreachableMessage(socket: socket, evidence: evidence))
        }
        return .serviceUnavailable(
            "tokenpind is not running (no socket at \(DaemonClient.defaultSocketPath)); "
                + "start it, or name its socket with --socket")
    }

    /// Prints a service error and returns its exit code.
    package func fail(_ error: ServiceError, extra: [(String, JSONValue)] = []) -> ExitCode {
        if case .notEnrolled = error, daemon != nil, (try? store.exists()) == true,
            (try? store.load(user: user)) != nil
        {
            // First contact with tokenpind while the record is still local: enrolling again is not the answer.
            return console.fail(
                .notEnrolled, errorCode: error.code,
                message:
                    "tokenpind has no record for \(user), but there is a local one (\(store.recordPath(for: user)))",
                hint: "move it into tokenpind with `tokenpin import`", extra: extra)
        }
        var extra = extra
        if case .passwordDelayed(let seconds) = error { extra.append(("retryAfter", .int(seconds))) }
        return console.fail(
            ExitCode(error), errorCode: error.code, message: error.message, hint: hint(for: error), extra: extra)
    }

    /// Prints a verification's error (`verify`, `derive`); in `--json` with `tokenFailure` when the token was tried
    /// and not used.
    func failVerification(_ error: ServiceError) -> ExitCode {
        guard console.json, let failure = interaction.tokenFailure else { return fail(error) }
        return fail(error, extra: [("tokenFailure", tokenFailureJSON(failure, askCard: false))])
    }

    /// `tokenFailure` for `--json`: why the token was not used, and the card PIN's tries left as the card reported
    /// them in the `tokenFailed` event; failing that, when the card refused (`askCard`), as it reports them now.
    /// A card that went away is not probed again (null).
    func tokenFailureJSON(_ reason: String, askCard: Bool) -> JSONValue {
        let tries =
            interaction.tokenFailureCardTries
            ?? (askCard ? (try? backend.perform(Operation.Status()))?.token?.cardPINTriesLeft : nil)
        return .object([("reason", .string(reason)), ("cardTriesLeft", .optional(tries))])
    }

    func hint(for error: ServiceError) -> String? {
        switch error {
        case .store(let store) where store.code == .corrupt || store.code == .unknownVersion:
            return "the file was left as it is; restore it from a backup or move it away and enrol again"
        case .store(let store) where store.code == .insecure:
            // Each hint answers what the error found, not the most common case.
            if store.detail.contains("symlink") {
                return "tokenpin never follows a symbolic link to a record or store; replace the link with the real "
                    + "directory or file"
            }
            if store.detail.contains("belongs to uid") {
                return
                    "a record or store owned by someone else could be swapped under you; give it to \(user) (chown), "
                    + "or use another --store"
            }
            if store.detail.contains("not a directory") || store.detail.contains("not a regular file") {
                return "move what is at \(store.path) away; tokenpin makes the store directory itself"
            }
            return "tokenpin refuses a store others can write and a record others can read or write; fix the mode "
                + "(chmod 700 DIR, chmod 600 FILE)"
        case .policyViolation(let rule):
            return interaction.allowed(rule).map { "allowed: \($0)" }
        case .input where !options.global.pinStdin:
            return "run it in a terminal, or pass the lines with --pin-stdin"
        default:
            return nil
        }
    }

    /// A remote or other attempt's fields for `--json` (`class`, `service`, `invokerUID`, `invoker`, `rhost`, `at`).
    func otherAttemptPairs(_ attempt: OtherAttempts.Attempt?, invoker: String?) -> [(String, JSONValue)] {
        guard let attempt else { return [] }
        return [
            ("class", .string(attempt.class.rawValue)), ("service", .optional(attempt.service)),
            ("invokerUID", .int(Int(attempt.invokerUID))), ("invoker", .optional(invoker)),
            ("rhost", .optional(attempt.rhost)), ("at", .optional(attempt.at)),
        ]
    }

    /// Prints the outcome of a verification-like operation and returns its exit code.
    func finish(
        _ report: VerifyReport, success: String, event successEvent: Event? = nil,
        extra: [(String, JSONValue)] = []
    ) -> ExitCode {
        let counter = report.counter
        var object: [(String, JSONValue)] = []
        let code = report.exitCode
        switch report.outcome {
        case .verified(let method):
            let event = successEvent ?? .verified(method: method)
            object =
                [("ok", .bool(true)), ("event", .string(event.name)), ("method", .string(method.rawValue))] + extra
            console.say(console.out.success(success))
        case .rejected(let remaining, let lastTry):
            object = [("ok", .bool(false)), ("event", .string("wrongPIN"))]
            console.note(
                console.err.error(successEvent == .reset ? "Wrong recovery key." : "Wrong PIN. ")
                    + (successEvent == .reset ? "" : CLIInteraction.triesText(remaining: remaining, lastTry: lastTry)))
            _ = lastTry
        case .locked:
            object = [("ok", .bool(false)), ("event", .string("locked"))]
            console.note(
                console.err.error("PIN locked: ")
                    + "no tries left. Unlock it with `tokenpin reset` and the recovery key.")
        case .delayed(let seconds):
            object = [("ok", .bool(false)), ("event", .string("delayed")), ("retryAfter", .int(seconds))]
            console.note(console.err.warning("Too many wrong entries: ") + "try again in \(seconds) s.")
        case .tokenRejected(let reason):
            object = [("ok", .bool(false)), ("event", .string("tokenFailed"))]
            console.note(console.err.error("Token not verified: ") + reason)
        }
        object.insert(("outcome", .string(report.outcome.protocolName)), at: 2)
        if let counter {
            object += [
                ("remaining", .int(counter.remaining)), ("lastTry", .bool(counter.remaining == 1)),
                ("locked", .bool(counter.isLocked)),
            ]
        }
        if let failure = report.tokenFailure, console.json {
            let refused = if case .tokenRejected = report.outcome { true } else { false }
            object.append(("tokenFailure", tokenFailureJSON(failure, askCard: refused)))
        }
        if report.countedApart { object.append(("counter", .string("others"))) }
        if let notice = report.otherAttempts {
            object.append(
                (
                    "otherAttempts",
                    .object(
                        [("failures", .int(notice.failures))]
                            + otherAttemptPairs(notice.last, invoker: notice.invoker))
                ))
        }
        if code != .success {
            object.append(("error", Self.verificationError(report.outcome, reset: successEvent == .reset, code: code)))
        }
        console.emit(object)
        return code
    }

    /// The `error` object of a verification that did not succeed: its code, message and exit code.
    private static func verificationError(_ outcome: VerifyOutcome, reset: Bool, code: ExitCode) -> JSONValue {
        let message: String
        switch outcome {
        case .locked: message = "the PIN is locked"
        case .delayed(let seconds): message = "failure delay: try again in \(seconds) s"
        case .tokenRejected(let reason): message = reason
        default: message = reset ? "wrong recovery key" : "wrong PIN"
        }
        let errorCode: String
        switch outcome {
        case .locked: errorCode = "locked"
        case .delayed: errorCode = "delayed"
        case .tokenRejected: errorCode = "token-rejected"
        default: errorCode = reset ? "wrong-recovery-key" : "wrong-pin"
        }
        return .object([
            ("code", .string(errorCode)), ("message", .string(message)), ("exitCode", .int(Int(code.rawValue))),
        ])
    }
}
