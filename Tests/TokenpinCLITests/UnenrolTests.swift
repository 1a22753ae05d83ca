import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, item 5: a way out of an enrolment. `unenrol` removes the record after a verification and says what it
/// removes; root removes a user's record with `--user NAME` after a confirmation, and resets a user who lost the
/// recovery key with `reset --user NAME`.
@Suite struct UnenrolTests {
    @Test func aWrongPINRemovesNothingTheRightOneRemovesTheRecord() throws {
        let cli = CLI()
        try cli.enrol("482916")
        let wrong = try cli.run(["unenrol", "--pin-stdin"], input: "000000\n")
        #expect(wrong.status == 1, "\(wrong.stderr)")
        #expect(cli.remaining == 4, "counted like a verify")
        let removed = try cli.run(["--json", "unenrol", "--pin-stdin"], input: "482916\n")
        #expect(removed.status == 0, "\(removed.stdout) \(removed.stderr)")
        #expect(removed.json["event"] as? String == "unenrolled")
        #expect(removed.json["removed"] as? [String] == ["pin", "recovery"])
        #expect(cli.record.isEmpty, "the record is gone")
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 4)
        #expect(try cli.run(["enrol", "--pin-stdin"], input: "739154\n739154\n").status == 0, "enrols again")
    }

    @Test func itSaysWhatItRemoves() throws {
        let cli = CLI()
        try cli.enrol("482916")
        #expect(
            try cli.run(
                ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
                input: "482916\n123456\n12345678\n"
            ).status == 0)
        let script = try cli.run(["--reader", "sim", "unenrol", "--pin-stdin"], input: "482916\n")
        #expect(script.status == 2, "a line is never guessed to be the PIN or the card PIN: \(script.stderr)")
        #expect(script.stderr.contains("--method pin"), "\(script.stderr)")
        let result = try cli.run(["--reader", "sim", "unenrol", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains("Removed the PIN, the recovery key and the token binding (card "), "\(result.stdout)"
        )
        #expect(result.stdout.contains(cli.store), "names the record: \(result.stdout)")
    }

    @Test func aLockedLocalRecordSaysWhatIsLeft() throws {
        let cli = CLI(config: "retries-max = 1\n")
        try cli.enrol("482916")
        _ = try cli.run(["verify", "--pin-stdin"], input: "000000\n")
        let result = try cli.run(["unenrol", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("remove \(cli.store)"), "\(result.stderr)")
        #expect(!cli.record.isEmpty)
    }
}

@Suite(.enabled(if: TestDaemon.isAvailable)) struct AdministratorTests {
    @Test func rootRemovesAUsersRecordAfterAConfirmation() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(
            try cli.run(socket + ["--user", "nobody", "enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let unconfirmed = try cli.run(socket + ["--user", "nobody", "unenrol", "--pin-stdin"])
        #expect(unconfirmed.status == 2, "\(unconfirmed.stderr)")
        #expect(unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        #expect(try cli.run(socket + ["--user", "nobody", "--json", "status"]).json["enrolled"] as? Bool == true)
        let removed = try cli.run(socket + ["--user", "nobody", "--json", "unenrol", "--yes"])
        #expect(removed.status == 0, "\(removed.stdout) \(removed.stderr)")
        #expect(removed.json["method"] as? String == "administrator")
        #expect(try cli.run(socket + ["--user", "nobody", "--json", "status"]).json["enrolled"] as? Bool == false)
    }

    @Test func rootsOwnRecordNeedsItsPIN() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        #expect(try cli.run(socket + ["unenrol", "--pin-stdin"], input: "000000\n").status == 1)
        #expect(try cli.run(socket + ["unenrol", "--pin-stdin"], input: "482916\n").status == 0)
        #expect(try cli.run(socket + ["--json", "status"]).json["enrolled"] as? Bool == false)
    }

    @Test func rootResetsAUserWithoutTheRecoveryKey() throws {
        let cli = CLI()
        let daemon = try TestDaemon(cli)
        let socket = ["--socket", daemon.socket]
        let user = ["--user", "nobody"]
        #expect(try cli.run(socket + user + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        for _ in 0..<5 { _ = try cli.run(socket + user + ["verify", "--pin-stdin"], input: "000000\n") }
        #expect(try cli.run(socket + user + ["verify", "--pin-stdin"], input: "482916\n").status == 3, "locked")
        let reset = try cli.run(socket + user + ["reset", "--pin-stdin"], input: "739154\n739154\n")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains("without the recovery key"), "\(reset.stdout)")
        let key = reset.stdout.split(separator: "\n").first { $0.hasPrefix("    ") }?.trimmingCharacters(
            in: .whitespaces)
        #expect(key?.count == 35, "a new recovery key, shown once: \(reset.stdout)")
        #expect(try cli.run(socket + user + ["verify", "--pin-stdin"], input: "739154\n").status == 0)
        #expect(try cli.run(socket + user + ["verify", "--pin-stdin"], input: "482916\n").status == 1)
        let json = try cli.run(socket + user + ["--json", "reset", "--pin-stdin"], input: "615283\n615283\n")
        #expect(json.json["method"] as? String == "administrator", "\(json.stdout)")
        let shown = json.stderr.split(separator: "\n").first { $0.hasPrefix("    ") }?.trimmingCharacters(
            in: .whitespaces)
        #expect(shown?.count == 35, "with --json the key goes to stderr: \(json.stderr)")
        #expect(!json.stdout.contains(shown ?? "?"), "the recovery key is never in JSON: \(json.stdout)")
    }
}
