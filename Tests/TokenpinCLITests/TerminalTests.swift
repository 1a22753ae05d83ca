import Foundation
import Testing

/// PIN entry on a real pseudo-terminal: echo off, a dot per character, Backspace, Ctrl-U, Ctrl-C, Ctrl-D.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
struct TerminalTests {
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/keyboard.py").path
    }

    /// Types `keys` into `tokenpin ARGS` on a pseudo-terminal, with `environment` added to the runner's; returns
    /// what the terminal showed and the exit status.
    /// With `local: false` the store and configuration are not named (`--store` means local mode): for a run
    /// through a test's tokenpind.
    func type(
        _ keys: [String], _ cli: CLI, _ arguments: [String], environment: [String: String] = [:], local: Bool = true
    ) throws -> (screen: String, status: Int32) {
        let process = Process()
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments =
            [Self.script, keys.joined(separator: "|"), "--", CLI.binary]
            + (local ? ["--store", cli.store, "--config", cli.config] : []) + ["--no-color"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let status =
            output.split(separator: "\n").last.flatMap { Int32($0.replacingOccurrences(of: "EXIT ", with: "")) } ?? -1
        return (output, status)
    }

    @Test func dotsBackspaceAndEnter() throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try type(["wait:tokenpin PIN for ", "48291X", "\\x7f", "6", "\\r"], cli, ["verify"])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("left): ••••••"))
        #expect(screen.contains("\u{8} \u{8}"), "backspace erases a dot")
        #expect(!screen.contains("48291"), "the PIN is never echoed")
        #expect(screen.contains("PIN verified."))
    }

    @Test func controlUClearsTheLine() throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try type(["wait:tokenpin PIN for ", "999", "\\x15", "482916", "\\r"], cli, ["verify"])
        #expect(status == 0, "\(screen)")
        #expect(cli.remaining == 5)
    }

    @Test(arguments: ["\\x03", "\\x04", "\\x1b"])
    func cancellingExitsOneThirtyAndCountsNothing(key: String) throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try type(["wait:tokenpin PIN for ", "4829", key], cli, ["verify"])
        #expect(status == 130, "\(screen)")
        #expect(screen.contains("cancelled"))
        #expect(cli.remaining == 5)
    }

    @Test func enrolAsksTwiceAndReAsksAfterAPolicyRefusal() throws {
        let cli = CLI()
        let keys = [
            "wait:New tokenpin PIN for ", "123456\\r", "wait:rule sequence", "wait:New tokenpin PIN for ", "482916\\r",
            "wait:New tokenpin PIN again: ", "482916\\r",
        ]
        let (screen, status) = try type(keys, cli, ["enrol"])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("PIN refused: the PIN is a sequence (rule sequence)"))
        #expect(screen.contains("Recovery key"))
    }
}
