import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// `tokenpin help [COMMAND]`: the main help or one command's, as text or JSON.
struct HelpCommand: Command {
    var topic: String?

    func run(_ context: Context) -> ExitCode {
        HelpCommand.print(topic, json: context.console.json)
    }

    /// Prints help; needs no configuration, so it works when the configuration is broken.
    static func print(_ topic: String?, json: Bool = false) -> ExitCode {
        let console = Console.plain(json: json)
        guard let topic else {
            if json {
                console.emit([
                    ("ok", .bool(true)), ("version", .string(tokenpinVersion)),
                    ("options", Help.optionsJSON(Options.global)),
                    ("commands", .array(Help.program.subcommandGroups.flatMap(\.subcommands).map(Help.json))),
                    (
                        "exitCodes",
                        .array(
                            ExitCode.allCases.map {
                                .object([("code", .int(Int($0.rawValue))), ("meaning", .string($0.meaning))])
                            })
                    ),
                ])
            } else {
                Console.write(1, Help.main)
            }
            return .success
        }
        guard let entry = Help.entry(topic) else {
            return console.fail(
                .usage, errorCode: "usage",
                message: "unknown command '\(topic)'"
                    + Suggestion.didYouMean(topic, among: Help.program.subcommands.map(\.name)),
                hint: "see 'tokenpin help'")
        }
        if json {
            console.emit([
                ("ok", .bool(true)), ("command", Help.json(entry)),
                ("options", Help.optionsJSON(Options.global)),
            ])
        } else {
            Console.write(1, Help.text(for: entry))
        }
        return .success
    }
}

extension HelpCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "help", group: CommandGroup.machine, abstract: "Show help for tokenpin or one of its commands.",
        arguments: [Positional("command", values: .subcommand, isOptional: true)])

    static let traits: CommandTraits = [.recordless]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) -> (any Command)? {
        HelpCommand(topic: parsed.arguments.first)
    }
}

/// Help in the argument-parser layout (OVERVIEW, USAGE, OPTIONS, the commands by group), as text or JSON, made from
/// the declarations in `Program.tokenpin`.
enum Help {
    static var program: Program { .tokenpin }

    static func optionsJSON(_ options: [Option]) -> JSONValue {
        .array(options.map { .object([("name", .string($0.label)), ("abstract", .string($0.help))]) })
    }

    static func json(_ command: Subcommand) -> JSONValue {
        .object([
            ("name", .string(command.name)), ("group", .optional(command.group)),
            ("abstract", .string(command.abstract)),
            ("usage", .string(program.usage(for: command))), ("options", optionsJSON(command.options)),
            ("discussion", .optional(command.discussion)),
        ])
    }

    /// The command called `name` (or an alias of it).
    static func entry(_ name: String) -> Subcommand? { program.subcommand(named: name) }

    /// The usage line of a command, or of tokenpin itself.
    static func usage(_ command: String?) -> String { program.usage(for: command.flatMap(entry)) }

    /// `tokenpin help`: options, commands and the exit codes.
    static var main: String { program.helpText() }

    /// `tokenpin help COMMAND`.
    static func text(for command: Subcommand) -> String { program.helpText(for: command) }
}
