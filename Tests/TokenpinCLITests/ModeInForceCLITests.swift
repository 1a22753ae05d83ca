import Foundation
import Testing

/// `mode = both` set after a card was bound in `either`: the binary verifies with both, `status` says so, and
/// `toggle token on --mode both` re-binds.
@Suite struct ModeInForceCLITests {
    @Test func bothInTheConfigurationWinsOverABindingInEither() throws {
        let cli = try ScriptSafetyTests.boundToSimulatedCard()
        try ("kdf-memory-mib = 8\nkdf-passes = 1\nmode = both\n").write(
            toFile: cli.config, atomically: true, encoding: .utf8)
        let sim = ["--reader", "sim"]

        let status = try cli.run(sim + ["--json", "status"])
        #expect(status.json["mode"] as? String == "both", "\(status.stdout)")
        #expect(status.json["modeSource"] as? String == "configuration")
        #expect((status.json["advice"] as? String)?.contains("tokenpin toggle token on --mode both") == true)
        let text = try cli.run(sim + ["status"])
        #expect(
            text.stdout.contains("Mode:       both (from the configuration; the token was bound in either)"),
            "\(text.stdout)")
        #expect(text.stdout.contains("offline protection of the composite slot"))

        let pinOnly = try cli.run(sim + ["verify", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(pinOnly.status == 6, "\(pinOnly.stderr)")
        #expect(pinOnly.stderr.contains("the PIN alone cannot verify"))

        let both = try cli.run(
            sim + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "482916\n123456\n")
        #expect(both.status == 0, "\(both.stderr)")
        #expect(both.json["method"] as? String == "both", "\(both.stdout)")
        let wrongPIN = try cli.run(sim + ["verify", "--method", "token", "--pin-stdin"], input: "000001\n123456\n")
        #expect(wrongPIN.status == 1)
        #expect(cli.remaining == 4, "one counted PIN attempt")

        let rebind = try cli.run(
            sim + ["toggle", "token", "on", "--mode", "both", "--pin-stdin"], input: "482916\n123456\n")
        #expect(rebind.status == 0, "\(rebind.stderr)")
        #expect(rebind.stdout.contains("re-bound in mode both"), "\(rebind.stdout)")
        let kinds = (cli.record["slots"] as? [[String: Any]])?.compactMap { $0["kind"] as? String }
        #expect(kinds == ["recovery", "composite"], "\(String(describing: kinds))")
        let after = try cli.run(sim + ["--json", "status"])
        #expect(after.json["modeSource"] as? String == "record")
        #expect(after.json["advice"] is NSNull, "\(after.stdout)")
    }

    @Test(.enabled(if: TestDaemon.isAvailable))
    func throughTheDaemonToo() throws {
        let cli = CLI()
        var daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let bind = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        daemon.stop()
        daemon = try TestDaemon(cli, config: "mode = both\n")
        let status = try cli.run(socket + ["--json", "status"])
        #expect(status.json["mode"] as? String == "both", "\(status.stdout)")
        #expect(status.json["modeSource"] as? String == "configuration")
        let pinOnly = try cli.run(socket + ["verify", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(pinOnly.status == 6, "\(pinOnly.stderr)")
        let both = try cli.run(
            socket + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "482916\n123456\n")
        #expect(both.json["method"] as? String == "both", "\(both.stdout) \(both.stderr)")
        let rebind = try cli.run(
            socket + ["toggle", "token", "on", "--mode", "both", "--pin-stdin"], input: "482916\n123456\n")
        #expect(rebind.status == 0, "\(rebind.stderr)")
        #expect(try cli.run(socket + ["--json", "status"]).json["modeSource"] as? String == "record")
        daemon.stop()
    }

    @Test func modeIsAnOptionOfTokenOnOnly() throws {
        let cli = CLI()
        let off = try cli.run(["toggle", "token", "off", "--mode", "both"])
        #expect(off.status == 2 && off.stderr.contains("--mode applies to `toggle token on`"), "\(off.stderr)")
        let bad = try cli.run(["toggle", "token", "on", "--mode", "all"])
        #expect(bad.status == 2 && bad.stderr.contains("--mode must be either or both"), "\(bad.stderr)")
    }

    @Test func appAndSlotAreCheckedBeforeAnythingHappens() throws {
        let cli = CLI()
        for (arguments, message) in [
            (["toggle", "token", "off", "--app", "piv"], "--app applies to `toggle token on`"),
            (["toggle", "pin", "on", "--slot", "9d"], "--slot applies to `toggle token on`"),
            (["toggle", "token", "on", "--slot", "9d"], "--slot applies to PIV: add --app piv"),
            (["toggle", "token", "on", "--app", "piv", "--slot", "9b"], "--slot takes a PIV slot"),
            (["toggle", "token", "on", "--app", "piv", "--slot", "96"], "--slot takes a PIV slot"),
            (["toggle", "token", "on", "--app", "fido"], "--app must be one of openpgp, piv, pkcs11"),
            (["token", "unblock", "--app", "x"], "--app must be one of openpgp, piv, pkcs11"),
            (["toggle", "token", "off", "--token-uri", "pkcs11:id=%01"], "--token-uri applies to `toggle token on`"),
            (
                ["toggle", "token", "on", "--app", "piv", "--token-uri", "pkcs11:id=%01"],
                "they apply with --app pkcs11"
            ),
            (["--local", "readers", "--token-uri", "file:///etc/x"], "--token-uri takes an RFC 7512 URI"),
            (["--local", "readers", "--pkcs11-module", "libsofthsm2.so"], "takes the absolute path"),
        ] {
            let result = try cli.run(arguments)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}
