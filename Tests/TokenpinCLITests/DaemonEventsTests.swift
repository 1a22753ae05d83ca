import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, item 7: every lock, reset, change, unenrol and card-PIN failure through tokenpind is an event (`watch`)
/// and a log line; off the journal each line carries its time.
@Suite(.enabled(if: TestDaemon.isAvailable)) struct DaemonEventsTests {
    @Test func eachIsAnEventAndALogLine() throws {
        let cli = CLI()
        let log = cli.directory + "/daemon.log"
        let daemon = try TestDaemon(cli, config: "retries-max = 2\n", log: log)
        let socket = ["--socket", daemon.socket]
        let watch = cli.start(socket + ["watch"])
        // An event before the subscription is not shown to it; every one after this line is.
        #expect(watch.waitForLine(containing: "Watching tokenpind's events for") != nil)
        let keyFile = cli.directory + "/key"
        #expect(
            try cli.run(socket + ["enrol", "--pin-stdin", "--recovery-key-file", keyFile], input: "482916\n482916\n")
                .status == 0)
        let key = try String(contentsOfFile: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        for _ in 0..<2 { _ = try cli.run(socket + ["verify", "--pin-stdin"], input: "000000\n") }
        #expect(try cli.run(socket + ["reset", "--pin-stdin"], input: "\(key)\n739154\n739154\n").status == 0)
        #expect(try cli.run(socket + ["change", "--pin-stdin"], input: "739154\n615283\n615283\n").status == 0)
        #expect(
            try cli.run(
                socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
                input: "615283\n123456\n12345678\n"
            ).status == 0)
        #expect(try cli.run(socket + ["verify", "--method", "token", "--pin-stdin"], input: "000000\n").status == 1)
        #expect(
            try cli.run(socket + ["token", "change-pin", "--pin-stdin"], input: "000000\n654321\n654321\n").status == 1)
        #expect(try cli.run(socket + ["unenrol", "--method", "pin", "--pin-stdin"], input: "615283\n").status == 0)
        #expect(watch.waitForLine(containing: "\"event\":\"unenrolled\"", on: .stdout) != nil)
        kill(watch.process.processIdentifier, SIGKILL)  // a test runner may start children with SIGTERM blocked
        let events = try watch.finish().stdout
        for event in ["locked", "reset", "changed", "tokenFailed", "cardPINFailed", "unenrolled"] {
            #expect(events.contains("\"event\":\"\(event)\""), "watch saw \(event): \(events)")
        }
        daemon.stop()
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        for message in [
            "PIN locked", "PIN reset with the recovery key", "PIN changed", "token not used", "card PIN not changed",
            "unenrolled",
        ] {
            #expect(lines.contains { $0.contains(message) }, "the log says \(message): \(lines)")
        }
        let stamped = lines.filter {
            $0.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"#, options: .regularExpression) != nil
        }
        #expect(!lines.isEmpty && stamped.count == lines.count, "every line off the journal has its time: \(lines)")
        for secret in ["482916", "739154", "615283", key] { #expect(!lines.joined().contains(secret)) }
    }
}
