import Foundation
import Testing
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator

/// `--reader sim` as any of tokenpin-sim's profiles, chosen with `TOKENPIN_SIM_PROFILE` when the card is made.
@Suite struct SimulatorProfileCLITests {
    static let yubiKey = ["TOKENPIN_SIM_PROFILE": "yubikey5"]

    /// Generates a decryption key on the simulated card in `stateFile` with the algorithm its slot is set to, as
    /// gpg's `generate` would (admin PIN); nothing else on the card changes.
    static func generateDecryptionKey(stateFile: String, profile: SimulatedProfile) throws {
        let card = try SimulatedCard(stateFile: stateFile, profile: profile)
        let session = OpenPGPSession(connection: SimulatedCardConnection(card: card, sleep: { _ in }))
        try session.select()
        var admin = Array("12345678".utf8)
        try session.verify(.pw3, pin: SecretBytes(consuming: &admin))
        _ = try session.generateKey(for: .decryption)
        card.reset()
    }

    /// The card's state file, decoded.
    static func cardState(_ stateFile: String) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stateFile)))
                as? [String: Any])
    }

    /// The decryption slot's attributes (`C2`) and fingerprint, as the card holds them.
    static func decryptionKey(_ stateFile: String) throws -> (attributes: [UInt8], fingerprint: [UInt8]) {
        let keys = try #require(try cardState(stateFile)["keys"] as? [[String: Any]])
        let attributes = try #require((keys[1]["attributes"] as? String).flatMap { Data(base64Encoded: $0) })
        let fingerprint = try #require((keys[1]["fingerprint"] as? String).flatMap { Data(base64Encoded: $0) })
        return ([UInt8](attributes), [UInt8](fingerprint))
    }

    /// The token binding in the record on disk.
    static func tokenBinding(_ cli: CLI) -> [String: Any]? {
        let slots = cli.record["slots"] as? [[String: Any]] ?? []
        return slots.lazy.compactMap { $0["token"] as? [String: Any] }.first
    }

    @Test("a yubikey5 card: the token binds to its RSA 2048 key as it is, without --generate-key, and verifies")
    func yubiKeyBindsToItsRSAKey() throws {
        let cli = CLI()
        try cli.enrol()
        let stateFile = cli.store + "/sim-card.json"
        // The card is made on first use, as a YubiKey 5 ships: RSA 2048 in the decryption slot, no key yet.
        let first = try cli.run(["--reader", "sim", "readers"], environment: Self.yubiKey)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try String(contentsOfFile: stateFile + ".profile", encoding: .utf8) == "yubikey5\n")
        #expect(try Self.cardState(stateFile)["piv"] != nil, "a YubiKey 5 carries the PIV application too")
        #expect(try Self.decryptionKey(stateFile).attributes == [0x01, 0x08, 0x00, 0x00, 0x11, 0x00])

        try Self.generateDecryptionKey(stateFile: stateFile, profile: .yubikey)
        let before = try Self.decryptionKey(stateFile)
        let bind = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--pin-stdin"], input: "482916\n123456\n",
            environment: Self.yubiKey)
        #expect(bind.status == 0, "\(bind.stderr)")
        #expect(!bind.stderr.contains("Admin PIN"), "nothing on the card was replaced")
        #expect(Self.tokenBinding(cli)?["algorithm"] as? String == "rsa2048")
        let after = try Self.decryptionKey(stateFile)
        #expect(after.attributes == before.attributes && after.fingerprint == before.fingerprint)

        // Later runs need no variable: the card stays the YubiKey 5 it was made as.
        for _ in 0..<2 {
            let verify = try cli.run(
                ["--reader", "sim", "--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
            #expect(verify.status == 0 && verify.json["method"] as? String == "token", "\(verify.stdout)")
        }
        #expect(cli.remaining == 5)
    }

    @Test("an unknown profile name is a configuration error naming the variable and the profiles (exit 78)")
    func unknownProfileIsRefused() throws {
        let cli = CLI()
        let text = try cli.run(["--reader", "sim", "readers"], environment: ["TOKENPIN_SIM_PROFILE": "yubikey4"])
        #expect(text.status == 78, "\(text.stderr)")
        #expect(
            text.stderr.contains("TOKENPIN_SIM_PROFILE: unknown simulated card profile `yubikey4`"), "\(text.stderr)")
        #expect(text.stderr.contains("openpgp, piv-card, yubikey5, nitrokey3, gnuk"), "\(text.stderr)")
        let json = try cli.run(
            ["--reader", "sim", "--json", "readers"], environment: ["TOKENPIN_SIM_PROFILE": "yubikey4"])
        #expect(json.status == 78)
        #expect((json.json["error"] as? [String: Any])?["code"] as? String == "configuration", "\(json.stdout)")
        #expect(!FileManager.default.fileExists(atPath: cli.store + "/sim-card.json"), "no card was made")
    }

    @Test("a card keeps the profile it was made as; a card made before profiles were recorded is openpgp")
    func existingCardKeepsItsProfile() throws {
        let cli = CLI()
        let stateFile = cli.store + "/sim-card.json"
        #expect(try cli.run(["--reader", "sim", "readers"], environment: ["TOKENPIN_SIM_PROFILE": "gnuk"]).status == 0)
        #expect(try Self.decryptionKey(stateFile).attributes.first == 0x12, "gnuk is made with cv25519")
        let later = try cli.run(["--reader", "sim", "readers"], environment: Self.yubiKey)
        #expect(later.status == 0, "\(later.stderr)")
        #expect(try String(contentsOfFile: stateFile + ".profile", encoding: .utf8) == "gnuk\n")
        #expect(try Self.cardState(stateFile)["piv"] == nil, "no YubiKey application was added")

        try FileManager.default.removeItem(atPath: stateFile + ".profile")
        #expect(try cli.run(["--reader", "sim", "readers"], environment: Self.yubiKey).status == 0)
        #expect(!FileManager.default.fileExists(atPath: stateFile + ".profile"), "an old card is left as it is")
        #expect(try Self.cardState(stateFile)["piv"] == nil)

        try "yubikey4\n".write(toFile: stateFile + ".profile", atomically: true, encoding: .utf8)
        let broken = try cli.run(["--reader", "sim", "readers"])
        #expect(broken.status == 6, "\(broken.stderr)")
        #expect(broken.stderr.contains("names no profile"), "\(broken.stderr)")
    }

    @Test(
        "bench --token runs on the simulated card of every OpenPGP profile",
        arguments: [
            "openpgp", "yubikey5", "nitrokey3", "gnuk",
        ])
    func benchTokenOnEveryProfile(profile: String) throws {
        let cli = CLI()
        // A Gnuk takes no extended APDUs: the bare round must send GET DATA short, as the session does.
        let result = try cli.run(
            ["--reader", "sim", "--json", "bench", "--token", "--iterations", "1", "--pin-stdin"],
            input: "123456\n12345678\n", environment: ["TOKENPIN_SIM_PROFILE": profile])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect((4...5).contains(result.json["apdusPerVerify"] as? Int ?? 0), "\(result.stdout)")
    }
}
