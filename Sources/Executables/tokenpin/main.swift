import TokenpinCLI

// The production CLI: every command in Sources/CLI, but `bench` and `demo`, which tokenpin-bench beside it runs in
// its place (BenchHandOver), so that this executable links neither the benchmarks nor the simulated card they use.
runTokenpin(
    CLIProgram(handOver: { parsed in
        BenchHandOver.isHandedOver(parsed)
            ? BenchHandOver.run(parsed, arguments: Array(CommandLine.arguments.dropFirst())) : nil
    }))
