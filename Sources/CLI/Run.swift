import FoundationEssentials
import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService
import TokenpinSystem

/// Turns the parsed command line into a command: the declared command of its name makes it (`DeclaredCommand.make`),
/// or says what the declarations cannot (which flags go together). The parser has checked the options, their values
/// and the arguments, and lets no undeclared name through.
func makeCommand(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
    guard let name = parsed.command else { return nil }
    guard let declared = Commands.named(name) else {
        throw UsageError(message: "unknown command '\(name)'", command: nil)
    }
    guard let made = try declared.make(parsed, program: program) else {
        // Only tokenpin-bench runs bench and demo; tokenpin hands them to it before this is asked.
        throw UsageError(message: "'\(name)' is not run by this program; tokenpin-bench runs it", command: name)
    }
    return made
}

/// What sets apart the executables that share this CLI (the declarations, `Context`, every command's code):
/// `tokenpin` hands `bench`, `demo` and the simulated card (`--reader sim`) to tokenpin-bench beside it
/// (`BenchHandOver`), and tokenpin-bench runs them.
package struct CLIProgram {
    /// The commands this executable runs beyond the shared ones, made from the parsed command line (the parser
    /// has checked it); nil for a name it does not run.
    package var makeCommand: (ParsedCommandLine) throws(UsageError) -> (any Command)?
    /// Runs the command line in another program in this process's place, before anything is read: returns only
    /// when that program cannot start, with the exit code of the error it reported; nil: it runs here.
    package var handOver: (ParsedCommandLine) -> ExitCode?
    /// Makes the in-process simulated card's readers for `--reader sim` from the card's state file and the
    /// environment (its profile); nil where the simulator is not linked (tokenpin hands `--reader sim` over).
    package var simulatedCards: SimulatedCards?

    package typealias SimulatedCards = (_ stateFile: String, _ environment: [String: String]) throws(ConfigError) ->
        any CardReaders

    package init(
        makeCommand: @escaping (ParsedCommandLine) throws(UsageError) -> (any Command)? = { _ in nil },
        handOver: @escaping (ParsedCommandLine) -> ExitCode? = { _ in nil },
        simulatedCards: SimulatedCards? = nil
    ) {
        self.makeCommand = makeCommand
        self.handOver = handOver
        self.simulatedCards = simulatedCards
    }
}

func runMain(_ program: CLIProgram) -> ExitCode {
    let argv = Array(CommandLine.arguments.dropFirst())
    let parsed: ParsedCommandLine
    do {
        parsed = try ArgumentParser.parse(argv)
    } catch {
        return failUsage(error, json: argv.contains("--json"))
    }
    if let shown = showVersionOrHelp(parsed) { return shown }
    if let failed = program.handOver(parsed) { return failed }
    let command: any Command
    do {
        guard let made = try makeCommand(parsed, program: program) else { return .usage }
        command = made
    } catch {
        return failUsage(error, json: parsed.global.json)
    }
    // Help reads no configuration: it must work when the configuration is what is broken.
    if let help = command as? HelpCommand { return HelpCommand.print(help.topic, json: parsed.global.json) }
    if let completions = command as? CompletionsCommand { return CompletionsCommand.print(completions.shell) }
    let mode: Backend
    do {
        mode = try ModeSelection.decide(parsed, environment: ProcessEnvironment.current)
    } catch {
        return failUsage(error, json: parsed.global.json)
    }
    if let problem = PKCS11Options(parsed.values).problem(
        application: parsed.values.value(Options.app), local: mode.isLocal)
    {
        return failUsage(problem, hint: "see 'tokenpin help \(parsed.command ?? "")'", json: parsed.global.json)
    }
    // doctor reads the configuration itself, file by file: it must work when the configuration is what is broken.
    if command is DoctorCommand { return DoctorCommand.run(parsed, mode: mode) }
    let context: Context
    do {
        context = try Context.make(parsed, mode: mode, simulatedCards: program.simulatedCards)
    } catch {
        return failConfiguration(error, json: parsed.global.json)
    }
    if let refusal = refuseUserWithoutDaemon(parsed, mode: mode, console: context.console) { return refusal }
    return command.run(context)
}

/// Answers `--version`, `--help` and a command line without a command (the main help on stderr, exit 2); nil
/// when there is a command to run. Reads no configuration.
func showVersionOrHelp(_ parsed: ParsedCommandLine) -> ExitCode? {
    if parsed.wantsVersion && parsed.command == nil {
        if parsed.global.json {
            Console.write(
                1, JSONValue.object([("ok", .bool(true)), ("version", .string(tokenpinVersion))]).jsonText + "\n")
        } else {
            Console.write(1, "tokenpin \(tokenpinVersion)\n")
        }
        return .success
    }
    if parsed.wantsHelp || parsed.command == nil {
        if parsed.command == nil && !parsed.wantsHelp {
            Console.write(2, Help.main)
            return .usage
        }
        return HelpCommand.print(parsed.command, json: parsed.global.json)
    }
    return nil
}

/// Reports a usage error (exit 2) on a plain console, before any configuration (and so any colour) is read.
func failUsage(_ message: String, hint: String, json: Bool) -> ExitCode {
    Console.plain(json: json).fail(.usage, errorCode: "usage", message: message, hint: hint)
}

/// Reports what the parser or the command's own checks refused, with the command's usage line as the hint.
func failUsage(_ error: UsageError, json: Bool) -> ExitCode {
    failUsage(error.message, hint: "usage: \(Help.usage(error.command)); see 'tokenpin help'", json: json)
}

/// Reports a configuration that cannot be loaded (exit 78) on a plain console, since its colours are unknown; an
/// unknown key gets the nearest known one as a suggestion.
func failConfiguration(_ error: ConfigError, json: Bool) -> ExitCode {
    var message = error.description
    if error.message.hasPrefix("unknown key `"), let key = error.message.split(separator: "`").dropFirst().first {
        message += Suggestion.didYouMean(String(key), among: Configuration.keys)
    }
    return Console.plain(json: json).fail(.configuration, errorCode: "configuration", message: message)
}

/// Refuses `--user` in local mode (exit 2): another user's record lives only in tokenpind's store, so without
/// the daemon `--user` would name nothing. Nil when the command may run.
func refuseUserWithoutDaemon(_ parsed: ParsedCommandLine, mode: Backend, console: Console) -> ExitCode? {
    guard let user = parsed.global.user, mode.isLocal else { return nil }
    return console.fail(
        .usage, errorCode: "usage",
        message: "--user \(user) acts through tokenpind, and there is no daemon here"
            + (parsed.global.local ? " (--local)" : " (no socket at \(DaemonClient.defaultSocketPath))"),
        hint: "start tokenpind, or name its socket with --socket")
}

/// Runs the command line as `program` and exits with its code.
package func runTokenpin(_ program: CLIProgram) -> Never {
    // No core files and not dumpable, before any secret or Argon2 memory exists (as tokenpind does).
    guard CoreDumps.disable() else {
        Console.write(2, "error: cannot disable core dumps, so a PIN could end up in a core file\n")
        CurrentProcess.exit(ExitCode.ioError.rawValue)
    }
    try? Signals.ignore(.brokenPipe)  // a write to a closed pipe or socket fails (EPIPE), not the process
    CurrentProcess.exit(runMain(program).rawValue)
}
