import TokenpinArguments

/// `tokenpin bench`: declared here, so that tokenpin's help, usage lines and completions show it and tokenpin hands
/// it over; run by tokenpin-bench (`BenchRun`, which links the benchmark code), which makes it from its program.
enum BenchCommand: DeclaredCommand {
    static let declaration = Subcommand(
        "bench", group: CommandGroup.machine,
        abstract: "Measure the key derivation and the verify latency on this machine.",
        options: [Options.iterations, Options.token, Options.app, Options.tokenURI, Options.pkcs11Module])

    /// tokenpin-bench's bench; nil in tokenpin, which hands `bench` over (BenchHandOver) before asking.
    static func make(_ parsed: ParsedCommandLine, program: CLIProgram) throws(UsageError) -> (any Command)? {
        try program.makeCommand(parsed)
    }
}

extension Options {
    package static let iterations = Option.value(
        "--iterations", valueName: "n", help: "Verifications to time (default 5).")
    package static let token = Option.flag(
        "--token",
        help:
            "Time token verifies against the same APDUs sent bare, or PKCS#11 calls made bare with --app pkcs11 "
            + "(prompts: card PIN, admin PIN).")
}
