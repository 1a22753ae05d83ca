import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct UsageTests {
    let cli = CLI()

    @Test func version() throws {
        let result = try cli.run(["--version"], plain: true)
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("tokenpin "))
    }

    @Test func helpHasTheArgumentParserLayoutAndTheExitCodes() throws {
        let result = try cli.run(["help"], plain: true)
        #expect(result.status == 0)
        for heading in ["OVERVIEW:", "USAGE:", "OPTIONS:", "EXIT CODES:"] {
            #expect(result.stdout.contains(heading))
        }
        // The commands by group (`GROUP SUBCOMMANDS:`), in the groups' order and alphabetical within each: every
        // command has one, so there is no plain SUBCOMMANDS heading.
        #expect(!result.stdout.contains("\nSUBCOMMANDS:"))
        let start = result.stdout.firstRange(of: "\nVERIFICATION SUBCOMMANDS:\n")?.lowerBound ?? result.stdout.endIndex
        let end = result.stdout.firstRange(of: "\nEXIT CODES:\n")?.lowerBound ?? result.stdout.endIndex
        let commands = result.stdout[start..<end].split(separator: "\n").map {
            $0.hasPrefix("  ") ? String($0.dropFirst(2).prefix { $0 != " " }) : String($0)
        }
        #expect(
            commands == [
                "VERIFICATION SUBCOMMANDS:", "age", "derive", "verify",
                "PIN AND RECORD SUBCOMMANDS:", "change", "enrol", "import", "reset", "status", "types", "unenrol",
                "CARD SUBCOMMANDS:", "readers", "toggle", "token",
                "DAEMON SUBCOMMANDS:", "watch",
                "UTILITY SUBCOMMANDS:", "bench", "completions", "demo", "doctor", "help",
            ], "\(result.stdout)")
        #expect(
            result.stdout.contains(
                "\n  verify                Verify with the token (when enabled and present) or the PIN.\n"))
        for code in ["65", "69", "74", "77", "78", "130"] { #expect(result.stdout.contains("  \(code) ")) }
        let sub = try cli.run(["help", "change"], plain: true)
        #expect(sub.stdout.contains("USAGE: tokenpin change"))
        #expect(try cli.run(["verify", "--help"], plain: true).stdout.contains("--method"))
    }

    @Test(arguments: [
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["verify", "--frob"], "unknown option '--frob'"),
        (["toggle"], "missing <type>"),
        (["toggle", "pin"], "missing on|off"),
        (["toggle", "face", "on"], "unknown type 'face'"),
        (["toggle", "pin", "maybe"], "expected on or off"),
        (["verify", "--method", "face"], "--method must be pin or token"),
        (["toggle", "token", "off", "--method", "face"], "--method must be pin or token"),
        (["toggle", "token", "on", "--method", "pin"], "--method applies to `toggle token off`"),
        (["verify", "extra"], "unexpected argument 'extra'"),
        (["status", "--store"], "missing value for '--store'"),
        (["enrol", "--method", "pin"], "'--method' is not an option of 'enrol'"),
        (["verify", "--pin", "482916"], "PINs are never taken from the command line"),
        (["verify", "--pin=482916"], "PINs are never taken from the command line"),
    ])
    func usageErrorsExitTwoNamingTheProblem(arguments: [String], message: String) throws {
        let result = try cli.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains("error: "))
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.contains("482916") || message.contains("PINs"))
    }

    @Test func noCommandPrintsHelpAndExitsTwo() throws {
        let result = try cli.run([], plain: true)
        #expect(result.status == 2)
        #expect(result.stderr.contains("USAGE:"))
    }

    @Test func usageErrorsInJSON() throws {
        let result = try cli.run(["--json", "verify", "--frob"])
        #expect(result.status == 2)
        let error = result.json["error"] as? [String: Any]
        #expect(result.json["ok"] as? Bool == false)
        #expect(error?["code"] as? String == "usage")
    }
}

@Suite struct FlowTests {
    @Test func enrolVerifyChangeResetThroughTheBinary() throws {
        let cli = CLI()
        let enrol = try cli.run(["enrol", "--pin-stdin"], input: "482916\n482916\n")
        #expect(enrol.status == 0)
        #expect(enrol.stdout.contains("PIN enrolled"))
        let keyLine = enrol.stdout.split(separator: "\n").first { $0.hasPrefix("    ") }
        let recovery = try #require(keyLine).trimmingCharacters(in: .whitespaces)
        #expect(recovery.count == 35)

        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 0)
        let wrong = try cli.run(["verify", "--pin-stdin"], input: "000001\n")
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("Wrong PIN. 4 tries left."))

        let change = try cli.run(["change", "--pin-stdin"], input: "482916\n739154\n739154\n")
        #expect(change.status == 0, "\(change.stderr)")
        #expect(try cli.run(["verify", "--pin-stdin"], input: "739154\n").status == 0)

        let reset = try cli.run(["reset", "--pin-stdin"], input: "\(recovery)\n915372\n915372\n")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(try cli.run(["verify", "--pin-stdin"], input: "915372\n").status == 0)
        #expect(try cli.run(["enroll", "--pin-stdin"], input: "482916\n482916\n").status == 2, "already enrolled")
    }

    @Test func jsonShapes() throws {
        let cli = CLI(config: "retries-max = 3\n")
        let keyFile = cli.directory + "/key"
        let enrol = try cli.run(
            ["--json", "enrol", "--pin-stdin", "--recovery-key-file", keyFile], input: "482916\n482916\n")
        #expect(enrol.status == 0)
        #expect(enrol.json["ok"] as? Bool == true)
        #expect(enrol.json["event"] as? String == "created")
        #expect(enrol.json["remaining"] as? Int == 3)
        #expect(enrol.json["recoveryKeyShownOn"] as? String == "file")
        let key = try String(contentsOfFile: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!enrol.stdout.contains(key), "the recovery key never appears in JSON")
        var info = stat()
        stat(keyFile, &info)
        #expect(info.st_mode & 0o777 == 0o600)

        let ok = try cli.run(["--json", "verify", "--pin-stdin"], input: "482916\n")
        #expect(ok.json["ok"] as? Bool == true && ok.json["event"] as? String == "verified")
        #expect(ok.json["method"] as? String == "pin" && ok.json["remaining"] as? Int == 3)
        #expect(ok.json["lastTry"] as? Bool == false && ok.json["locked"] as? Bool == false)
        #expect(ok.stdout.split(separator: "\n").count == 1, "one JSON object per command")

        _ = try cli.run(["verify", "--pin-stdin"], input: "000001\n")
        let last = try cli.run(["--json", "verify", "--pin-stdin"], input: "000002\n")
        #expect(last.status == 1)
        #expect(last.json["event"] as? String == "wrongPIN")
        #expect(last.json["remaining"] as? Int == 1 && last.json["lastTry"] as? Bool == true)
        #expect((last.json["error"] as? [String: Any])?["code"] as? String == "wrong-pin")

        let locked = try cli.run(["--json", "verify", "--pin-stdin"], input: "000003\n")
        #expect(locked.status == 3)
        #expect(locked.json["event"] as? String == "locked" && locked.json["locked"] as? Bool == true)

        let types = try cli.run(["--json", "types"])
        let list = try #require(types.json["types"] as? [[String: Any]])
        #expect(list.map { $0["type"] as? String } == ["pin", "token"])
        #expect(list.map { $0["enabled"] as? Bool } == [true, false])

        let status = try cli.run(["--json", "status"])
        #expect(status.status == 0)
        for key in [
            "ok", "user", "record", "enrolled", "remaining", "max", "locked", "lockedAt", "delay", "kdf", "types",
        ] {
            #expect(status.json[key] != nil, "status has \(key)")
        }
        #expect(status.json["locked"] as? Bool == true && status.json["remaining"] as? Int == 0)
        #expect((status.json["kdf"] as? [String: Any])?["memoryMiB"] as? Int == 8)
    }

    @Test func lockedPINIsUnlockedOnlyByTheRecoveryKey() throws {
        let cli = CLI(config: "retries-max = 2\n")
        let recovery = try cli.enrol()
        #expect(try cli.run(["verify", "--pin-stdin"], input: "000001\n").stderr.contains("Last try"))
        #expect(try cli.run(["verify", "--pin-stdin"], input: "000002\n").status == 3)
        let stillLocked = try cli.run(["verify", "--pin-stdin"], input: "482916\n")
        #expect(stillLocked.status == 3)
        #expect(stillLocked.stderr.contains("`tokenpin --pin-stdin reset`"), "\(stillLocked.stderr)")
        let wrongKey = try cli.run(["reset", "--pin-stdin"], input: "ABCDE-ABCDE\n")
        #expect(wrongKey.status == 1 && wrongKey.stderr.contains("nothing was counted"))
        #expect(try cli.run(["reset", "--pin-stdin"], input: "\(recovery)\n915372\n915372\n").status == 0)
        #expect(try cli.run(["verify", "--pin-stdin"], input: "915372\n").status == 0)
    }

    @Test func policyRefusalsExitFiveNamingTheRule() throws {
        let cli = CLI()
        let result = try cli.run(["enrol", "--pin-stdin"], input: "123456\n123456\n")
        #expect(result.status == 5)
        #expect(result.stderr.contains("rule sequence"))
        let json = try cli.run(["--json", "enrol", "--pin-stdin"], input: "482916\n482917\n")
        #expect(json.status == 5)
        #expect((json.json["error"] as? [String: Any])?["code"] as? String == "policy")
        #expect(
            (json.json["error"] as? [String: Any])?["message"] as? String
                == "PIN refused: the two entries do not match (rule mismatch)")
        try cli.enrol()
        let same = try cli.run(["change", "--pin-stdin"], input: "482916\n482916\n482916\n")
        #expect(same.status == 5 && same.stderr.contains("same-as-current"))
    }

    @Test func typesAndToggle() throws {
        let cli = CLI()
        #expect(try cli.run(["types"]).status == 4, "not enrolled")
        try cli.enrol()
        let types = try cli.run(["types"])
        #expect(types.stdout.contains("pin    enabled   (always enabled)"))
        #expect(types.stdout.contains("token  disabled"))
        let off = try cli.run(["toggle", "pin", "off"])
        #expect(off.status == 2 && off.stderr.contains("always enabled"))
        #expect(try cli.run(["toggle", "pin", "on"]).status == 0)
    }

    @Test func notEnrolledExitsFour() throws {
        let cli = CLI()
        let result = try cli.run(["verify", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 4)
        #expect(result.stderr.contains("`tokenpin --pin-stdin enrol`"), "the hint keeps the flags: \(result.stderr)")
        #expect(try cli.run(["change", "--pin-stdin"], input: "482916\n").status == 4)
        #expect(try cli.run(["reset", "--pin-stdin"], input: "x\n").status == 4)
        let status = try cli.run(["--json", "status"])
        #expect(status.status == 0 && status.json["enrolled"] as? Bool == false)
    }

    @Test func inputEndingEarlyIsAnIOErrorAndCountsNothing() throws {
        let cli = CLI()
        try cli.enrol()
        let result = try cli.run(["verify", "--pin-stdin"], input: "")
        #expect(result.status == 74)
        #expect(result.stderr.contains("standard input ended before the PIN line"))
        #expect(cli.remaining == 5)
    }

    @Test func noTerminalAndNoPinStdinSaysWhatToDo() throws {
        let cli = CLI()
        try cli.enrol()
        let result = try cli.run(
            ["--store", cli.store, "--config", cli.config, "verify"], plain: true,
            executable: "/usr/bin/setsid")
        #expect(result.status == 74)
        #expect(result.stderr.contains("--pin-stdin"))
        #expect(cli.remaining == 5)
    }
}

@Suite struct BadStateTests {
    @Test func corruptAndTruncatedRecordsExitSixtyFiveAndAreLeftAlone() throws {
        let cli = CLI()
        try cli.enrol()
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        let path = cli.store + "/\(user).json"
        let full = try #require(FileManager.default.contents(atPath: path))
        for bytes in [full.prefix(full.count / 2), Data("{\"version\": 9}".utf8), Data()] {
            try bytes.write(to: URL(fileURLWithPath: path))
            chmod(path, 0o600)
            for command in [["verify", "--pin-stdin"], ["status"], ["types"], ["enrol", "--pin-stdin"]] {
                let result = try cli.run(command, input: "482916\n482916\n")
                #expect(result.status == 65, "\(command) on \(bytes.count) bytes: \(result.stderr)")
                #expect(result.stderr.contains(path), "the message names the file")
            }
            #expect(FileManager.default.contents(atPath: path) == bytes, "never overwritten")
        }
    }

    @Test func storeOthersCanWriteExitsSeventySeven() throws {
        let cli = CLI()
        try cli.enrol()
        chmod(cli.store, 0o777)
        let result = try cli.run(["verify", "--pin-stdin"], input: "482916\n")
        #expect(result.status == 77)
        #expect(result.stderr.contains(cli.store))
        #expect(result.stderr.contains("others can write"))
    }

    /// Every command refuses a record others can read, `status` included (issue 10).
    @Test(arguments: [["status"], ["types"], ["verify", "--pin-stdin"]])
    func aReadableRecordIsRefusedByEveryCommand(command: [String]) throws {
        let cli = CLI()
        try cli.enrol()
        let records = try FileManager.default.contentsOfDirectory(atPath: cli.store).filter { $0.hasSuffix(".json") }
        for record in records { chmod(cli.store + "/" + record, 0o644) }
        let result = try cli.run(command, input: "482916\n")
        #expect(result.status == 77, "\(command): \(result.stderr)")
        #expect(result.stderr.contains("others can read"))
    }

    @Test func badConfigurationExitsSeventyEightNamingFileAndLine() throws {
        let cli = CLI(config: "retries-max = 3\ncolour = red\n")
        let result = try cli.run(["status"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(cli.config):4: unknown key `colour`"))
        let missing = try cli.run(["--config", cli.directory + "/nope.conf", "status"], plain: true)
        #expect(missing.status == 78)
    }

    @Test func coloursFollowTheSettings() throws {
        let cli = CLI(config: "color = always\n")
        try cli.enrol()
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").stdout.contains("\u{1B}["))
        #expect(!(try cli.run(["--no-color", "verify", "--pin-stdin"], input: "482916\n").stdout.contains("\u{1B}[")))
        let auto = CLI()
        try auto.enrol()
        #expect(
            !(try auto.run(["verify", "--pin-stdin"], input: "482916\n").stdout.contains("\u{1B}[")), "not a terminal")
    }

    /// Each kind of colour name reaches the terminal as its ANSI SGR code.
    @Test(arguments: [("green", "32"), ("default", "39"), ("bright-red", "91"), ("bold", "1"), ("208", "38;5;208")])
    func colourNamesBecomeTheirEscapes(name: String, code: String) throws {
        let cli = CLI(config: "color = always\ncolor-success = \(name)\n")
        try cli.enrol()
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").stdout.contains("\u{1B}[\(code)m"))
    }
}

@Suite(.serialized) struct ConcurrencyTests {
    /// Invariant 2: 16 processes guessing at once cannot outrun the counter.
    @Test func sixteenConcurrentWrongVerifiesCountExactlyFive() throws {
        let cli = CLI(config: "retries-max = 5\n")
        try cli.enrol()
        let running = (0..<16).map { index in
            cli.start(["--json", "verify", "--pin-stdin"], input: String(format: "%06d\n", 100 + index))
        }
        let results = try running.map { try $0.finish() }
        let statuses = results.map(\.status)
        #expect(statuses.filter { $0 == 1 }.count == 4, "\(statuses)")
        #expect(statuses.filter { $0 == 3 }.count == 12, "\(statuses)")
        #expect(cli.remaining == 0)
        let counter = cli.record["counter"] as? [String: Any]
        #expect(counter?["failures"] as? Int == 5, "exactly five counted attempts")
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 3)
    }

    /// Invariant 1 across a crash: kill -9 during the KDF leaves the attempt counted and the lock free.
    @Test func killDuringTheKDFLeavesTheAttemptCounted() throws {
        let cli = CLI(config: "kdf-memory-mib = 256\nkdf-passes = 24\n")
        try cli.enrol()
        let running = cli.start(["verify", "--pin-stdin"], input: "482916\n")
        var waited = 0
        while cli.remaining == 5 && waited < 2000 {
            usleep(5000)
            waited += 5
        }
        #expect(cli.remaining == 4, "decremented before the KDF")
        kill(running.process.processIdentifier, SIGKILL)
        running.process.waitUntilExit()
        #expect(running.process.terminationReason == .uncaughtSignal, "killed mid-KDF, not finished")
        #expect(cli.remaining == 4, "the killed attempt stays counted")
        try "kdf-memory-mib = 8\nkdf-passes = 1\n".write(toFile: cli.config, atomically: true, encoding: .utf8)
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 0, "the lock was released")
        #expect(cli.remaining == 5)
    }
}

@Suite struct DemoAndBenchTests {
    @Test func demoWalksEveryFlow() throws {
        let cli = CLI()
        let result = try cli.run(["demo"], plain: true)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("as expected"))
        #expect(!result.stdout.contains("✗"))
        let json = try cli.run(["--json", "demo"], plain: true)
        #expect(json.json["ok"] as? Bool == true)
        #expect((json.json["steps"] as? [Any])?.count ?? 0 >= 15)
    }

    @Test func benchReportsCalibrationAndLatency() throws {
        let cli = CLI()
        let result = try cli.run(["--json", "bench", "--iterations", "1"], plain: true)
        #expect(result.status == 0, "\(result.stderr)")
        let calibration = result.json["calibration"] as? [String: Any]
        #expect((calibration?["memoryMiB"] as? Int ?? 0) >= 64)
        #expect((calibration?["passes"] as? Int ?? 0) >= 3)
        let verify = result.json["verify"] as? [String: Any]
        #expect(verify?["kdfMs"] != nil && verify?["wallMs"] != nil)
        #expect(result.json["peakRSSMiB"] != nil)
    }
}

@Suite struct DaemonModeTests {
    @Test func aNamedSocketWithoutADaemonIsExitSixtyNine() throws {
        let cli = CLI()
        let socket = cli.directory + "/no-daemon.sock"
        let verify = try cli.run(["--socket", socket, "--json", "verify", "--pin-stdin"], input: "482916\n")
        #expect(verify.status == 69, "\(verify.stdout) \(verify.stderr)")
        #expect((verify.json["error"] as? [String: Any])?["code"] as? String == "service-unavailable")
        #expect(!verify.stdout.contains("482916"))
    }

    @Test(arguments: [["import"], ["watch"]])
    func importAndWatchNeedTheDaemon(arguments: [String]) throws {
        let cli = CLI()
        try cli.enrol()
        let result = try cli.run(["--local"] + arguments)
        #expect(result.status == 69)
        #expect(result.stderr.contains("tokenpind is not running"))
        #expect(cli.remaining == 5, "the local record is left where it is")
    }

    @Test func localModeIsTheDefaultWithoutASocket() throws {
        let cli = CLI()
        try cli.enrol()
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 0)
        #expect(try cli.run(["--local", "verify", "--pin-stdin"], input: "482916\n").status == 0)
    }
}
