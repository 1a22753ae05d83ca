import Foundation
import Testing
import TokenpinTestSupport

/// Issue 25, item 6: with two cards present, `toggle token on` through tokenpind asks which one, as local mode does
/// (the daemon relays the choice to the terminal); a script is told to name one, as in local mode. In the PC/SC
/// suite, so that it runs alone in this suite's readers.
extension PCSCEndToEndTests {
    @Test(.enabled(if: TestDaemon.isAvailable)) func severalCardsThroughTheDaemonTheChoiceIsRelayed() throws {
        let cli = CLI.pcsc()
        let first = try VirtualCard(index: 0, state: cli.directory + "/first.json", serial: "0000AAA1", cli: cli)
        let second = try VirtualCard(index: 1, state: cli.directory + "/second.json", serial: "0000AAA2", cli: cli)
        defer {
            try? first.pull(cli)
            try? second.pull(cli)
        }
        let daemon = try TestDaemon(cli, config: "reader = tokenpin vpcd 0 *\n", simulated: false)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)

        let script = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"], input: "482916\n")
        #expect(script.status == 2, "\(script.stderr)")
        #expect(script.stderr.contains("choose one with --reader or --serial"), "\(script.stderr)")

        let (screen, status) = try TerminalTests().type(
            [
                "wait:Which card?", "wait:Number: ", "2\\r", "wait:tokenpin PIN for ", "482916\\r",
                "wait:Card PIN", "123456\\r", "wait:Admin PIN", "12345678\\r",
            ], cli, socket + ["toggle", "token", "on", "--generate-key", "--yes"], local: false)
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("0000AAA1") && screen.contains("0000AAA2"), "both cards are offered: \(screen)")
        let types = try cli.run(socket + ["--json", "types"]).json["types"] as? [[String: Any]]
        #expect(types?.first { $0["type"] as? String == "token" }?["serial"] as? String == "FFFE0000AAA2")
    }
}
