import TokenpinArguments
import TokenpinCLI
import TokenpinService

// tokenpin-bench: the CLI of Sources/CLI with `bench` and `demo`, the commands that link the benchmark code and the
// simulated card. `tokenpin bench` and `tokenpin demo` run it in their place (BenchHandOver), with the same
// arguments; run directly, it takes tokenpin's command line.
runTokenpin(
    CLIProgram(makeCommand: { parsed throws(UsageError) -> (any Command)? in
        switch parsed.command {
        case "bench": try BenchCommand(parsing: parsed)
        case "demo": DemoCommand()
        default: nil
        }
    }))
