import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// Issue 18, attack 5: a card is recognised by the identity it claims, so a card claiming the victim's gets their
/// card PIN. A PIV binding records the card-authentication key (`9E`) and a verification has the card sign a
/// fresh challenge with it, no PIN, before any card PIN is sent.
@Suite struct CardAuthenticationTests {
    /// Alice's PIV card (in Reader A) and a look-alike with the same identity and keys of its own (Reader B, out),
    /// each with a key in 9D and a card-authentication key of `algorithm` in 9E; the service bound to the first.
    static func bound(_ algorithm: PIVAlgorithm) throws -> (PINService, real: PIVFixture, fake: PIVFixture) {
        let real = try PIVFixture(.yubikey)
        let fake = try PIVFixture(.yubikey)  // the same serial, so the same identity: piv-serial:12648430
        for fixture in [real, fake] {
            try fixture.generate(.keyManagement, .eccP256)
            try fixture.generate(.cardAuthentication, algorithm)
        }
        fake.card.remove()
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader A", real.card), ("Reader B", fake.card)]))
        try enrol(service)
        service.selection = CardSelection(application: .piv)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        return (service, real, fake)
    }

    @Test(arguments: [PIVAlgorithm.eccP256, .eccP384, .rsa2048])
    func aLookAlikeCardGetsNoPIN(algorithm: PIVAlgorithm) throws {
        let (service, real, fake) = try Self.bound(algorithm)
        let binding = try #require(try service.store.load(user: "alice")?.slot(.token)?.token)
        let recorded = try #require(binding.cardAuthentication, "the binding recorded the 9E key")
        #expect(
            recorded.algorithm == (algorithm == .rsa2048 ? "rsa2048" : algorithm == .eccP384 ? "nistp384" : "nistp256"))
        #expect(
            try service.verify(ScriptedInteraction(["123456"]), method: .token).outcome == .verified(method: .token))

        real.card.remove()
        fake.card.insert()
        let script = ScriptedInteraction(["482916"])
        let report = try service.verify(script)
        #expect(report.outcome == .verified(method: .pin), "the PIN, after the token failed")
        #expect(script.prompts == [.pin], "no card PIN was asked for the look-alike")
        #expect(report.tokenFailure?.contains("does not prove it") == true, "\(report.tokenFailure ?? "")")
        let fakeToken = try fake.open()
        #expect(fakeToken.pinTriesLeft == 3, "the look-alike saw no VERIFY")
        fakeToken.close()
        #expect(service.cards?.reader(holding: binding) == nil, "it cancels no card-removal lock")
        #expect(service.cards?.reader(holding: binding.serial) == "Reader B", "though it claims the identity")

        fake.card.remove()
        real.card.insert()
        #expect(service.cards?.reader(holding: binding) == "Reader A")
        #expect(
            try service.verify(ScriptedInteraction(["123456"]), method: .token).outcome == .verified(method: .token))
    }

    @Test func aCardWithoutACardAuthenticationKeyIsBoundAsBefore() throws {
        let fixture = try PIVFixture(.pivCard)
        try fixture.generate(.keyManagement, .eccP256)
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader P", fixture.card)]))
        try enrol(service)
        service.selection = CardSelection(application: .piv)
        _ = try service.enableToken(ScriptedInteraction(["482916", "123456"]))
        #expect(try service.store.load(user: "alice")?.slot(.token)?.token?.cardAuthentication == nil)
        #expect(try service.verify(ScriptedInteraction(["123456"])).outcome == .verified(method: .token))
    }

    @Test func theRecordedKeyIsSealedIntoTheSlot() throws {
        let (service, _, _) = try Self.bound(.eccP256)
        var record = try #require(try service.store.load(user: "alice"))
        var slot = try #require(record.slot(.token))
        var binding = try #require(slot.token)
        #expect(binding.cardAuthentication != nil)
        binding.cardAuthentication = nil
        slot.token = binding
        record.setSlot(.token, slot)
        try service.store.save(record)
        // A record edited to drop (or swap) the card-authentication key no longer opens: the key is in the header.
        let report = try service.verify(ScriptedInteraction(["123456", "482916"]))
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("does not open the token slot") == true, "\(report.tokenFailure ?? "")")
    }

    @Test func bindingsOutOfRangeAreRefused() {
        var key = CardAuthenticationKey(algorithm: "nistp256", publicKey: Data(repeating: 4, count: 64))
        #expect(key.problem?.contains("65") == true)
        key = CardAuthenticationKey(algorithm: "ed25519", publicKey: Data())
        #expect(key.problem?.contains("ed25519") == true)
        key = CardAuthenticationKey(algorithm: "rsa2048", publicKey: Data(repeating: 0xC1, count: 256))
        #expect(key.problem?.contains("exponent") == true)
    }
}
