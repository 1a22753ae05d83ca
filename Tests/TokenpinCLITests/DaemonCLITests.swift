import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A tokenpind of its own for one test: a private socket, state directory and configuration, the simulated card.
final class TestDaemon {
    let process = Process()
    let socket: String
    let state: String

    static var binary: String { (CLI.binary as NSString).deletingLastPathComponent + "/tokenpind" }
    /// tokenpind serves root and other users; these tests run it as the user running them, which must be root.
    static var isAvailable: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: binary) }

    /// `simulated`: the daemon's own simulated card (`--reader sim`); else the PC/SC readers of the sandbox.
    init(_ cli: CLI, config: String = "", arguments: [String] = [], simulated: Bool = true, log: String? = nil) throws {
        socket = cli.directory + "/daemon.sock"
        state = cli.directory + "/daemon-state"
        let configFile = cli.directory + "/daemon.conf"
        try ("kdf-memory-mib = 8\nkdf-passes = 1\n" + config).write(
            toFile: configFile, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments =
            [
                "--socket", socket, "--state-dir", state, "--config", configFile, "--no-readers",
            ] + (simulated ? ["--reader", "sim"] : []) + arguments
        process.standardOutput = FileHandle.nullDevice
        if let log {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: log)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: socket) { usleep(25_000) }
        try #require(FileManager.default.fileExists(atPath: socket), "tokenpind did not start")
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

@Suite(.enabled(if: TestDaemon.isAvailable)) struct DaemonCLITests {
    @Test func enrolReportsTheRecordAsWrittenByTheDaemon() throws {
        let cli = CLI(config: "retries-max = 5\n")
        let daemon = try TestDaemon(cli, config: "retries-max = 3\n")
        let enrol = try cli.run(
            ["--socket", daemon.socket, "--json", "enrol", "--pin-stdin"], input: "482916\n482916\n")
        #expect(enrol.status == 0, "\(enrol.stdout) \(enrol.stderr)")
        #expect(enrol.json["remaining"] as? Int == 3, "\(enrol.stdout)")
        #expect(enrol.json["max"] as? Int == 3)
    }

    @Test func standardInputEndingIsSeventyFourThroughTheDaemon() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let ended = try cli.run(socket + ["--json", "verify", "--pin-stdin"], input: "")
        #expect(ended.status == 74, "\(ended.stdout)")
        #expect((ended.json["error"] as? [String: Any])?["code"] as? String == "input")

        let bind = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        let guessed = try cli.run(socket + ["verify", "--pin-stdin"], input: "482916\n")
        #expect(guessed.status == 2 && guessed.stderr.contains("--method"), "\(guessed.stderr)")
        let token = try cli.run(socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "")
        #expect(token.status == 74, "\(token.stdout)")
        let wrong = try cli.run(socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "000000\n")
        #expect(wrong.status == 1)
        #expect((wrong.json["tokenFailure"] as? [String: Any])?["cardTriesLeft"] as? Int == 2, "\(wrong.stdout)")
    }

    /// `--serial` naming another card than the bound one is refused by tokenpind's verifier (the CLI no longer asks
    /// `types()` to check it first): exit 6, nothing asked, no card PIN try spent.
    @Test func aSerialNamingAnotherCardIsRefusedByTheDaemonsVerifier() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let bind = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        let other = try cli.run(
            socket + ["--json", "--serial", "99999999", "verify", "--method", "token", "--pin-stdin"], input: "")
        #expect(other.status == 6, "\(other.stdout) \(other.stderr)")
        let error = other.json["error"] as? [String: Any]
        #expect(error?["code"] as? String == "token-unavailable", "\(other.stdout)")
        #expect(
            (error?["message"] as? String)?.contains("--serial 99999999 is not the card bound to") == true,
            "\(other.stdout)")
        let token = try cli.run(socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(token.status == 0, "the card PIN still has all its tries: \(token.stdout)")
    }

    @Test func aLocalRecordIsPointedToImportAndImportedOnce() throws {
        let cli = CLI()
        try cli.enrol()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        let first = try cli.run(socket + ["verify", "--pin-stdin"], input: "482916\n")
        #expect(first.status == 4)
        #expect(first.stderr.contains("`tokenpin --socket \(daemon.socket) --pin-stdin import`"), "\(first.stderr)")
        #expect(!first.stderr.contains("tokenpin enrol"))
        let moved = try cli.run(socket + ["import"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdout.contains("`tokenpin --socket \(daemon.socket) change`"), "\(moved.stdout)")
        let again = try cli.run(socket + ["import"])
        #expect(again.status == 2)
        #expect(again.stderr.contains("already in tokenpind"), "\(again.stderr)")
        #expect(try cli.run(socket + ["verify", "--pin-stdin"], input: "482916\n").status == 0)
    }

    /// Issue 19: `watch` says on stderr when the daemon has confirmed the subscription, and an event right after
    /// that line is always shown (before, the tests slept a second and hoped).
    @Test func watchSaysWhenSubscribedAndShowsTheNextEvent() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        let own = cli.start(socket + ["--user", user, "watch"])
        let everyone = cli.start(socket + ["watch"])
        let quiet = cli.start(socket + ["--quiet", "watch"])
        #expect(own.waitForLine(containing: "Watching") == "Watching tokenpind's events for \(user).")
        #expect(everyone.waitForLine(containing: "Watching") == "Watching tokenpind's events for every user.")
        #expect(try cli.run(socket + ["verify", "--pin-stdin"], input: "000000\n").status == 1)
        #expect(own.waitForLine(containing: "\"event\":\"wrongPIN\"", on: .stdout) != nil)
        #expect(everyone.waitForLine(containing: "\"event\":\"wrongPIN\"", on: .stdout) != nil)
        // The quiet one says nothing, so it is known to be subscribed once it shows an event.
        var quietSaw = false
        for _ in 0..<30 where !quietSaw {
            #expect(try cli.run(socket + ["verify", "--pin-stdin"], input: "482916\n").status == 0)
            quietSaw = quiet.waitForLine(containing: "\"event\":\"verified\"", on: .stdout, seconds: 1) != nil
        }
        #expect(quietSaw)
        daemon.stop()
        let results = try [own, everyone, quiet].map { try $0.finish() }
        #expect(results.map(\.status) == [69, 69, 69])
        #expect(!results[2].stderr.contains("Watching"), "\(results[2].stderr)")
        #expect(results[0].stderr.hasPrefix("Watching tokenpind's events for \(user).\n"), "\(results[0].stderr)")
    }

    @Test func watchStampsEventsAndExitsSixtyNineWhenTheDaemonGoes() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let watch = cli.start(socket + ["watch"])
        // An event before the subscription is lost; one after this line is always shown.
        #expect(watch.waitForLine(containing: "Watching tokenpind's events for") != nil)
        #expect(try cli.run(socket + ["verify", "--pin-stdin"], input: "482916\n").status == 0)
        #expect(watch.waitForLine(containing: "\"event\":\"verified\"", on: .stdout) != nil)
        daemon.stop()
        let result = try watch.finish()
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("tokenpind"))
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains("\"verified\"") })
        #expect(line.hasPrefix("{\"event\":\"verified\",\"time\":\""), "\(line)")
    }
}

@Suite(.enabled(if: TestDaemon.isAvailable)) struct TokenFailedEventTests {
    @Test func theEventAndTheJSONCarryTheCardsTriesLeft() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let bind = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        let watch = cli.start(socket + ["watch"])
        #expect(watch.waitForLine(containing: "Watching tokenpind's events for") != nil)
        let wrong = try cli.run(socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "000000\n")
        #expect(wrong.status == 1, "\(wrong.stdout) \(wrong.stderr)")
        #expect((wrong.json["tokenFailure"] as? [String: Any])?["cardTriesLeft"] as? Int == 2, "\(wrong.stdout)")
        #expect(watch.waitForLine(containing: "\"event\":\"tokenFailed\"", on: .stdout) != nil)
        daemon.stop()
        let result = try watch.finish()
        let line = try #require(
            result.stdout.split(separator: "\n").first { $0.contains("\"tokenFailed\"") },
            "\(result.stdout)")
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(event["cardTriesLeft"] as? Int == 2, "\(line)")
    }
}

@Suite struct UserOptionTests {
    @Test(arguments: [["--user", "root", "status"], ["--local", "--user", "root", "status"]])
    func userWithoutADaemonIsUsage(arguments: [String]) throws {
        let cli = CLI()
        let result = try cli.run(arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--user root acts through tokenpind"))
    }
}
