import Foundation
import Testing
import TokenpinTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Hostile cards through pcscd, for both token applications: a card that stops answering mid-command (`stall`),
/// one that answers after the deadline (`late`), and answers spoiled on the way. Part of the end-to-end suite,
/// which runs its tests one at a time on the same readers.
extension PCSCEndToEndTests {
    /// The factory PIV management key, typed as hex.
    static let managementKey = "010203040506070801020304050607080102030405060708"

    /// The instruction byte of the bound key's command: PSO:DECIPHER, or PIV GENERAL AUTHENTICATE.
    static func keyInstruction(_ application: String) -> String { application == "piv" ? "87" : "2A" }

    /// A card of `application` (OpenPGP: a cv25519 key generated; PIV on a PIV card: a P-256 key generated in 82)
    /// bound with PIN 482916 and card PIN 123456, then pulled and inserted again with `faults`.
    func boundCard(_ application: String, faults: [String], config: String, readable: Bool = true) throws -> (
        CLI, VirtualCard
    ) {
        let cli = CLI.pcsc(config)
        let state = cli.directory + "/card.json"
        let profile = application == "piv" ? ["--profile", "piv-card"] : []
        let card = try VirtualCard(index: 0, state: state, arguments: profile, cli: cli)
        if application == "piv" {
            try cli.enrol()
            let bind = try cli.run(
                ["toggle", "token", "on", "--app", "piv", "--generate-key", "--yes", "--pin-stdin"],
                input: "482916\n123456\n\(Self.managementKey)\n")
            #expect(bind.status == 0, "\(bind.stderr)")
        } else {
            try cli.bindCard()
        }
        try card.pull(cli)
        let arguments = profile + faults.flatMap { ["--fault", $0] }
        return (cli, try VirtualCard(index: 0, state: state, arguments: arguments, readable: readable, cli: cli))
    }

    @Test(arguments: ["openpgp", "piv"])
    func aCardThatStallsMidCommandIsGivenUpAtTheDeadline(application: String) throws {
        let key = Self.keyInstruction(application)
        let (cli, card) = try boundCard(application, faults: ["stall@\(key)*1"], config: "card-timeout = 2\n")
        let start = ContinuousClock.now
        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        let elapsed = ContinuousClock.now - start
        #expect(verify.status == 6, "\(application): \(verify.stdout) \(verify.stderr)")
        let failure = verify.json["tokenFailure"] as? [String: Any]
        let reason = failure?["reason"] as? String ?? ""
        #expect(reason.contains("did not answer within 2 s"), "\(application): \(verify.stdout)")
        #expect(reason.contains(PCSCSandbox.reader(0)), "the reader is named: \(reason)")
        #expect(elapsed < .seconds(12), "\(application): the wait was bounded (\(elapsed))")
        #expect(cli.remaining == 5, "nothing counted")
        // The PIN needs no card: it verifies while the reader stays wedged.
        #expect(try cli.run(["verify", "--method", "pin", "--pin-stdin"], input: "482916\n").status == 0)
        // Another process meets the wedged reader, and also gets its answer by the deadline.
        let again = try cli.run(["verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(again.status == 6, "\(again.stderr)")
        #expect(again.stderr.contains("did not answer within 2 s"), "\(again.stderr)")
        // The card is pulled and comes back: the reader works again and the token verifies.
        try card.pull(cli)
        let profile = application == "piv" ? ["--profile", "piv-card"] : []
        let back = try VirtualCard(index: 0, state: cli.directory + "/card.json", arguments: profile, cli: cli)
        let verified = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verified.json["method"] as? String == "token", "\(application): \(verified.stderr)")
        _ = back
    }

    @Test(arguments: ["openpgp", "piv"])
    func anAnswerAfterTheDeadlineIsNeverUsed(application: String) throws {
        let key = Self.keyInstruction(application)
        let (cli, card) = try boundCard(application, faults: ["late:5000@\(key)*1"], config: "card-timeout = 2\n")
        let late = try cli.run(["verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(late.status == 6, "\(application): \(late.stderr)")
        #expect(late.stderr.contains("did not answer within 2 s"), "\(late.stderr)")
        #expect(cli.remaining == 5)
        // Once the late answer came (5 s after the command), the reader serves the next verify, which the card
        // answers in time; the PIN the late transaction verified did not outlive it (pcscd reset the card).
        var verified = false
        for _ in 0..<20 where !verified {
            let next = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
            verified = next.json["method"] as? String == "token"
            if !verified { usleep(500_000) }
        }
        #expect(verified, "\(application): the reader works again after the late answer")
        _ = card
    }

    @Test(arguments: ["openpgp", "piv"])
    func aWrongPINStatusToACommandThatSentNoPINIsAMalformedAnswer(application: String) throws {
        let read = application == "piv" ? "CB" : "CA"
        let (cli, card) = try boundCard(
            application, faults: ["sw:63C2@\(read)"], config: "fallback = deny\n", readable: false)
        let verify = try cli.run(["--json", "verify", "--method", "token", "--pin-stdin"], input: "123456\n")
        #expect(verify.status == 6, "\(application): \(verify.stdout) \(verify.stderr)")
        let reason = (verify.json["tokenFailure"] as? [String: Any])?["reason"] as? String ?? ""
        #expect(!reason.contains("wrong card PIN"), "\(reason)")
        #expect(reason.contains("GET DATA answered 63C2"), "\(reason)")
        #expect(cli.remaining == 5)
        let readers = try cli.run(["--json", "readers"])
        let entry = cli.reader(readers.json, PCSCSandbox.reader(0))
        #expect((entry?["unusableReason"] as? String)?.contains("no PIN was sent") == true, "\(readers.stdout)")
        _ = card
    }
}
