import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Messages a person reads: suggestions, help without a working configuration, help and version as JSON.
@Suite struct MessagesTests {
    @Test(arguments: [
        (["verfy"], "did you mean 'verify'?"),
        (["enrool"], "did you mean 'enrol'?"),
        (["verify", "--methd", "pin"], "did you mean '--method'?"),
        (["help", "stauts"], "did you mean 'status'?"),
    ])
    func typosGetASuggestion(arguments: [String], suggestion: String) throws {
        let result = try CLI().run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(suggestion), "\(result.stderr)")
    }

    @Test func helpWorksWithABrokenConfiguration() throws {
        let cli = CLI(config: "colour = red\n")
        #expect(try cli.run(["status"]).status == 78)
        for arguments in [["help"], ["help", "verify"], ["verify", "--help"], ["--help"]] {
            let result = try cli.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            #expect(result.stdout.contains("USAGE:"))
        }
    }

    @Test func helpAndVersionAsJSON() throws {
        let cli = CLI()
        let version = try cli.run(["--json", "--version"], plain: true)
        #expect(version.status == 0 && version.json["version"] as? String != nil, "\(version.stdout)")
        let help = try cli.run(["--json", "help"], plain: true)
        #expect(help.status == 0)
        let names = (help.json["commands"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(names.contains("verify") && names.contains("bench"), "\(help.stdout)")
        // In help order (by group), each with its group.
        #expect(Array(names.prefix(4)) == ["age", "derive", "verify", "change"], "\(names)")
        let groups = (help.json["commands"] as? [[String: Any]])?.compactMap { $0["group"] as? String } ?? []
        #expect(groups.count == names.count && groups.first == "VERIFICATION" && groups.last == "UTILITY")
        #expect((help.json["exitCodes"] as? [Any])?.count == 14)
        let verify = try cli.run(["--json", "help", "verify"], plain: true)
        #expect(
            (verify.json["command"] as? [String: Any])?["usage"] as? String == "tokenpin verify [--method pin|token]")
    }
}

/// `--recovery-key-file` is made before anything is enrolled.
@Suite struct RecoveryKeyFileTests {
    @Test func anExistingFileStopsEnrolmentBeforeAnythingIsWritten() throws {
        let cli = CLI()
        let path = cli.directory + "/key"
        try "mine".write(toFile: path, atomically: true, encoding: .utf8)
        let result = try cli.run(["enrol", "--pin-stdin", "--recovery-key-file", path], input: "482916\n482916\n")
        #expect(result.status == 74)
        #expect(result.stderr.contains("it exists"), "\(result.stderr)")
        #expect(result.stderr.contains("nothing was enrolled"))
        #expect(!result.stderr.contains("Recovery key"), "the key was never made")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
        #expect(try cli.run(["--json", "status"]).json["enrolled"] as? Bool == false)
    }

    @Test func aMissingDirectoryIsNamed() throws {
        let cli = CLI()
        let result = try cli.run(
            ["--json", "enrol", "--pin-stdin", "--recovery-key-file", cli.directory + "/nope/key"],
            input: "482916\n482916\n")
        #expect(result.status == 74)
        let message = (result.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("/nope does not exist"), "\(message)")
        #expect(try cli.run(["--json", "status"]).json["enrolled"] as? Bool == false)
    }

    @Test func aFailedEnrolmentLeavesNoEmptyKeyFile() throws {
        let cli = CLI()
        let path = cli.directory + "/key"
        let result = try cli.run(["enrol", "--pin-stdin", "--recovery-key-file", path], input: "123456\n123456\n")
        #expect(result.status == 5)
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}

/// One answer per situation: a refusal printed once, toggles that change nothing, `--serial` checked and applied.
@Suite struct OneAnswerTests {
    @Test func aPolicyRefusalIsPrintedOnce() throws {
        let result = try CLI().run(["enrol", "--pin-stdin"], input: "123456\n123456\n")
        #expect(result.status == 5)
        #expect(result.stderr.components(separatedBy: "PIN refused").count == 2, "\(result.stderr)")
    }

    @Test func toggleOnWhenOnAndOffWhenOffAnswerAlike() throws {
        let cli = CLI()
        try cli.enrol()
        let off = try cli.run(["--reader", "sim", "--json", "toggle", "token", "off"])
        #expect(off.status == 0 && off.json["event"] as? String == "unchanged", "\(off.stdout)")
        #expect(try cli.run(["--reader", "sim", "toggle", "token", "off"]).stdout.contains("already disabled"))
        let bind = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        let on = try cli.run(["--reader", "sim", "--json", "toggle", "token", "on", "--pin-stdin"], input: "")
        #expect(on.status == 0 && on.json["event"] as? String == "unchanged", "\(on.stdout)")
        #expect(try cli.run(["--reader", "sim", "toggle", "token", "on"]).stdout.contains("already enabled"))
        #expect(cli.remaining == 5, "nothing was asked")
    }

    @Test(arguments: [
        "xyz", "1234", "FFFE:0000AAAAA", "GGGG0000", "piv-guid:1234", "piv-serial:", "piv-serial:12a",
        "piv-key:0123456789abcdeg", "piv-serial:12345678901", "piv-", "piv-guid:" + String(repeating: "٣", count: 32),
    ])
    func aSerialThatIsNotHexIsUsage(serial: String) throws {
        let result = try CLI().run(["--serial", serial, "readers"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--serial takes 8 hex digits"), "\(result.stderr)")
    }

    @Test(arguments: [
        "0BADCAFE", "FFFE:0BADCAFE", "piv-guid:0123456789ABCDEF0123456789abcdef", "piv-serial:12345678",
        "PIV-KEY:0123456789abcdef",
    ])
    func aSerialOrAPIVIdentityIsAccepted(serial: String) throws {
        let result = try CLI().run(["--serial", serial, "--reader", "sim", "--json", "readers"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func serialIsAppliedByReadersAndVerify() throws {
        let cli = try ScriptSafetyTests.boundToSimulatedCard()
        let all = try cli.run(["--reader", "sim", "--json", "readers"])
        let serial = try #require((all.json["readers"] as? [[String: Any]])?.first?["serial"] as? String)
        let other = try cli.run(["--reader", "sim", "--serial", "0000BBBB", "--json", "readers"])
        #expect((other.json["readers"] as? [Any])?.isEmpty == true, "\(other.stdout)")
        let same = try cli.run(["--reader", "sim", "--serial", serial, "--json", "readers"])
        #expect((same.json["readers"] as? [Any])?.count == 1)
        let verify = try cli.run(
            ["--reader", "sim", "--serial", "0000BBBB", "verify", "--method", "token", "--pin-stdin"],
            input: "123456\n")
        #expect(verify.status == 6 && verify.stderr.contains("is not the card bound"), "\(verify.stderr)")
        #expect(try ScriptSafetyTests.cardTries(cli) == 3, "the card PIN went nowhere")
    }
}

/// Configuration files: CRLF line endings, contradictory settings named, suggestions for keys.
@Suite struct ConfigurationMessagesTests {
    @Test func crlfLineEndingsAreAccepted() throws {
        let cli = CLI()
        try "kdf-memory-mib = 8\r\nkdf-passes = 1\r\nretries-max = 3\r\n".write(
            toFile: cli.config, atomically: true, encoding: .utf8)
        try cli.enrol()
        let status = try cli.run(["--json", "status"])
        #expect(status.status == 0 && status.json["max"] as? Int == 3, "\(status.stdout) \(status.stderr)")
    }

    @Test(arguments: [
        ("pin-min-unique = 9\npin-max-length = 8\n", ["pin-min-unique", "pin-max-length"]),
        ("pin-max-length = 8\npin-min-length = 10\n", ["pin-min-length", "pin-max-length"]),
    ])
    func contradictorySettingsNameBothKeys(config: String, keys: [String]) throws {
        let cli = CLI(config: config)
        let result = try cli.run(["status"])
        #expect(result.status == 78, "\(result.stderr)")
        for key in keys { #expect(result.stderr.contains(key), "\(result.stderr)") }
    }

    @Test func aMistypedKeyGetsASuggestion() throws {
        let result = try CLI(config: "retires-max = 3\n").run(["status"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("did you mean 'retries-max'?"), "\(result.stderr)")
    }
}

/// Each refusal says what is allowed, and each store hint answers what was found.
@Suite struct HintTests {
    @Test func aPolicyRefusalSaysWhatIsAllowed() throws {
        let result = try CLI().run(["--json", "enrol", "--pin-stdin"], input: "12345\n12345\n")
        #expect(result.status == 5)
        let text = try CLI().run(["enrol", "--pin-stdin"], input: "12345\n12345\n")
        #expect(text.stderr.contains("hint: allowed: 6 to 32 digits"), "\(text.stderr)")
    }

    @Test func aSymlinkedStoreIsNotCalledWritableByOthers() throws {
        let cli = CLI()
        try cli.enrol()
        let moved = cli.directory + "/real-store"
        try FileManager.default.moveItem(atPath: cli.store, toPath: moved)
        try FileManager.default.createSymbolicLink(atPath: cli.store, withDestinationPath: moved)
        let result = try cli.run(["verify", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 77, "\(result.stderr)")
        #expect(result.stderr.contains("symbolic link"), "\(result.stderr)")
        #expect(!result.stderr.contains("others can write"))
    }

    @Test(.enabled(if: geteuid() == 0)) func aForeignOwnerGetsAnOwnershipHint() throws {
        let cli = CLI()
        try cli.enrol()
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        chown(cli.store + "/\(user).json", 65534, 65534)
        let result = try cli.run(["verify", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 77, "\(result.stderr)")
        #expect(result.stderr.contains("owned by someone else"), "\(result.stderr)")
        #expect(!result.stderr.contains("others can write"))
    }
}

@Suite struct RecoveryKeyMessageTests {
    @Test func aWrongCharacterSaysTheCheckFailed() throws {
        let cli = CLI()
        let key = try cli.enrol()
        // U is not in the recovery key alphabet: the key has the right shape and a typo in it.
        let typo = "U" + key.dropFirst()
        let result = try cli.run(["reset", "--pin-stdin"], input: "\(typo)\n915372\n915372\n")
        #expect(result.status == 1)
        #expect(result.stderr.contains("its check fails"), "\(result.stderr)")
        #expect(!result.stderr.contains("30 characters"))
        #expect(result.stderr.contains("nothing was counted"))
    }
}
