import Foundation
import Testing

/// What a script sends never reaches the wrong secret, and nothing on a card is replaced without asking;
/// run on the in-process simulated card (`--reader sim`), so no pcscd is needed.
@Suite struct ScriptSafetyTests {
    /// A CLI on the simulated card, with `482916` enrolled and the card bound (factory PINs 123456 / 12345678).
    static func boundToSimulatedCard(_ config: String = "") throws -> CLI {
        let cli = CLI(config: config)
        try cli.enrol()
        let bind = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        return cli
    }

    /// The simulated card's PIN tries left, as `readers` reports them from the card.
    static func cardTries(_ cli: CLI) throws -> Int? {
        let readers = try cli.run(["--reader", "sim", "--json", "readers"])
        return (readers.json["readers"] as? [[String: Any]])?.first?["cardTriesLeft"] as? Int
    }

    @Test func verifyFromStandardInputWithTheTokenNeedsMethod() throws {
        let cli = try Self.boundToSimulatedCard()
        for _ in 0..<3 {
            let guessed = try cli.run(["--reader", "sim", "--json", "verify", "--pin-stdin"], input: "482916\n")
            #expect(guessed.status == 2, "\(guessed.stdout)")
            let error = guessed.json["error"] as? [String: Any]
            #expect(error?["code"] as? String == "usage")
            #expect((error?["message"] as? String)?.contains("--method pin|token") == true)
        }
        #expect(try Self.cardTries(cli) == 3, "the PIN never reached the card")
        #expect(cli.remaining == 5)
        let text = try cli.run(["--reader", "sim", "verify", "--pin-stdin"], input: "482916\n")
        #expect(text.status == 2 && text.stderr.contains("--method") && text.stderr.contains("hint: "))

        let pin = try cli.run(
            ["--reader", "sim", "--json", "verify", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(pin.status == 0 && pin.json["method"] as? String == "pin")
        let token = try cli.run(
            ["--reader", "sim", "--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(token.status == 0 && token.json["method"] as? String == "token", "\(token.stdout)")
    }

    @Test func aTokenFailureIsInTheJSONWithTheCardsTriesLeft() throws {
        let cli = try Self.boundToSimulatedCard()
        let wrong = try cli.run(
            ["--reader", "sim", "--json", "verify", "--method", "token", "--pin-stdin"],
            input: "000000\n")
        #expect(wrong.status == 1, "\(wrong.stdout)")
        #expect(wrong.json["event"] as? String == "tokenFailed")
        let failure = try #require(wrong.json["tokenFailure"] as? [String: Any])
        #expect((failure["reason"] as? String)?.contains("wrong card PIN") == true)
        #expect(failure["cardTriesLeft"] as? Int == 2)
        #expect(cli.remaining == 5, "a card failure costs no PIN try")

        let text = try cli.run(["--reader", "sim", "verify", "--method", "token", "--pin-stdin"], input: "000000\n")
        #expect(text.status == 1)
        #expect(text.stderr.contains("Token not verified"))
        #expect(!text.stderr.contains("Token not used"), "one message per refusal: \(text.stderr)")
        #expect(try Self.cardTries(cli) == 1)
    }

    @Test func standardInputEndingIsSeventyFour() throws {
        let cli = try Self.boundToSimulatedCard()
        let ended = try cli.run(["--reader", "sim", "--json", "verify", "--method", "token", "--pin-stdin"], input: "")
        #expect(ended.status == 74)
        #expect((ended.json["error"] as? [String: Any])?["code"] as? String == "input")
        #expect(((ended.json["error"] as? [String: Any])?["message"] as? String)?.contains("card PIN line") == true)
        #expect(try Self.cardTries(cli) == 3)
    }

    @Test func generateKeyFromAScriptNeedsYesWhenAKeyWouldBeReplaced() throws {
        let cli = CLI()
        try cli.enrol()
        try KeyReplacementCLITests.giveTheSimulatedCardAForeignKey(cli.store + "/sim-card.json", cli)
        let result = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("add --yes"))
        #expect(result.stderr.contains(KeyReplacementCLITests.fingerprint), "the key is shown: \(result.stderr)")
        #expect(cli.remaining == 5, "nothing was counted")
        let types = try cli.run(["--json", "types"])
        #expect((types.json["types"] as? [[String: Any]])?.last?["enabled"] as? Bool == false)
        #expect(try KeyReplacementCLITests.decryptionFingerprint(cli) == KeyReplacementCLITests.fingerprintHex)
    }

    @Test func generateKeyOnAnEmptySlotNeedsNoConfirmation() throws {
        let cli = CLI()
        try cli.enrol()
        let result = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func benchTokenRunsOnTheSimulatedCardWithTheCardsTries() throws {
        let cli = CLI()
        let result = try cli.run(
            ["--reader", "sim", "--json", "bench", "--token", "--iterations", "1", "--pin-stdin"],
            input: "123456\n12345678\n")
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(result.json["apdusPerVerify"] as? Int ?? 0 > 0)
    }

    @Test func benchTokenOnTheBoundCardNeverGeneratesAKey() throws {
        let cli = try Self.boundToSimulatedCard()
        // Only the card PIN is asked: the bound card's key is used as it is.
        let result = try cli.run(
            ["--reader", "sim", "--json", "bench", "--token", "--iterations", "1", "--pin-stdin"],
            input: "123456\n")
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let verify = try cli.run(["--reader", "sim", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.status == 0, "the user's binding still opens: \(verify.stderr)")
    }
}
