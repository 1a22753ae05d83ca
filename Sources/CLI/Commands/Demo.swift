import TokenpinArguments

/// `tokenpin demo`: declared here, so that tokenpin's help and completions show it and tokenpin hands it over; run
/// by tokenpin-bench (`DemoRun`, with the simulated card), which makes it from its program.
enum DemoCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "demo", group: CommandGroup.machine,
        abstract: "Walk through every flow in a temporary store, narrating each step.")

    static let traits: CommandTraits = [.recordless]

    /// tokenpin-bench's demo; nil in tokenpin, which hands `demo` over (BenchHandOver) before asking.
    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try program.makeCommand(parsed)
    }
}
