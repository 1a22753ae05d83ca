import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, item 6: hints are built from the command the user ran, its flags kept, and each does what it says when
/// typed as printed: every `` `tokenpin …` `` a command prints here is run through the shell as it stands.
@Suite struct SuggestedCommandTests {
    /// The backticked `tokenpin …` commands in `text`.
    static func hints(_ text: String) -> [String] {
        let parts = text.components(separatedBy: "`")
        return stride(from: 1, to: parts.count, by: 2).map { parts[$0] }.filter { $0.hasPrefix("tokenpin ") }
    }

    /// Runs `hint` through `/bin/sh -c` as it stands, `tokenpin` on `PATH` being the binary under test, in the
    /// sandbox's environment, with `input` on standard input.
    static func run(_ hint: String, _ cli: CLI, input: String, environment: [String: String] = [:]) throws -> CLI.Result
    {
        try cli.run([], input: input, environment: environment, shell: hint)
    }

    /// The flags every scenario passes, which every hint must keep.
    static func flags(_ cli: CLI) -> [String] {
        ["--store", cli.directory + "/elsewhere", "--config", cli.config, "--pin-stdin"]
    }

    @Test func theEnrolHintEnrolsInTheStoreTheUserNamed() throws {
        let cli = CLI()
        let failed = try cli.run(Self.flags(cli) + ["verify"], input: "482916\n")
        #expect(failed.status == 4)
        let hint = try #require(Self.hints(failed.stderr).first, "\(failed.stderr)")
        #expect(hint.contains("--store \(cli.directory)/elsewhere") && hint.hasSuffix(" enrol"), "\(hint)")
        let ran = try Self.run(hint, cli, input: "482916\n482916\n")
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(FileManager.default.fileExists(atPath: cli.directory + "/elsewhere/\(EmptyEntryTests.user).json"))
        #expect(!FileManager.default.fileExists(atPath: cli.store), "not in the default store")
    }

    @Test func theLockedAndAlreadyEnrolledHintsWork() throws {
        let cli = CLI(config: "retries-max = 1\n")
        let flags = Self.flags(cli)
        let keyFile = cli.directory + "/key"
        #expect(try cli.run(flags + ["enrol", "--recovery-key-file", keyFile], input: "482916\n482916\n").status == 0)
        let key = try String(contentsOfFile: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let again = try cli.run(flags + ["enrol"], input: "482916\n482916\n")
        let change = try #require(Self.hints(again.stderr).first { $0.hasSuffix(" change") }, "\(again.stderr)")
        #expect(try Self.run(change, cli, input: "482916\n739154\n739154\n").status == 0)
        let locked = try cli.run(flags + ["verify"], input: "000000\n")
        #expect(locked.status == 3)
        let reset = try #require(Self.hints(locked.stderr).first, "\(locked.stderr)")
        #expect(try Self.run(reset, cli, input: "\(key)\n615283\n615283\n").status == 0)
        #expect(try cli.run(flags + ["verify"], input: "615283\n").status == 0)
    }

    @Test func theTokenHintsKeepTheReaderAndWork() throws {
        let cli = CLI()
        let flags = Self.flags(cli) + ["--reader", "sim"]
        #expect(try cli.run(flags + ["enrol"], input: "482916\n482916\n").status == 0)
        let notOn = try cli.run(flags + ["verify", "--method", "token"], input: "123456\n")
        let on = try #require(Self.hints(notOn.stderr).first, "\(notOn.stderr)")
        #expect(on.contains("--reader sim") && on.hasSuffix("toggle token on"), "\(on)")
        // A factory card holds no key: the binding says how to make one.
        let refused = try Self.run(on, cli, input: "482916\n123456\n")
        #expect(refused.status == 6, "\(refused.stderr)")
        let generate = try #require(Self.hints(refused.stderr).first, "\(refused.stderr)")
        #expect(generate.contains("--generate-key"), "\(generate)")
        let bound = try Self.run(generate, cli, input: "482916\n123456\n12345678\n")
        #expect(bound.status == 0, "\(bound.stderr)")
        // A script without --method is told the command that works.
        let guessed = try cli.run(flags + ["verify"], input: "482916\n")
        #expect(guessed.status == 2)
        let method = try #require(Self.hints(guessed.stderr).first, "\(guessed.stderr)")
        #expect(try Self.run(method, cli, input: "482916\n").status == 0, "\(method)")
        let already = try cli.run(flags + ["toggle", "token", "on"], input: "")
        let off = try #require(Self.hints(already.stdout).first, "\(already.stdout)")
        #expect(off.contains("--reader sim") && off.hasSuffix("toggle token off"))
        #expect(try Self.run(off, cli, input: "482916\n").status == 0)
        let types = try cli.run(flags + ["--json", "types"]).json["types"] as? [[String: Any]]
        #expect(types?.first { $0["type"] as? String == "token" }?["enabled"] as? Bool == false)
    }

    @Test func theRebindAdviceRebindsInBoth() throws {
        let cli = CLI()
        let flags = Self.flags(cli) + ["--reader", "sim"]
        #expect(try cli.run(flags + ["enrol"], input: "482916\n482916\n").status == 0)
        #expect(
            try cli.run(
                flags + ["toggle", "token", "on", "--generate-key", "--yes"], input: "482916\n123456\n12345678\n"
            )
            .status == 0)
        // The site asks for both: the record bound in either is told how to get the composite slot.
        let both = cli.directory + "/both.conf"
        try "kdf-memory-mib = 8\nkdf-passes = 1\nmode = both\n".write(toFile: both, atomically: true, encoding: .utf8)
        let strict = ["--store", cli.directory + "/elsewhere", "--config", both, "--pin-stdin", "--reader", "sim"]
        let status = try cli.run(strict + ["status"])
        let hint = try #require(Self.hints(status.stdout).first { $0.contains("--mode both") }, "\(status.stdout)")
        #expect(hint.contains("--config \(both)") && hint.contains("--reader sim"), "\(hint)")
        #expect(try Self.run(hint, cli, input: "482916\n123456\n").status == 0)
        #expect(try cli.run(strict + ["--json", "status"]).json["modeSource"] as? String == "record")
    }

    @Test func theUnblockHintsUnblockTheCard() throws {
        let cli = CLI(config: "fallback = deny\n")
        let flags = Self.flags(cli) + ["--reader", "sim"]
        #expect(try cli.run(flags + ["enrol"], input: "482916\n482916\n").status == 0)
        #expect(
            try cli.run(
                flags + ["toggle", "token", "on", "--generate-key", "--yes"], input: "482916\n123456\n12345678\n"
            )
            .status == 0)
        var blocked = CLI.Result(status: 0, stdout: "", stderr: "")
        for _ in 0..<3 { blocked = try cli.run(flags + ["verify", "--method", "token"], input: "000000\n") }
        let unblock = try #require(Self.hints(blocked.stderr).first, "\(blocked.stderr)")
        #expect(unblock.contains("--reader sim") && unblock.hasSuffix("token unblock"), "\(unblock)")
        // A factory card has no Reset Code: the first hint says to use the admin PIN, with its own command.
        let noResetCode = try Self.run(unblock, cli, input: "")
        let admin = try #require(Self.hints(noResetCode.stderr).first, "\(noResetCode.stderr)")
        #expect(admin.hasSuffix("token unblock --admin"), "\(admin)")
        #expect(try Self.run(admin, cli, input: "12345678\n654321\n654321\n").status == 0)
        #expect(try cli.run(flags + ["verify", "--method", "token"], input: "654321\n").status == 0)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func thePIVHintKeepsAppPIVAndGoesThePIVWay() throws {
        // A YubiKey carries both applications: a hint that dropped --app piv would replace its OpenPGP key.
        let cli = CLI()
        let yubikey = ["TOKENPIN_SIM_PROFILE": "yubikey5"]
        let flags = Self.flags(cli) + ["--reader", "sim"]
        #expect(try cli.run(flags + ["enrol"], input: "482916\n482916\n", environment: yubikey).status == 0)
        let before = try cli.run(flags + ["--json", "readers", "--app", "openpgp"], environment: yubikey).stdout
        let refused = try cli.run(
            flags + ["toggle", "token", "on", "--app", "piv"], input: "482916\n123456\n",
            environment: yubikey)
        #expect(refused.status == 6, "\(refused.stderr)")
        let hint = try #require(Self.hints(refused.stderr).first, "\(refused.stderr)")
        #expect(hint.contains("--app piv") && hint.contains("--generate-key"), "\(hint)")
        let factory = String(repeating: "0102030405060708", count: 3)
        let ran = try Self.run(hint, cli, input: "482916\n123456\n\(factory)\n", environment: yubikey)
        #expect(ran.status == 2, "the factory management key needs --yes: \(ran.stderr)")
        #expect(ran.stderr.contains("management key") && ran.stderr.contains("--yes"), "the PIV way: \(ran.stderr)")
        let after = try cli.run(flags + ["--json", "readers", "--app", "openpgp"], environment: yubikey).stdout
        #expect(before == after, "the OpenPGP key was left alone")
    }

    /// Every suggested command in the sources is one the parser takes: `tokenpin WORDS --help` exits 0.
    @Test func everySuggestedCommandInTheSourcesParses() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Sources")
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String } ?? []
        var suggestions: Set<String> = []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for hint in Self.hints(String(line))
                where !hint.contains("\\(") && !hint.contains("…")
                    && hint.range(of: #"[A-Z|\[]"#, options: .regularExpression) == nil
                {
                    suggestions.insert(hint)
                }
            }
        }
        #expect(suggestions.count >= 8, "\(suggestions)")
        for hint in suggestions {
            let words = hint.split(separator: " ").dropFirst().map(String.init)
            let result = try CLI().run(words + ["--help"], plain: true)
            #expect(result.status == 0, "\(hint): \(result.stderr)")
        }
    }
}
