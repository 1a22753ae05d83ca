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
