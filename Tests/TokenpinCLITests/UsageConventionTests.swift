import Foundation
import Testing

/// One convention in every executable: a usage error exits 2 with `error:` on stderr and nothing on stdout;
/// `--help` exits 0 with help generated from the declarations.
@Suite struct UsageConventionTests {
    static let directory = (CLI.binary as NSString).deletingLastPathComponent

    /// Runs `name` (a binary next to tokenpin) with `arguments`, no standard input.
    func run(_ name: String, _ arguments: [String]) throws -> CLI.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.directory + "/" + name)
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        return try CLI.Running(process: process, stdout: stdout, stderr: stderr).finish()
    }

    static func built(_ name: String) -> Bool { FileManager.default.isExecutableFile(atPath: directory + "/" + name) }

    @Test(arguments: [
        (["--bogus"], "unknown option '--bogus'"),
        (["--socket"], "missing value for '--socket'"),
        (["--state-dir="], "empty value for '--state-dir'"),
        (["--reader", "pcsc"], "--reader must be sim, not 'pcsc'"),
        (["--debug=yes"], "'--debug' takes no value"),
        (["--no-reader"], "unknown option '--no-reader'; did you mean '--no-readers'?"),
        (["serve"], "unexpected argument 'serve'"),
    ])
    func tokenpindUsageErrorsExitTwo(arguments: [String], message: String) throws {
        try #require(Self.built("tokenpind"))
        let result = try run("tokenpind", arguments)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("tokenpind: error: \(message)"), "\(result.stderr)")
        #expect(result.stderr.contains("see 'tokenpind --help'"))
        #expect(result.stdout.isEmpty)
    }

    @Test func tokenpindHelpIsGenerated() throws {
        try #require(Self.built("tokenpind"))
        let result = try run("tokenpind", ["--help"])
        #expect(result.status == 0)
        for text in ["OVERVIEW:", "USAGE: tokenpind [--socket <path>]", "OPTIONS:", "  --reader sim ", "SIGNALS:"] {
            #expect(result.stdout.contains(text), "\(text)")
        }
    }

    @Test(
        .enabled(if: built("tokenpin-sim")),
        arguments: [
            (["--port", "1"], "--state <file> is required"),
            (["--state", "x", "--bogus"], "unknown option '--bogus'"),
            (["--state", "x", "--port"], "missing value for '--port'"),
            (["--state", "x", "--port", "0"], "--port needs a number from 1 to 65535"),
            (["--state", "x", "--stats=1"], "'--stats' takes no value"),
        ])
    func simulatorUsageErrorsExitTwo(arguments: [String], message: String) throws {
        let result = try run("tokenpin-sim", arguments)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("error: \(message)"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test(.enabled(if: built("tokenpin-sim"))) func simulatorHelpIsGenerated() throws {
        let result = try run("tokenpin-sim", ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: tokenpin-sim --state <file> [--port <n>]"))
        #expect(result.stdout.contains("  --fault <rule> "))
    }

    @Test func tokenpinUsageErrorsNameTheCommandsUsage() throws {
        let result = try CLI().run(["toggle", "token", "sideways"], plain: true)
        #expect(result.status == 2)
        #expect(result.stderr.contains("error: unknown state 'sideways'; expected on or off"), "\(result.stderr)")
        #expect(result.stderr.contains("hint: usage: tokenpin toggle <type> on|off [--generate-key] [--yes]"))
    }

    @Test func versionAnswersOnlyWithoutACommand() throws {
        let short = try CLI().run(["-V"], plain: true)
        #expect(short.status == 0 && short.stdout.hasPrefix("tokenpin "))
        let extra = try CLI().run(["verify", "extra", "--version"], plain: true)
        #expect(extra.status == 2)
        #expect(extra.stderr.contains("unexpected argument 'extra'"), "\(extra.stderr)")
    }

    @Test func helpBeatsAMissingArgument() throws {
        let result = try CLI().run(["toggle", "--help"], plain: true)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("USAGE: tokenpin toggle <type> on|off"))
    }

    @Test func theAliasTakesTheCommandsOptions() throws {
        let cli = CLI()
        let keyFile = cli.directory + "/key"
        let result = try cli.run(["enroll", "--pin-stdin", "--recovery-key-file", keyFile], input: "482916\n482916\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: keyFile))
    }
}
