import TokenpinArguments
import TokenpinCLI
import TokenpinCore
import TokenpinService
import TokenpinSimulatedReaders

// tokenpin-bench: the CLI of Sources/CLI with `bench` and `demo`, the commands that link the benchmark code, and
// the simulated card (`--reader sim`). tokenpin runs it in its place for them (BenchHandOver), with the same
// arguments; run directly, it takes tokenpin's command line.
runTokenpin(
    CLIProgram(
        makeCommand: { parsed throws(UsageError) -> (any Command)? in
            switch parsed.command {
            case "bench": try BenchRun(parsing: parsed)
            case "demo": DemoRun()
            default: nil
            }
        },
        simulatedCards: { stateFile, environment throws(ConfigError) in
            SimulatorCards.shared(
                stateFile: stateFile, profile: try SimulatorCards.requestedProfile(environment: environment))
        }))
