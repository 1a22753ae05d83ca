import TokenpinArguments
import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// Help in the argument-parser layout (OVERVIEW, USAGE, OPTIONS, SUBCOMMANDS), as text or JSON, generated from
/// the declarations in `Program.tokenpin`.
enum Help {
    static var program: Program { .tokenpin }

    static func optionsJSON(_ options: [Option]) -> JSONValue {
        .array(options.map { .object([("name", .string($0.label)), ("abstract", .string($0.help))]) })
    }

    static func json(_ command: Subcommand) -> JSONValue {
        .object([
            ("name", .string(command.name)), ("abstract", .string(command.abstract)),
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
