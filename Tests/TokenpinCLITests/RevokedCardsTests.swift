import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25: `/etc/tokenpin/revoked.d/*` lists card identities that tokenpind refuses at once: no PIN is sent to
/// them, `status` says so, and a reload (SIGHUP) picks up a new file.
@Suite(.enabled(if: TestDaemon.isAvailable)) struct RevokedCardsDaemonTests {
    @Test func aRevokedCardGetsNoPINAndStatusSaysSo() throws {
        let cli = CLI()
        let revoked = cli.directory + "/revoked.d"
        try FileManager.default.createDirectory(atPath: revoked, withIntermediateDirectories: true)
        let daemon = try TestDaemon(cli, arguments: ["--revoked-dir", revoked])
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let bind = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        let types = try cli.run(socket + ["--json", "types"]).json["types"] as? [[String: Any]]
        let serial = try #require(types?.first { $0["type"] as? String == "token" }?["serial"] as? String)
        let before = try cli.run(socket + ["--json", "status"]).json
        let triesBefore = (before["token"] as? [String: Any])?["cardTriesLeft"] as? Int
        #expect(triesBefore == 3)

        // A new file, a comment and the card as readers shows it (with a colon): read at the next SIGHUP.
        let label = String(serial.prefix(4)) + ":" + String(serial.dropFirst(4))
        try "# lost 2026-11-30, ticket 4711\n\(label)\n".write(
            toFile: revoked + "/lost-badges", atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        var status: [String: Any] = [:]
        for _ in 0..<100 {
            status = try cli.run(socket + ["--json", "status"]).json
            if (status["token"] as? [String: Any])?["revoked"] as? String != nil { break }
            usleep(50_000)
        }
        #expect((status["token"] as? [String: Any])?["revoked"] as? String == revoked + "/lost-badges:2", "\(status)")
        let text = try cli.run(socket + ["status"])
        #expect(text.stdout.contains("is revoked by this site"), "\(text.stdout)")

        // A wrong card PIN would cost a card try: none is sent. The PIN still works (fallback = allow).
        let token = try cli.run(socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "000000\n")
        #expect(token.status == 6, "\(token.stdout)")
        #expect(token.stdout.contains("revoked by this site"), "\(token.stdout)")
        let pin = try cli.run(socket + ["--json", "verify", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(pin.status == 0, "\(pin.stdout)")
        // The card's own counter was never touched: status still reads 3 from the card.
        try FileManager.default.removeItem(atPath: revoked + "/lost-badges")
        kill(daemon.process.processIdentifier, SIGHUP)
        for _ in 0..<100 {
            status = try cli.run(socket + ["--json", "status"]).json
            if (status["token"] as? [String: Any])?["revoked"] is NSNull { break }
            usleep(50_000)
        }
        #expect((status["token"] as? [String: Any])?["cardTriesLeft"] as? Int == 3, "\(status)")
        #expect(
            try cli.run(socket + ["verify", "--method", "token", "--pin-stdin"], input: "123456\n").status == 0,
            "a card taken off the list works again")
    }
}

@Suite struct RevokedCardsLocalTests {
    @Test func localModeReadsTheSameListsAndBindsNoRevokedCard() throws {
        let cli = CLI()
        try cli.enrol("482916")
        let root = cli.directory + "/root"
        try FileManager.default.createDirectory(
            atPath: root + "/etc/tokenpin/revoked.d", withIntermediateDirectories: true)
        let system = ["TOKENPIN_SYSTEM_ROOT": root]
        let readers = try cli.run(["--reader", "sim", "--json", "readers"], environment: system)
        let serial = try #require(
            ((readers.json["readers"] as? [[String: Any]])?.first?["serial"] as? String), "\(readers.stdout)")
        try "\(serial)\nnot-a-card\n".write(
            toFile: root + "/etc/tokenpin/revoked.d/site", atomically: true, encoding: .utf8)
        let bind = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n", environment: system)
        #expect(bind.status == 6, "\(bind.stderr)")
        #expect(
            bind.stderr.contains("is revoked by this site (\(root)/etc/tokenpin/revoked.d/site:1)"), "\(bind.stderr)")
        #expect(
            bind.stderr.contains("site:2: `not-a-card` is not a card identity"), "a bad line is said: \(bind.stderr)")
        #expect(cli.remaining == 5, "nothing was asked")
        let listed = try cli.run(["--reader", "sim", "--json", "readers"], environment: system)
        #expect(
            ((listed.json["readers"] as? [[String: Any]])?.first?["unusableReason"] as? String)?.hasPrefix(
                "revoked by this site") == true, "\(listed.stdout)")
    }
}
