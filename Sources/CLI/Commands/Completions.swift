import TokenpinArguments
import TokenpinService

/// `tokenpin completions bash|zsh|fish`: shell completion scripts generated from the declarations, so they
/// offer exactly the commands, options and values the help shows.
struct CompletionsCommand: Command {
    var shell: Shell

    func run(_ context: Context) -> ExitCode { Self.print(shell) }

    static func print(_ shell: Shell) -> ExitCode {
        Console.write(1, Program.tokenpin.completionScript(for: shell))
        return .success
    }
}

extension CompletionsCommand {
    /// The command from its arguments: the shell, which must be one the scripts are written for.
    init(parsing arguments: [String], command: String) throws(UsageError) {
        guard let shell = arguments.first.flatMap(Shell.init(rawValue:)) else {
            throw UsageError(message: "expected bash, zsh or fish", command: command)
        }
        self.init(shell: shell)
    }
}

extension CompletionsCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "completions", group: CommandGroup.machine, abstract: "Print a shell completion script for bash, zsh or fish.",
        discussion: "Installed as /usr/share/bash-completion/completions/tokenpin, "
            + "/usr/share/zsh/vendor-completions/_tokenpin and /usr/share/fish/vendor_completions.d/tokenpin.fish.",
        arguments: [Positional("shell", values: .oneOf(Shell.allCases.map(\.rawValue)))])

    static let traits: CommandTraits = [.recordless]

    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try CompletionsCommand(parsing: parsed.arguments, command: declaration.name)
    }
}
