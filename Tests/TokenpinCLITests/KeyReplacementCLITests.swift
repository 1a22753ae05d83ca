import Foundation
import Testing

/// `--generate-key` over a key already on the card: shown, then typed away on a terminal, `--yes` for scripts,
/// locally and through tokenpind.
@Suite struct KeyReplacementCLITests {
    static let fingerprint = "0102 0304 0506 0708 090A 0B0C 0D0E 0F10 1112 1314"
    static let fingerprintHex = "0102030405060708090A0B0C0D0E0F1011121314"

    /// Puts an imported NIST P-256 decryption key (fingerprint 01..14, created 2023-09-12) into the simulated card's
    /// state file `path`, creating the card first through `cli` when the file does not exist yet.
    static func giveTheSimulatedCardAForeignKey(_ path: String, _ cli: CLI) throws {
        if !FileManager.default.fileExists(atPath: path) {
            let store = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(
                atPath: store, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            _ = try cli.run(["--local", "--store", store, "--reader", "sim", "readers"])
        }
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
                as? [String: Any])
        var keys = try #require(json["keys"] as? [[String: Any]])
        // ECDH on NIST P-256 (C2 `12` + the curve's OID) with a valid private scalar: a key gpg could have put there.
        keys[1]["attributes"] = Data([0x12, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]).base64EncodedString()
        keys[1]["secret"] = Data(repeating: 7, count: 32).base64EncodedString()
        keys[1]["origin"] = 2
        keys[1]["fingerprint"] = Data((1...20).map { UInt8($0) }).base64EncodedString()
        keys[1]["generationTime"] = Data([0x65, 0x00, 0x00, 0x00]).base64EncodedString()
        json["keys"] = keys
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    /// The simulated card's decryption fingerprint (hex) as the card reports it, read from its state file.
    static func decryptionFingerprint(_ cli: CLI, path: String? = nil) throws -> String? {
        let file = path ?? cli.store + "/sim-card.json"
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file))) as? [String: Any]
        guard let keys = json?["keys"] as? [[String: Any]], let print = keys[1]["fingerprint"] as? String,
            let bytes = Data(base64Encoded: print)
        else { return nil }
        return bytes.map { String(format: "%02X", $0) }.joined()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func onATerminalTheKeyIsShownAndReplaceMustBeTyped() throws {
        let cli = CLI()
        try cli.enrol()
        try Self.giveTheSimulatedCardAForeignKey(cli.store + "/sim-card.json", cli)
        let arguments = ["--reader", "sim", "toggle", "token", "on", "--generate-key"]
        let refused = try TerminalTests().type(
            [
                "wait:PIN: ", "482916\\r", "wait:Card PIN", "123456\\r", "wait:Admin PIN", "12345678\\r",
                "wait:to go ahead", "yes\\r",
            ], cli, arguments)
        #expect(refused.status == 130, "\(refused.screen)")
        #expect(
            refused.screen.contains(Self.fingerprint) && refused.screen.contains("created 2023-09-12"),
            "\(refused.screen)")
        #expect(try Self.decryptionFingerprint(cli) == Self.fingerprintHex, "`yes` is not `replace`: nothing written")

        let typed = try TerminalTests().type(
            [
                "wait:PIN: ", "482916\\r", "wait:Card PIN", "123456\\r", "wait:Admin PIN", "12345678\\r",
                "wait:to go ahead", "replace\\r",
            ], cli, arguments)
        #expect(typed.status == 0, "\(typed.screen)")
        #expect(typed.screen.contains("Token enabled"))
        #expect(try Self.decryptionFingerprint(cli) != Self.fingerprintHex, "the key was replaced")
    }

    @Test func yesReplacesFromAScript() throws {
        let cli = CLI()
        try cli.enrol()
        try Self.giveTheSimulatedCardAForeignKey(cli.store + "/sim-card.json", cli)
        let result = try cli.run(
            ["--reader", "sim", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.decryptionFingerprint(cli) != Self.fingerprintHex)
    }

    @Test(.enabled(if: TestDaemon.isAvailable))
    func throughTheDaemonTheQuestionIsRelayedAndScriptsNeedYes() throws {
        let cli = CLI()
        let cardFile = cli.directory + "/daemon-state/sim-card.json"
        try Self.giveTheSimulatedCardAForeignKey(cardFile, cli)
        let daemon = try TestDaemon(cli)
        defer { daemon.stop() }
        let socket = ["--socket", daemon.socket]
        #expect(try cli.run(socket + ["enrol", "--pin-stdin"], input: "482916\n482916\n").status == 0)
        let script = try cli.run(
            socket + ["toggle", "token", "on", "--generate-key", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(script.status == 2, "\(script.stderr)")
        #expect(script.stderr.contains("add --yes") && script.stderr.contains(Self.fingerprint), "\(script.stderr)")
        #expect(try Self.decryptionFingerprint(cli, path: cardFile) == Self.fingerprintHex)

        if FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") {
            let typed = try TerminalTests().type(
                [
                    "wait:PIN: ", "482916\\r", "wait:Card PIN", "123456\\r", "wait:Admin PIN", "12345678\\r",
                    "wait:to go ahead", "replace\\r",
                ],
                cli, socket + ["toggle", "token", "on", "--generate-key"])
            #expect(typed.status == 0, "\(typed.screen)")
            #expect(
                typed.screen.contains(Self.fingerprint), "the daemon's question reached the terminal: \(typed.screen)")
            #expect(try Self.decryptionFingerprint(cli, path: cardFile) != Self.fingerprintHex)
        }
    }
}
