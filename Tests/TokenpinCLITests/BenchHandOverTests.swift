import Foundation
import Testing
import TokenpinTestSupport

/// `tokenpin bench` and `tokenpin demo` run in tokenpin-bench, the executable beside tokenpin, which tokenpin runs
/// in its place with the same arguments; so the production CLI links neither the benchmarks nor the simulated card.
@Suite struct BenchHandOverTests {
    /// A copy of tokenpin alone in a directory of its own: no tokenpin-bench beside it.
    static func tokenpinAlone() throws -> String {
        let path = temporaryDirectory("tokenpin-alone", mode: 0o755) + "/tokenpin"
        try FileManager.default.copyItem(atPath: CLI.binary, toPath: path)
        return path
    }

    @Test(arguments: [["demo"], ["bench", "--iterations", "1"]])
    func withoutTokenpinBenchTheCommandSaysWhereItLooked(arguments: [String]) throws {
        let path = try Self.tokenpinAlone()
        let directory = (path as NSString).deletingLastPathComponent
        let result = try CLI().run([], shell: ([path] + arguments).joined(separator: " "))
        #expect(result.status == 69)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr.hasPrefix(
                "error: `tokenpin \(arguments[0])` runs in tokenpin-bench, which cannot be run from "
                    + "\(directory)/tokenpin-bench (No such file or directory)\n"),
            "\(result.stderr)")
        #expect(result.stderr.contains("hint: tokenpin-bench is installed beside tokenpin"))
    }

    @Test func withoutTokenpinBenchJSONNamesTheError() throws {
        let path = try Self.tokenpinAlone()
        let result = try CLI().run([], shell: "\(path) --json demo")
        #expect(result.status == 69)
        let error = result.json["error"] as? [String: Any]
        #expect(result.json["ok"] as? Bool == false)
        #expect(error?["code"] as? String == "service-unavailable")
        #expect(error?["exitCode"] as? Int == 69)
    }

    /// The simulated card is in tokenpin-bench too: `--reader sim` (or `TOKENPIN_READER=sim`) runs there.
    @Test(arguments: [
        (["--reader", "sim", "status"], [String: String](), "the simulated card (--reader sim)"),
        (["status"], ["TOKENPIN_READER": "sim"], "the simulated card (TOKENPIN_READER=sim)"),
    ])
    func withoutTokenpinBenchTheSimulatedCardSaysWhereItLooked(
        arguments: [String], environment: [String: String], reason: String
    ) throws {
        let path = try Self.tokenpinAlone()
        let directory = (path as NSString).deletingLastPathComponent
        let result = try CLI().run(
            [], environment: environment, shell: ([path] + arguments).joined(separator: " "))
        #expect(result.status == 69)
        #expect(
            result.stderr.hasPrefix(
                "error: \(reason) runs in tokenpin-bench, which cannot be run from "
                    + "\(directory)/tokenpin-bench (No such file or directory)\n"),
            "\(result.stderr)")
        // Without the simulated card the command stays in tokenpin (here: no record, exit 4).
        let types = try CLI().run([], shell: "\(path) --local types")
        #expect(!types.stderr.contains("tokenpin-bench"), "\(types.stderr)")
    }

    /// Help and usage errors need no tokenpin-bench: `tokenpin` itself prints them, as before.
    @Test func helpAndUsageErrorsOfBenchAndDemoStayInTokenpin() throws {
        let path = try Self.tokenpinAlone()
        let help = try CLI().run([], shell: "\(path) bench --help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("--iterations"))
        let demoHelp = try CLI().run([], shell: "\(path) help demo")
        #expect(demoHelp.status == 0)
        let unknown = try CLI().run([], shell: "\(path) bench --no-such-flag")
        #expect(unknown.status == 2)
    }

    /// Through tokenpin-bench the command's own usage errors, output and exit code are what they always were.
    @Test func tokenpinBenchAnswersForTokenpin() throws {
        let cli = CLI()
        let range = try cli.run(["bench", "--iterations", "0"])
        #expect(range.status == 2)
        #expect(range.stderr.hasPrefix("error: --iterations must be a number from 1 to 1000\n"), "\(range.stderr)")
        let alone = try cli.run(["bench", "--app", "piv"])
        #expect(alone.status == 2)
        #expect(alone.stderr.hasPrefix("error: --app applies to `bench --token`\n"), "\(alone.stderr)")
    }

    /// The production CLI links neither the benchmark commands, the demo nor the simulator (they are in
    /// tokenpin-bench); it has only their declarations (TokenpinCLI's `BenchCommand` and `DemoCommand`), for help
    /// and the hand-over.
    @Test func tokenpinLinksNoBenchmarkCode() throws {
        let symbols = try Self.symbols(of: CLI.binary)
        try #require(!symbols.isEmpty, "nm found no symbols in \(CLI.binary)")
        for name in [
            "8BenchRun", "7DemoRun", "8Narrator", "17TokenBenchScratch", "17TokenpinSimulator",
            "24TokenpinSimulatedReaders",
        ] {
            #expect(!symbols.contains { $0.contains(name) }, "tokenpin links \(name)")
        }
        #expect(symbols.contains { $0.contains("11TokenpinCLI12BenchCommand") }, "the declaration is tokenpin's")
        let bench = (CLI.binary as NSString).deletingLastPathComponent + "/tokenpin-bench"
        #expect(try Self.symbols(of: bench).contains { $0.contains("8BenchRun") })
    }

    /// The symbol names `nm` lists for the executable at `path`.
    static func symbols(of path: String) throws -> [Substring] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self).split(separator: "\n")
    }
}
