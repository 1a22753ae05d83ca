import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25, item 2 and 3: an empty entry at any PIN prompt cancels (130) and counts nothing; a secret that cannot be
/// the PIN under the policy is not tried; prompts say what they want and whose it is.
@Suite struct EmptyEntryTests {
    static var user: String { String(cString: getpwuid(geteuid())!.pointee.pw_name) }

    @Test(arguments: [
        (["verify", "--pin-stdin"], "\n"),
        (["verify", "--method", "pin", "--pin-stdin"], "\n"),
        (["change", "--pin-stdin"], "\n"),
        (["change", "--pin-stdin"], "482916\n\n"),
        (["change", "--pin-stdin"], "482916\n739154\n\n"),
        (["reset", "--pin-stdin"], "\n"),
    ])
    func anEmptyLineCancelsAndCountsNothing(arguments: [String], input: String) throws {
        let cli = CLI()
        try cli.enrol("482916")
        let result = try cli.run(arguments, input: input)
        #expect(result.status == 130, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("nothing was tried or counted"), "\(result.stderr)")
        #expect(cli.remaining == 5, "nothing counted")
        #expect((cli.record["counter"] as? [String: Any])?["recoveryFailures"] as? Int == 0)
        #expect(try cli.run(["verify", "--pin-stdin"], input: "482916\n").status == 0, "the PIN is unchanged")
    }

    @Test func anEmptyFirstPINEnrolsNothing() throws {
        let cli = CLI()
        let result = try cli.run(["enrol", "--pin-stdin"], input: "\n")
        #expect(result.status == 130, "\(result.stderr)")
        #expect(cli.record.isEmpty)
    }

    @Test(arguments: ["Pw-alice-7q", "123456789012345678901234567890123", "48 29 16", "४८२९१६"])
    func aSecretThatCannotBeThePINIsNotTried(secret: String) throws {
        let cli = CLI()
        try cli.enrol("482916")
        let result = try cli.run(["--json", "verify", "--pin-stdin"], input: secret + "\n")
        #expect(result.status == 1, "\(result.stdout)")
        let error = result.json["error"] as? [String: Any]
        #expect(error?["code"] as? String == "not-a-pin", "\(result.stdout)")
        #expect((error?["message"] as? String)?.contains("6 to 32 digits") == true)
        #expect(cli.remaining == 5, "not counted")
        #expect(!result.stdout.contains(secret), "the secret is never echoed")
        // Under a policy that allows it, the same secret is a wrong PIN like any other.
        let wide = CLI(config: "pin-charset = any\npin-max-length = 64\n")
        try wide.enrol("482916")
        if secret != "48 29 16" {
            #expect(try wide.run(["verify", "--pin-stdin"], input: secret + "\n").status == 1)
            #expect(wide.remaining == 4)
        }
    }

    @Test func aWrongPINThatCouldBeOneIsCounted() throws {
        let cli = CLI()
        try cli.enrol("482916")
        #expect(try cli.run(["verify", "--pin-stdin"], input: "000000\n").status == 1)
        #expect(cli.remaining == 4)
    }

    @Test func aChangeWhoseCurrentPINCannotBeOneCountsNothing() throws {
        let cli = CLI()
        try cli.enrol("482916")
        let result = try cli.run(["--json", "change", "--pin-stdin"], input: "hunter2\n739154\n739154\n")
        #expect((result.json["error"] as? [String: Any])?["code"] as? String == "not-a-pin", "\(result.stdout)")
        #expect(cli.remaining == 5)
    }
}

@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
struct PromptTextTests {
    let terminal = TerminalTests()

    @Test func thePINPromptNamesTheUserAndTheTriesLeft() throws {
        let cli = CLI()
        try cli.enrol("482916")
        let (screen, status) = try terminal.type(["wait:tokenpin PIN for ", "482916\\r"], cli, ["verify"])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("tokenpin PIN for \(EmptyEntryTests.user) (5 tries left): "), "\(screen)")
        _ = try cli.run(["verify", "--pin-stdin"], input: "000000\n")
        let (change, _) = try terminal.type(
            ["wait:Current tokenpin PIN for ", "\\r"], cli, ["change"])
        #expect(change.contains("Current tokenpin PIN for \(EmptyEntryTests.user) (4 tries left): "), "\(change)")
        #expect(change.contains("nothing was tried or counted"), "Enter alone cancels on a terminal: \(change)")
        #expect(cli.remaining == 4)
    }

    @Test func noProgressLineLandsOnTheReplaceQuestion() throws {
        let cli = CLI()
        try cli.enrol()
        try KeyReplacementCLITests.giveTheSimulatedCardAForeignKey(cli.store + "/sim-card.json", cli)
        let question = "to go ahead (anything else keeps it): "
        let (screen, status) = try terminal.type(
            [
                "wait:tokenpin PIN for ", "482916\\r", "wait:Card PIN", "123456\\r", "wait:Admin PIN", "12345678\\r",
                "wait:" + question, "sleep:1", "no\\r",
            ], cli,
            ["--reader", "sim", "toggle", "token", "on", "--generate-key"],
            environment: ["TOKENPIN_SLOW_STEP_MS": "300"])
        #expect(status == 130, "\(screen)")
        let after = screen.components(separatedBy: question).last ?? ""
        #expect(!after.contains("..."), "a progress line landed on the question: \(screen)")
    }

    @Test func aTooShortNewCardPINIsRefusedBeforeTheConfirmationSayingTheRange() throws {
        let cli = CLI()
        try cli.enrol()
        #expect(
            try cli.run(
                ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
                input: "482916\n123456\n12345678\n"
            ).status == 0)
        let result = try cli.run(["--reader", "sim", "token", "change-pin", "--pin-stdin"], input: "123456\n1234\n")
        #expect(result.status == 5, "refused before the confirmation was asked: \(result.stderr)")
        #expect(result.stderr.contains("a card PIN has 6 to "), "\(result.stderr)")
        #expect(
            try cli.run(["--reader", "sim", "verify", "--method", "token", "--pin-stdin"], input: "123456\n").status
                == 0)
    }

    @Test func theCardPINPromptNamesTheCard() throws {
        let cli = CLI()
        try cli.enrol("482916")
        // The simulated YubiKey, with Yubico's manufacturer ID and a serial as a YubiKey's (BCD of the decimal).
        let yubikey = ["TOKENPIN_SIM_PROFILE": "yubikey5"]
        #expect(try cli.run(["--reader", "sim", "readers"], environment: yubikey).status == 0)
        let stateFile = cli.store + "/sim-card.json"
        var state = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stateFile)))
                as? [String: Any])
        state["manufacturer"] = 6
        state["serial"] = 0x1234_5678
        try JSONSerialization.data(withJSONObject: state).write(to: URL(fileURLWithPath: stateFile))
        let bind = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n", environment: ["TOKENPIN_SIM_PROFILE": "yubikey5"])
        #expect(bind.status == 0, "\(bind.stderr)")
        let (screen, status) = try terminal.type(
            ["wait:Card PIN for ", "123456\\r"], cli, ["--reader", "sim", "verify"],
            environment: ["TOKENPIN_SIM_PROFILE": "yubikey5"])
        #expect(status == 0, "\(screen)")
        #expect(screen.contains("Card PIN for YubiKey 5 12345678 (3 tries left): "), "\(screen)")
    }
}
