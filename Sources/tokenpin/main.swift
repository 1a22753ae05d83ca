import Foundation
import TokenpinCore
import TokenpinProtocol
import TokenpinService
#if canImport(Glibc)
import Glibc
#endif

/// Parses the command line into a command, or a usage error.
func makeCommand(_ parsed: ParsedCommandLine) throws(UsageError) -> (any Command)? {
    guard let name = parsed.command else { return nil }
    func method() throws(UsageError) -> VerificationMethod? {
        guard let value = parsed.options["--method"] else { return nil }
        guard value == "pin" || value == "token" else {
            throw UsageError(message: "--method must be pin or token, not '\(value)'", command: name)
        }
        return VerificationMethod(rawValue: value)
    }
    func noArguments() throws(UsageError) {
        guard parsed.arguments.isEmpty else {
            throw UsageError(message: "unexpected argument '\(parsed.arguments[0])'", command: name)
        }
    }
    switch name {
    case "enrol", "enroll":
        try noArguments()
        return EnrolCommand(recoveryKeyFile: parsed.options["--recovery-key-file"])
    case "verify":
        try noArguments()
        return VerifyCommand(method: try method())
    case "change":
        try noArguments()
        return ChangeCommand()
    case "reset":
        try noArguments()
        return ResetCommand()
    case "types":
        try noArguments()
        return TypesCommand()
    case "status":
        try noArguments()
        return StatusCommand()
    case "toggle":
        guard parsed.arguments.count >= 2 else {
            throw UsageError(message: "missing \(parsed.arguments.isEmpty ? "<type>" : "on|off")", command: name)
        }
        guard parsed.arguments.count == 2 else {
            throw UsageError(message: "unexpected argument '\(parsed.arguments[2])'", command: name)
        }
        guard let type = AuthenticationType(rawValue: parsed.arguments[0]) else {
            throw UsageError(message: "unknown type '\(parsed.arguments[0])' (types: pin, token)", command: name)
        }
        let state = parsed.arguments[1]
        guard state == "on" || state == "off" else {
            throw UsageError(message: "expected on or off, not '\(state)'", command: name)
        }
        if type == .pin && (parsed.flags.contains("--generate-key") || parsed.flags.contains("--yes")) {
            throw UsageError(message: "--generate-key and --yes apply to `toggle token on`", command: name)
        }
        if parsed.options["--method"] != nil && (type != .token || state != "off") {
            throw UsageError(message: "--method applies to `toggle token off`", command: name)
        }
        var mode: VerificationMode?
        if let value = parsed.options["--mode"] {
            guard type == .token && state == "on" else {
                throw UsageError(message: "--mode applies to `toggle token on`", command: name)
            }
            guard let chosen = VerificationMode(rawValue: value) else {
                throw UsageError(message: "--mode must be either or both, not '\(value)'", command: name)
            }
            mode = chosen
        }
        return ToggleCommand(type: type, on: state == "on", generateKey: parsed.flags.contains("--generate-key"),
                             assumeYes: parsed.flags.contains("--yes"), method: try method(), mode: mode)
    case "readers":
        try noArguments()
        return ReadersCommand()
    case "import":
        try noArguments()
        return ImportCommand()
    case "watch":
        try noArguments()
        return WatchCommand()
    case "token":
        guard let action = parsed.arguments.first else {
            throw UsageError(message: "missing change-pin or unblock", command: name)
        }
        guard parsed.arguments.count == 1 else {
            throw UsageError(message: "unexpected argument '\(parsed.arguments[1])'", command: name)
        }
        switch action {
        case "change-pin":
            guard !parsed.flags.contains("--admin") else {
                throw UsageError(message: "--admin applies to `token unblock`", command: name)
            }
            return TokenCommand(action: .changePIN, admin: false)
        case "unblock": return TokenCommand(action: .unblock, admin: parsed.flags.contains("--admin"))
        default: throw UsageError(message: "unknown token action '\(action)' (change-pin, unblock)", command: name)
        }
    case "bench":
        try noArguments()
        var iterations = 5
        if let value = parsed.options["--iterations"] {
            guard let number = Int(value), (1...1000).contains(number) else {
                throw UsageError(message: "--iterations must be a number from 1 to 1000", command: name)
            }
            iterations = number
        }
        return BenchCommand(iterations: iterations, token: parsed.flags.contains("--token"))
    case "demo":
        try noArguments()
        return DemoCommand()
    case "help":
        return HelpCommand(topic: parsed.arguments.first)
    case "completions":
        guard let name = parsed.arguments.first else { throw UsageError(message: "missing bash, zsh or fish", command: "completions") }
        guard parsed.arguments.count == 1 else {
            throw UsageError(message: "unexpected argument '\(parsed.arguments[1])'", command: "completions")
        }
        guard let shell = CompletionsCommand.Shell(rawValue: name) else {
            throw UsageError(message: "no completions for '\(name)' (bash, zsh, fish)", command: "completions")
        }
        return CompletionsCommand(shell: shell)
    default:
        throw UsageError(message: "unknown command '\(name)'"
            + Suggestion.didYouMean(name, among: Help.commands.map(\.name) + ["enroll"]), command: nil)
    }
}

struct HelpCommand: Command {
    var topic: String?

    func run(_ context: Context) -> ExitCode {
        HelpCommand.print(topic, json: context.console.json)
    }

    /// Prints help; needs no configuration, so it works when the configuration is broken.
    static func print(_ topic: String?, json: Bool = false) -> ExitCode {
        let console = Console(json: json, quiet: false, out: Style(enabled: false, appearance: Appearance()),
                              err: Style(enabled: false, appearance: Appearance()))
        guard let topic else {
            if json {
                console.emit([("ok", .bool(true)), ("version", .string(tokenpinVersion)),
                              ("options", Help.optionsJSON(Help.globalOptions)),
                              ("commands", .array(Help.commands.map(Help.json))),
                              ("exitCodes", .array(ExitCode.allCases.map {
                                  .object([("code", .int(Int($0.rawValue))), ("meaning", .string($0.meaning))])
                              }))])
            } else {
                Console.write(1, Help.main + "\n")
            }
            return .success
        }
        guard let entry = Help.entry(topic) else {
            return console.fail(.usage, errorCode: "usage", message: "unknown command '\(topic)'"
                + Suggestion.didYouMean(topic, among: Help.commands.map(\.name)), hint: "see 'tokenpin help'")
        }
        if json {
            console.emit([("ok", .bool(true)), ("command", Help.json(entry)), ("options", Help.optionsJSON(Help.globalOptions))])
        } else {
            Console.write(1, Help.text(for: entry))
        }
        return .success
    }
}

func runMain() -> ExitCode {
    let argv = Array(CommandLine.arguments.dropFirst())
    let parsed: ParsedCommandLine
    do {
        parsed = try ArgumentParser.parse(argv)
    } catch {
        let json = argv.contains("--json")
        let console = Console(json: json, quiet: false, out: Style(enabled: false, appearance: Appearance()),
                              err: Style(enabled: false, appearance: Appearance()))
        let usage = error.command.flatMap { Help.entry($0)?.usage } ?? "tokenpin [<options>] <subcommand>"
        return console.fail(.usage, errorCode: "usage", message: error.message, hint: "usage: \(usage); see 'tokenpin help'")
    }
    if parsed.wantsVersion && parsed.command == nil {
        if parsed.global.json {
            Console.write(1, JSONValue.object([("ok", .bool(true)), ("version", .string(tokenpinVersion))]).serialized + "\n")
        } else {
            Console.write(1, "tokenpin \(tokenpinVersion)\n")
        }
        return .success
    }
    if parsed.wantsHelp || parsed.command == nil {
        if parsed.command == nil && !parsed.wantsHelp {
            Console.write(2, Help.main + "\n")
            return .usage
        }
        return HelpCommand.print(parsed.command, json: parsed.global.json)
    }
    let command: any Command
    do {
        guard let made = try makeCommand(parsed) else { return .usage }
        command = made
    } catch {
        let console = Console(json: parsed.global.json, quiet: false, out: Style(enabled: false, appearance: Appearance()),
                              err: Style(enabled: false, appearance: Appearance()))
        let usage = error.command.flatMap { Help.entry($0)?.usage } ?? "tokenpin [<options>] <subcommand>"
        return console.fail(.usage, errorCode: "usage", message: error.message, hint: "usage: \(usage); see 'tokenpin help'")
    }
    // Help reads no configuration: it must work when the configuration is what is broken.
    if let help = command as? HelpCommand { return HelpCommand.print(help.topic, json: parsed.global.json) }
    if let completions = command as? CompletionsCommand { return CompletionsCommand.print(completions.shell) }
    let context: Context
    do {
        context = try Context.make(parsed)
    } catch {
        let console = Console(json: parsed.global.json, quiet: false, out: Style(enabled: false, appearance: Appearance()),
                              err: Style(enabled: false, appearance: Appearance()))
        var message = error.description
        if error.message.hasPrefix("unknown key `"), let key = error.message.split(separator: "`").dropFirst().first {
            message += Suggestion.didYouMean(String(key), among: Configuration.keys)
        }
        return console.fail(.configuration, errorCode: "configuration", message: message)
    }
    if let user = parsed.global.user, context.daemon == nil {
        // Another user's record lives only in tokenpind's store; without it, --user would name nothing.
        return context.console.fail(
            .usage, errorCode: "usage",
            message: "--user \(user) acts through tokenpind, and there is no daemon here"
                + (parsed.global.local ? " (--local)" : " (no socket at \(DaemonClient.defaultSocketPath))"),
            hint: "start tokenpind, or name its socket with --socket")
    }
    return command.run(context)
}

// No core files and not dumpable, before any secret or Argon2 memory exists (as tokenpind does).
guard CoreDumps.disable() else {
    Console.write(2, "error: cannot disable core dumps, so a PIN could end up in a core file\n")
    exit(ExitCode.ioError.rawValue)
}
signal(SIGPIPE, SIG_IGN)
exit(runMain().rawValue)
