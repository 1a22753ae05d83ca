import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The terminal behaves: escape sequences do nothing, signals put the terminal back, nothing typed leaks.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
struct TerminalKeysTests {
    let terminal = TerminalTests()

    @Test(arguments: ["\\x1b[D", "\\x1b[C", "\\x1b[3~", "\\x1b[H", "\\x1bOH", "\\x1b[1;5D"])
    func escapeSequencesAreIgnored(sequence: String) throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try terminal.type(
            ["wait:tokenpin PIN for ", "4829", sequence, "16", "\\r"], cli, ["verify"])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("left): ••••••\r\n") || screen.contains("left): ••••••\n"), "\(screen)")
        #expect(!screen.contains("16"), "nothing typed is echoed")
        #expect(screen.contains("PIN verified."))
        #expect(screen.contains("TERMIOS echo=1 icanon=1"))
    }

    @Test func escapeAloneStillCancelsAndTheRestIsDiscarded() throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try terminal.type(["wait:tokenpin PIN for ", "4829", "\\x1b"], cli, ["verify"])
        #expect(status == 130, "\(screen)")
        #expect(screen.contains("TERMIOS echo=1 icanon=1"))
        #expect(cli.remaining == 5)
    }

    @Test(
        arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143)), (SIGHUP, Int32(129)), (SIGQUIT, Int32(131))]
            as [(Int32, Int32)])
    func signalsDuringAPromptRestoreTheTerminal(signal: Int32, status expected: Int32) throws {
        let cli = CLI()
        try cli.enrol()
        let (screen, status) = try terminal.type(["wait:tokenpin PIN for ", "4829", "kill:\(signal)"], cli, ["verify"])
        #expect(status == expected, "\(screen)")
        #expect(screen.contains("TERMIOS echo=1 icanon=1"), "the terminal is back in its modes: \(screen)")
        #expect(cli.remaining == 5, "nothing was counted")
    }

    /// The notice comes after a second. Here it comes at once (TOKENPIN_SLOW_STEP_MS, read by debug builds) and
    /// the derivation takes about a second, so the outcome does not depend on the machine's speed: a derivation
    /// of one second against a notice after one second failed in CI.
    @Test func aSlowDerivationSaysSoOnlyInTextMode() throws {
        let cli = CLI(config: "kdf-memory-mib = 256\nkdf-passes = 8\n")
        try cli.enrol()
        let now = ["TOKENPIN_SLOW_STEP_MS": "0"]
        let (screen, status) = try terminal.type(
            ["wait:tokenpin PIN for ", "482916\\r"], cli, ["verify"], environment: now)
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("Checking the PIN"), "\(screen)")
        for flag in ["--json", "--quiet"] {
            let (quiet, status) = try terminal.type(
                ["wait:tokenpin PIN for ", "482916\\r"], cli, [flag, "verify"], environment: now)
            #expect(status == 0, "\(quiet)")
            #expect(!quiet.contains("Checking the PIN"), "\(flag): \(quiet)")
        }
    }
}
