import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A simulated card whose decryption slot holds a key tokenpin cannot use (an imported RSA key with a
/// fingerprint and a creation date), as a YubiKey used with gpg does.
func cardWithForeignDecryptionKey(serial: UInt32 = 0x0000_2222) throws -> SimulatedCard {
    let path = NSTemporaryDirectory() + "/tokenpin-card-\(UUID().uuidString).json"
    // A real RSA 2048 key generated on the card (its factory attributes), as gpg would have it made there;
    // gpg then writes the fingerprint and the creation date, which the state file gets below.
    let card = try SimulatedCard(stateFile: path, serial: serial)
    card.powerOn()
    let select: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x06, 0xD2, 0x76, 0x00, 0x01, 0x24, 0x01, 0x00]
    let verifyAdmin: [UInt8] = [0x00, 0x20, 0x00, 0x83, 0x08] + Array("12345678".utf8)
    let generate: [UInt8] = [0x00, 0x47, 0x80, 0x00, 0x00, 0x00, 0x02, 0xB8, 0x00, 0x00, 0x00]
    for command in [select, verifyAdmin, generate] {
        let answer = card.process(command)
        try #require(answer.suffix(2) == [0x90, 0x00], "card setup: \(command.prefix(4)) answered \(answer.suffix(2))")
    }
    var json = try #require(
        try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    var keys = try #require(json["keys"] as? [[String: Any]])
    keys[1]["fingerprint"] = Data((1...20).map { UInt8($0) }).base64EncodedString()
    keys[1]["generationTime"] = Data([0x65, 0x00, 0x00, 0x00]).base64EncodedString()  // 2023-09-12 06:06:56 UTC
    json["keys"] = keys
    try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
    return try SimulatedCard(stateFile: path)
}

/// Every key written to a card is shown first and confirmed by typing `replace`; `--yes` is the only way for
/// scripts; an empty slot asks nothing.
@Suite struct KeyReplacementTests {
    let shown = "holds a decryption key (rsa2048"
    let fingerprint = "0102 0304 0506 0708 090A 0B0C 0D0E 0F10 1112 1314"
    let created = "created 2023-09-12 06:06 UTC"

    func service(_ card: SimulatedCard) throws -> PINService {
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice",
            time: ManualTime(), cards: readers([("Reader A", card)]))
        try enrol(service)
        return service
    }

    /// The decryption slot's fingerprint as the card reports it, or nil when the slot has none.
    func decryptionFingerprint(_ service: PINService) throws -> [UInt8]? {
        let card = try service.openCard(reader: "Reader A", kind: .openpgp)
        defer { card.close() }
        return (card as? OpenPGPToken)?.data.fingerprints[.decryption]
    }

    @Test func theKeyIsShownAndMustBeTypedAway() throws {
        let service = try service(try cardWithForeignDecryptionKey())
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN], confirmations: [true])
        _ = try service.enableToken(script, generateKey: true)
        let question = try #require(script.questions.first)
        #expect(question.contains(shown), "\(question)")
        #expect(question.contains(fingerprint), "\(question)")
        #expect(question.contains(created), "\(question)")
        #expect(script.prompts.map(\.name) == ["pin", "card-pin", "admin-pin"])
        #expect(try service.store.load(user: "alice")?.slot(.token) != nil)
    }

    @Test func notTypingItReplacesNothing() throws {
        let service = try service(try cardWithForeignDecryptionKey())
        let before = try decryptionFingerprint(service)
        #expect(before != nil)
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN], confirmations: [false])
        #expect(throws: ServiceError.cancelled) { _ = try service.enableToken(script, generateKey: true) }
        // PIN, card PIN, admin PIN (checked), then the question: refused, so nothing is written.
        #expect(script.prompts.map(\.name) == ["pin", "card-pin", "admin-pin"])
        #expect(try decryptionFingerprint(service) == before)
        #expect(try service.store.load(user: "alice")?.slot(.token) == nil)
    }

    @Test func withoutAWayToAskItIsUsageNamingYes() throws {
        let service = try service(try cardWithForeignDecryptionKey())
        let error = #expect(throws: ServiceError.self) {
            _ = try service.enableToken(ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true)
        }
        guard case .usage(let message)? = error else {
            Issue.record("expected a usage error, got \(String(describing: error))")
            return
        }
        #expect(message.contains("--yes") && message.contains(fingerprint), "\(message)")
        #expect(ExitCode(error!) == .usage)
    }

    @Test func yesGoesAheadWithoutAsking() throws {
        let service = try service(try cardWithForeignDecryptionKey())
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN])
        _ = try service.enableToken(script, generateKey: true, assumeYes: true)
        #expect(script.questions.isEmpty)
        #expect(try service.store.load(user: "alice")?.slot(.token) != nil)
    }

    @Test func anEmptySlotAsksNothing() throws {
        let service = try service(try newCard())
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN])
        _ = try service.enableToken(script, generateKey: true)
        #expect(script.questions.isEmpty)
        #expect(try service.store.load(user: "alice")?.slot(.token) != nil)
    }
}

/// A card as an OpenPGP 2.x card answers: the same, but without key information (`DE`) in its application
/// related data, so only a fingerprint, a date or the public key itself tells that a key is there.
final class WithoutKeyInformation: CardConnection {
    let inner: SimulatedCardConnection
    init(_ inner: SimulatedCardConnection) { self.inner = inner }
    var atr: [UInt8] { inner.atr }
    var lengthCapabilities: LengthCapabilities {
        get { inner.lengthCapabilities }
        set { inner.lengthCapabilities = newValue }
    }

    func transmit(_ command: [UInt8]) throws(CardTransportError) -> [UInt8] {
        let answer = try inner.transmit(command)
        // GET DATA 6E answered in one piece: drop DE from the discretionary data objects (73).
        guard command.count >= 4, command[1] == 0xCA, command[2] == 0x00, command[3] == 0x6E,
            answer.suffix(2) == [0x90, 0x00]
        else { return answer }
        do {
            let outer = try TLV.parseOne(Array(answer.dropLast(2)))
            let children = try outer.children().map { child throws(APDUError) -> TLV in
                guard child.tag == 0x73 else { return child }
                return TLV(tag: 0x73, children: try child.children().filter { $0.tag != 0xDE })
            }
            return TLV(tag: 0x6E, children: children).encoded + [0x90, 0x00]
        } catch {
            throw CardTransportError(malformed: error)
        }
    }
}

@Suite struct KeyWithoutKeyInformationTests {
    @Test func aKeyWithoutFingerprintIsStillShownAndAskedFor() throws {
        let setup = try tokenSetup()  // generates a cv25519 key on the card: no fingerprint, no date
        let card = setup.card
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: InProcessReaders([
                InProcessReaders.Reader(
                    name: "Old reader", isPresent: { card.isPresent },
                    connect: { WithoutKeyInformation(SimulatedCardConnection(card: card, sleep: { _ in })) },
                    reset: { card.reset() })
            ]))
        try enrol(service)
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN])
        let error = #expect(throws: ServiceError.self) { _ = try service.enableToken(script, generateKey: true) }
        guard case .usage(let message)? = error else {
            Issue.record("the key was replaced without asking: \(String(describing: error))")
            return
        }
        #expect(message.contains("no fingerprint") && message.contains("--yes"), "\(message)")
        #expect(
            try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token),
            "the first binding still works: its key was not replaced")
    }
}
