import Foundation
import Testing
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// This suite's part of the sandbox (`PCSCSandbox`): the first four vpcd ports (readers `tokenpin vpcd 0 00 0x`
/// and `tokenpin vpcd 2 00 0x`); the PC/SC layer's own tests use the last ones, so both can run at once.
extension PCSCSandbox {
    static let hasCLIPorts = isActive && ports.count >= 6
    static func reader(_ index: Int) -> String { reader(forPortIndex: index) }
}

/// A tokenpin-sim process: a virtual card in one vpcd reader, through the real pcscd.
final class VirtualCard {
    private(set) var simulator: SimulatorProcess
    var index: Int { simulator.portIndex }

    /// `readable`: wait until `tokenpin readers` reads the card's serial too (not for a card whose answers are spoiled).
    ///
    /// When a card vanished mid-command (a fault) and pcscd's reset of it failed, pcscd may keep the reader marked
    /// as holding an unpowered card that the next card, connecting to vpcd before pcscd polled the reader again,
    /// never replaces (in about half the runs of this suite on main; pcsc-lite 1.9.9, vpcd 3.3): that card is started
    /// once more, which pcscd sees as a removal and an insertion.
    init(
        index: Int, state: String, serial: String = "0000AAAA", arguments: [String] = [], readable: Bool = true,
        cli: CLI
    ) throws {
        let start = {
            try SimulatorProcess(portIndex: index, state: state, arguments: ["--serial", serial] + arguments)
        }
        try cli.waitForCard(in: PCSCSandbox.reader(index), present: false)
        simulator = try start()
        if try cli.waitForCard(in: simulator.reader, present: true, readable: readable, attempts: 60, record: false) {
            return
        }
        simulator.kill()
        try cli.waitForCard(in: PCSCSandbox.reader(index), present: false)
        simulator = try start()
        try cli.waitForCard(in: simulator.reader, present: true, readable: readable)
    }

    /// Pulls the card and waits until `tokenpin readers` shows it gone.
    func pull(_ cli: CLI) throws {
        guard simulator.isRunning else { return }
        simulator.kill()
        try cli.waitForCard(in: simulator.reader, present: false)
    }
}

extension CLI {
    /// A CLI limited to the readers of this suite (`reader = tokenpin vpcd 0 *`).
    static func pcsc(_ extra: String = "") -> CLI { CLI(config: "reader = tokenpin vpcd 0 *\n" + extra) }

    /// Polls `tokenpin readers --json` until `reader` shows a card (with its serial, when `readable`) or none, at
    /// most `attempts` times; false (recorded as an issue when `record`) when it never did.
    @discardableResult
    func waitForCard(
        in reader: String, present: Bool, readable: Bool = true, attempts: Int = 200, record: Bool = true
    ) throws -> Bool {
        for _ in 0..<attempts {
            let result = try run(["--json", "readers"])
            let readers = result.json["readers"] as? [[String: Any]] ?? []
            if let entry = readers.first(where: { $0["name"] as? String == reader }),
                entry["cardPresent"] as? Bool == present, !present || !readable || entry["serial"] is String
            {
                return true
            }
            if readers.isEmpty && !present { return true }
            usleep(50_000)
        }
        if record { Issue.record("\(reader) did not show the card \(present ? "inserted" : "removed")") }
        return false
    }

    func reader(_ json: [String: Any], _ name: String) -> [String: Any]? {
        (json["readers"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    /// Enrols 482916 and binds the card in reader 0, generating its cv25519 key.
    func bindCard() throws {
        try enrol()
        let bind = try run(
            ["--json", "toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        #expect(bind.json["event"] as? String == "typeChanged")
        #expect(bind.json["enabled"] as? Bool == true)
    }
}

@Suite(.serialized, .enabled(if: PCSCSandbox.hasCLIPorts)) struct PCSCEndToEndTests {
    @Test func everyTokenFlowThroughPcscd() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        try cli.enrol()

        let readers = try cli.run(["--json", "readers"])
        let entry = try #require(cli.reader(readers.json, PCSCSandbox.reader(0)))
        #expect(entry["openpgp"] as? Bool == true && entry["usable"] as? Bool == false)
        #expect((entry["unusableReason"] as? String)?.contains("set to rsa2048 but holds no key") == true)
        #expect(entry["serial"] as? String == "FFFE0000AAAA")

        let refused = try cli.run(["toggle", "token", "on", "--pin-stdin"], input: "482916\n")
        #expect(refused.status == 6 && refused.stderr.contains("--generate-key"))

        let bind = try cli.run(
            ["toggle", "token", "on", "--generate-key", "--yes", "--pin-stdin"],
            input: "482916\n123456\n12345678\n")
        #expect(bind.status == 0, "\(bind.stderr)")
        #expect(bind.stdout.contains("Token enabled: card FFFE:0000AAAA"))

        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.json["method"] as? String == "token")

        let types = try cli.run(["types"])
        #expect(types.stdout.contains("token  enabled   card FFFE:0000AAAA, present"))

        let status = try cli.run(["--json", "status"])
        let token = try #require(status.json["token"] as? [String: Any])
        #expect(token["present"] as? Bool == true && token["cardTriesLeft"] as? Int == 3)
        #expect(token["reader"] as? String == PCSCSandbox.reader(0))

        #expect(try cli.run(["change", "--pin-stdin"], input: "482916\n739154\n739154\n").status == 0)
        #expect(
            try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n").json["method"]
                as? String == "token")
        #expect(
            try cli.run(["--json", "verify", "--method", "pin", "--pin-stdin"], input: "739154\n").json["method"]
                as? String == "pin")

        let changeCard = try cli.run(["token", "change-pin", "--pin-stdin"], input: "123456\n246813\n246813\n")
        #expect(changeCard.status == 0, "\(changeCard.stderr)")
        #expect(
            try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "246813\n").json["method"]
                as? String == "token")

        let wrongPIN = try cli.run(["--json", "toggle", "token", "off", "--pin-stdin"], input: "000001\n")
        #expect(wrongPIN.status == 1, "a wrong PIN switches nothing off: \(wrongPIN.stderr)")
        #expect(cli.remaining == 4, "and counts")
        let off = try cli.run(
            ["--json", "toggle", "token", "off", "--method", "token", "--pin-stdin"], input: "246813\n")
        #expect(off.status == 0, "\(off.stderr)")
        #expect(off.json["method"] as? String == "token")
        #expect(try cli.run(["types"]).stdout.contains("token  disabled"))
        _ = card
    }

    @Test func aPulledCardIsReportedAndCostsNoPINTry() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        try cli.bindCard()
        try card.pull(cli)
        let verify = try cli.run(["--json", "verify", "--method", "pin", "--pin-stdin"], input: "482916\n")
        #expect(verify.status == 0)
        #expect(verify.json["method"] as? String == "pin")
        #expect(verify.stderr.isEmpty || !verify.stderr.contains("482916"))
        let forced = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "")
        #expect(forced.status == 6, "\(forced.stderr)")
        let failure = forced.json["tokenFailure"] as? [String: Any]
        #expect((failure?["reason"] as? String)?.contains("not in any reader") == true, "\(forced.stdout)")
        #expect(failure?.keys.contains("cardTriesLeft") == true)
        #expect(cli.remaining == 5)
    }

    /// A bound card, pulled and inserted again with a fault injected (`fallback = deny`, so nothing hides it).
    func boundCard(withFault fault: String) throws -> (CLI, VirtualCard) {
        let cli = CLI.pcsc("fallback = deny\n")
        let state = cli.directory + "/card.json"
        let card = try VirtualCard(index: 0, state: state, cli: cli)
        try cli.bindCard()
        try card.pull(cli)
        return (cli, try VirtualCard(index: 0, state: state, arguments: ["--fault", fault], cli: cli))
    }

    @Test func aCardPulledMidVerifyGivesAClearErrorAndNoFalseSuccess() throws {
        // The card vanishes in the middle of PSO:DECIPHER.
        let (cli, card) = try boundCard(withFault: "vanish@2A*1")
        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.status == 6, "\(verify.stdout) \(verify.stderr)")
        let message = (verify.json["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(
            message.contains("removed") || message.contains("not in any reader") || message.contains("card"),
            "\(message)")
        #expect(cli.remaining == 5, "the PIN counter is untouched")
        _ = card
    }

    @Test func malformedAnswersAreClearErrors() throws {
        let (cli, card) = try boundCard(withFault: "malformed:truncated@2A")
        let verify = try cli.run(["verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect([1, 6].contains(verify.status), "\(verify.stderr)")
        #expect(verify.stderr.contains("error: ") || verify.stderr.contains("Token not verified"))
        #expect(cli.remaining == 5)
        _ = card
    }

    @Test func anotherCardIsNeverSentThePIN() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        try cli.bindCard()
        try card.pull(cli)
        let other = try VirtualCard(index: 1, state: cli.directory + "/other.json", serial: "0000BBBB", cli: cli)
        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "482916\n")
        #expect(verify.status == 6)
        #expect(
            ((verify.json["tokenFailure"] as? [String: Any])?["reason"] as? String)?.contains("other cards are") == true
        )
        let readers = try cli.run(["--json", "readers"])
        #expect(cli.reader(readers.json, PCSCSandbox.reader(1))?["cardTriesLeft"] as? Int == 3)
        _ = other
    }

    @Test func aBlockedCardPINIsUnblockedWithTheAdminPIN() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        try cli.bindCard()
        for _ in 0..<3 {
            #expect(try cli.run(["verify", "--method", "token", "--pin-stdin"], input: "000000\n").status == 1)
        }
        let blocked = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "482916\n")
        let failure = blocked.json["tokenFailure"] as? [String: Any]
        #expect((failure?["reason"] as? String)?.contains("blocked") == true, "\(blocked.stdout)")
        #expect(failure?["cardTriesLeft"] as? Int == 0)
        #expect(cli.remaining == 5, "card failures never consumed PIN tries")
        let unblock = try cli.run(["token", "unblock", "--admin", "--pin-stdin"], input: "12345678\n135792\n135792\n")
        #expect(unblock.status == 0, "\(unblock.stderr)")
        #expect(
            try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "135792\n").json["method"]
                as? String == "token")
        _ = card
    }

    @Test func theVerifiedStateIsNotLeftOnTheCard() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        try cli.bindCard()
        #expect(try cli.run(["verify", "--method", "token", "--pin-stdin"], input: "123456\n").status == 0)
        // Another client right after: PSO:DECIPHER without VERIFY must be refused (6982).
        let point = "A6 25 7F 49 22 86 20 " + String(repeating: "09 ", count: 32)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/opensc-tool")
        process.arguments = [
            "-r", PCSCSandbox.reader(0), "-s", "00 A4 04 00 06 D2 76 00 01 24 01",
            "-s", "00 2A 80 86 27 " + point + "00",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(output.contains("SW1=0x69, SW2=0x82"), "\(output)")
        _ = card
    }

    /// Each factory profile through pcscd: bind (generating the key), verify, and a wrong card PIN that counts
    /// on the card whether the device answers 63Cx (Nitrokey 3) or 6982 (YubiKey 5, Gnuk), over extended
    /// length (YubiKey 5, Nitrokey 3) or short APDUs with chaining only (Gnuk).
    @Test(arguments: ["yubikey5", "nitrokey3", "gnuk"])
    func everyFactoryProfileBindsAndVerifies(profile: String) throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(
            index: 0, state: cli.directory + "/card.json", arguments: ["--profile", profile], cli: cli)
        try cli.bindCard()
        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.json["method"] as? String == "token", "\(profile): \(verify.stderr)")
        let wrong = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "000000\n")
        #expect(wrong.status == 1, "\(profile): \(wrong.stderr)")
        let failure = wrong.json["tokenFailure"] as? [String: Any]
        #expect((failure?["reason"] as? String)?.contains("wrong card PIN") == true, "\(profile): \(wrong.stdout)")
        #expect(failure?["cardTriesLeft"] as? Int == 2, "\(profile): \(wrong.stdout)")
        #expect(try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n").status == 0)
        #expect(cli.remaining == 5, "card failures never consumed PIN tries")
        _ = card
    }

    @Test func benchTokenRefusesACardNotBoundToTheUser() throws {
        let cli = CLI.pcsc()
        let card = try VirtualCard(index: 0, state: cli.directory + "/card.json", cli: cli)
        let bench = try cli.run(["bench", "--token", "--iterations", "1", "--pin-stdin"], input: "123456\n12345678\n")
        #expect(bench.status == 2, "\(bench.stderr)")
        #expect(bench.stderr.contains("card FFFE:0000AAAA"), "\(bench.stderr)")
        #expect(bench.stderr.contains("decryption key would be replaced"), "\(bench.stderr)")
        let readers = try cli.run(["--json", "readers"])
        let entry = try #require(cli.reader(readers.json, PCSCSandbox.reader(0)))
        #expect(entry["usable"] as? Bool == false, "the card's key was left alone")
        #expect(entry["cardTriesLeft"] as? Int == 3)
        _ = card
    }

    @Test func pcscdNotRunningIsExitSixtyNineWithAHint() throws {
        let cli = CLI.pcsc()
        try cli.enrol()
        let environment = ["PCSCLITE_CSOCK_NAME": cli.directory + "/no-pcscd.comm"]
        let readers = try cli.run(["readers"], environment: environment)
        #expect(readers.status == 69, "\(readers.stderr)")
        #expect(readers.stderr.contains("pcscd"))
        let bind = try cli.run(["toggle", "token", "on", "--pin-stdin"], input: "482916\n", environment: environment)
        #expect(bind.status == 69)
        #expect(cli.remaining == 5, "no PIN asked, none counted")
        let status = try cli.run(["--json", "status"], environment: environment)
        #expect(status.status == 0)
        #expect(((status.json["token"] as? [String: Any])?["problem"] as? String)?.contains("pcscd") == true)
    }
}
