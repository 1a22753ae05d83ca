import Foundation
import Testing
import TokenpinTestSupport

/// `pin-check = PROGRAM` through the built binary: the refusal shown once, bad programs exit 78, and through
/// tokenpind only the daemon's own configuration names the program.
@Suite struct SiteCheckCLITests {
    static let year = String(Calendar(identifier: .gregorian).component(.year, from: Date()))
    static let refusal = "ends in the current year (\(year))"

    /// Writes an executable script into `cli`'s directory: by default the one that refuses PINs ending in the
    /// current year.
    static func script(in cli: CLI, _ body: String? = nil) throws -> String {
        try executableScript(body ?? currentYearPINCheck, in: cli.directory, prefix: "pin-check")
    }

    /// A sandbox whose configuration names a `pin-check` script with `body`.
    static func sandbox(_ body: String? = nil) throws -> CLI {
        let cli = CLI()
        let path = try script(in: cli, body)
        try ("kdf-memory-mib = 8\nkdf-passes = 1\npin-check = \(path)\npin-check-timeout = 1\n")
            .write(toFile: cli.config, atomically: true, encoding: .utf8)
        return cli
    }

    @Test func aRefusalIsShownOnceWithTheProgramsReason() throws {
        let cli = try Self.sandbox()
        let pin = "739" + Self.year
        let result = try cli.run(["enrol", "--pin-stdin"], input: "\(pin)\n\(pin)\n")
        #expect(result.status == 5, "\(result.stderr)")
        #expect(result.stderr.contains("PIN refused: \(Self.refusal) (rule site-check)"), "\(result.stderr)")
        #expect(result.stderr.components(separatedBy: "PIN refused").count == 2, "once: \(result.stderr)")
        #expect(!result.stderr.contains(pin))
        let json = try cli.run(["--json", "enrol", "--pin-stdin"], input: "\(pin)\n\(pin)\n")
        #expect(json.status == 5)
        #expect((json.json["error"] as? [String: Any])?["code"] as? String == "policy", "\(json.stdout)")
        #expect(!json.stdout.contains(pin))
        #expect(cli.record.isEmpty, "nothing saved")
        #expect(try cli.run(["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
    }

    @Test(arguments: [
        ("exit 2", "exited with status 2"), ("kill -SEGV $$", "killed by signal"),
        ("sleep 30", "did not answer within 1 s"),
    ])
    func aProgramWithoutAVerdictIsAConfigurationError(body: String, message: String) throws {
        let cli = try Self.sandbox(body)
        let result = try cli.run(["enrol", "--pin-stdin"], input: "482916\n482916\n")
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(cli.record.isEmpty, "nothing saved")
    }

    @Test func aMissingOrRelativeProgramIsAConfigurationError() throws {
        let cli = CLI(config: "pin-check = /nonexistent/pin-check\n")
        let missing = try cli.run(["enrol", "--pin-stdin"], input: "482916\n482916\n")
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("/nonexistent/pin-check"), "\(missing.stderr)")
        #expect(cli.record.isEmpty)
        let relative = CLI(config: "pin-check = bin/pin-check\n")
        let result = try relative.run(["status"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("tokenpin.conf:3: pin-check must be the absolute path"), "\(result.stderr)")
    }

    @Test(.enabled(if: TestDaemon.isAvailable))
    func throughTheDaemonOnlyItsOwnConfigurationNamesTheProgram() throws {
        // The user's configuration names a program that refuses everything: the daemon never runs it.
        let cli = try Self.sandbox("echo refused by the user's own file; exit 1")
        let daemonCheck = try Self.script(in: cli)
        let daemon = try TestDaemon(cli, config: "enrol-auth = none\npin-check = \(daemonCheck)\n")
        let socket = ["--socket", daemon.socket]
        let pin = "739" + Self.year
        let refused = try cli.run(socket + ["enrol", "--pin-stdin"], input: "\(pin)\n\(pin)\n")
        #expect(refused.status == 5, "\(refused.stderr)")
        #expect(refused.stderr.contains("PIN refused: \(Self.refusal) (rule site-check)"), "\(refused.stderr)")
        #expect(refused.stderr.components(separatedBy: "PIN refused").count == 2, "once: \(refused.stderr)")
        let enrolled = try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n")
        #expect(enrolled.status == 0, "the user's own pin-check is not the daemon's: \(enrolled.stderr)")
    }
}
