import Foundation
import Testing

/// The built CLI with a PIV card as the simulated card (`TOKENPIN_SIM_PROFILE=piv-card`): `--app piv` binds,
/// verifies and manages the card PIN through the PIV application, with the exit codes docs/cli.md gives.
@Suite struct PIVTokenCLITests {
    static let pivCard = ["TOKENPIN_SIM_PROFILE": "piv-card"]
    static let factoryKey = "010203040506070801020304050607080102030405060708"

    @Test("a PIV card: --generate-key needs --yes for the factory management key, then binds in 82 and verifies")
    func generateBindAndVerify() throws {
        let cli = CLI()
        try cli.enrol()
        let sim = ["--reader", "sim"]
        let refused = try cli.run(
            sim + ["toggle", "token", "on", "--app", "piv", "--generate-key", "--pin-stdin"],
            input: "482916\n123456\n\(Self.factoryKey)\n", environment: Self.pivCard)
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("factory management key"), "\(refused.stderr)")

        let bind = try cli.run(
            sim + ["--json", "toggle", "token", "on", "--app", "piv", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n\(Self.factoryKey)\n", environment: Self.pivCard)
        #expect(bind.status == 0, "\(bind.stderr)")
        let slots = cli.record["slots"] as? [[String: Any]] ?? []
        let binding = try #require(slots.lazy.compactMap { $0["token"] as? [String: Any] }.first)
        #expect(binding["application"] as? String == "piv")
        #expect(binding["slot"] as? String == "82")
        #expect((binding["serial"] as? String)?.hasPrefix("piv-guid:") == true)

        // status says which application, slot and algorithm the card is bound through; readers which application
        // it found and the key a new binding would use.
        let status = try cli.run(sim + ["--json", "status"], environment: Self.pivCard)
        let token = try #require(status.json["token"] as? [String: Any], "\(status.stdout)")
        #expect(token["application"] as? String == "piv")
        #expect(token["slot"] as? String == "82")
        #expect(token["algorithm"] as? String == "nistp256")
        #expect(try cli.run(sim + ["status"]).stdout.contains("Binding:    PIV slot 82, nistp256"))
        let readers = try cli.run(sim + ["--json", "readers", "--app", "piv"], environment: Self.pivCard)
        let reader = try #require((readers.json["readers"] as? [[String: Any]])?.first, "\(readers.stdout)")
        #expect(reader["application"] as? String == "piv", "\(reader)")

        let verify = try cli.run(sim + ["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.status == 0 && verify.json["method"] as? String == "token", "\(verify.stdout)")

        // A card PIN of 9 bytes never reaches the card: the token is unavailable (exit 6), the tries unchanged.
        let long = try cli.run(sim + ["verify", "--method", "token", "--pin-stdin"], input: "123456789\n")
        #expect(long.status == 6, "\(long.stderr)")
        #expect(long.stderr.contains("a PIV PIN has 1 to 8 bytes"), "\(long.stderr)")
        let wrong = try cli.run(sim + ["verify", "--method", "token", "--pin-stdin"], input: "654321\n")
        #expect(wrong.status == 1, "\(wrong.stderr)")
        #expect(wrong.stderr.contains("2 tries left"), "\(wrong.stderr)")

        let change = try cli.run(
            sim + ["token", "change-pin", "--pin-stdin"], input: "123456\n24681357\n24681357\n")
        #expect(change.status == 0, "\(change.stderr)")
        let unblock = try cli.run(
            sim + ["token", "unblock", "--pin-stdin"], input: "12345678\n13572468\n13572468\n")
        #expect(unblock.status == 0, "\(unblock.stderr)")
        let after = try cli.run(sim + ["verify", "--method", "token", "--pin-stdin"], input: "13572468\n")
        #expect(after.status == 0, "\(after.stderr)")
        #expect(cli.remaining == 5, "no PIN try was spent")
    }

    @Test("unblocking a PIV card with --admin is a usage error, and a card without PIV cannot be bound through it")
    func wrongCredentialOrApplication() throws {
        let cli = CLI()
        try cli.enrol()
        let sim = ["--reader", "sim", "--json"]
        let admin = try cli.run(
            sim + ["token", "unblock", "--admin", "--pin-stdin"], input: "12345678\n13572468\n13572468\n",
            environment: Self.pivCard)
        #expect(admin.status == 2, "\(admin.stdout)")
        let message = (admin.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.contains("has no admin PIN to unblock with"), "\(admin.stdout)")

        let other = CLI()
        try other.enrol()
        let noPIV = try other.run(
            sim + ["toggle", "token", "on", "--app", "piv", "--pin-stdin"], input: "482916\n123456\n",
            environment: ["TOKENPIN_SIM_PROFILE": "openpgp"])
        #expect(noPIV.status == 6, "\(noPIV.stdout)")
        let why = (noPIV.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(why.contains("no PIV card is present"), "\(noPIV.stdout)")
        #expect(other.remaining == 5, "no PIN try was spent")
    }
}
