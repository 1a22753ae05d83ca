import TokenpinCLI

// The production CLI: every command in Sources/CLI, but `bench`, `demo` and the simulated card (`--reader sim`),
// which tokenpin-bench beside it runs in its place (BenchHandOver), so that this executable links neither the
// benchmarks nor the simulator.
runTokenpin(
    CLIProgram(handOver: { parsed in
        BenchHandOver.reason(parsed).map {
            BenchHandOver.run(parsed, reason: $0, arguments: Array(CommandLine.arguments.dropFirst()))
        }
    }))
