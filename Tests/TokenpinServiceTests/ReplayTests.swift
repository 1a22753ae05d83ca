import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinOpenPGP
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The card keys the replay suite binds, through both applications.
enum ReplayCard: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case openpgpCv25519, openpgpRSA2048, openpgpP256, pivP256, pivRSA2048

    var testDescription: String { rawValue }
    var isPIV: Bool { self == .pivP256 || self == .pivRSA2048 }
}

/// An enrolled user ("482916") with `kind`'s key bound as it is on the card, through a tap on the line.
func replaySetup(_ kind: ReplayCard, mode: VerificationMode = .either) throws -> TappedSetup {
    let card: SimulatedCard
    switch kind {
    case .openpgpCv25519, .openpgpRSA2048, .openpgpP256:
        card = try newCard()
        let attributes: [UInt8] =
            switch kind {
            case .openpgpCv25519: [0x12] + Curve.curve25519.oid
            case .openpgpRSA2048: CardKeyAttributes.rsa(2048)
            default: CardKeyAttributes.nistP256
            }
        try generateDecryptionKey(card, attributes: attributes)
    case .pivP256, .pivRSA2048:
        let fixture = try PIVFixture(.yubikey)
        try fixture.generate(.keyManagement, kind == .pivP256 ? .eccP256 : .rsa2048)
        card = fixture.card
        card.reset()
    }
    let tap = CardTap()
    let reader = InProcessReaders.Reader(
        name: "Reader A", isPresent: { card.isPresent },
        connect: { TappedConnection(card: card, tap: tap) }, reset: { card.reset() })
    var configuration = makeService().configuration
    configuration.mode = mode
    // Every replay in mode = both comes with the right PIN and counts as one wrong attempt; a real verify
    // between the windows restores the counter.
    configuration.retriesMax = 10
    var service = PINService(
        store: makeService().store, configuration: configuration, user: "alice", time: ManualTime(),
        cards: InProcessReaders([reader]))
    if kind.isPIV { service.selection = CardSelection(application: .piv) }
    try enrol(service)
    let bind = try service.enableToken(ScriptedInteraction(["482916", cardPIN]))
    #expect(bind.outcome == .verified(method: .pin))
    #expect(tap.answers.count == 1, "the bind's card answer was captured")
    return TappedSetup(service: service, card: card, tap: tap)
}

extension TappedSetup {
    /// A verification with the real card (and the PIN in mode = both).
    func verifyWithTheCard(_ mode: VerificationMode) throws {
        let script = ScriptedInteraction(mode == .both ? ["482916", cardPIN] : [cardPIN])
        let outcome = try service.verify(script, method: .token).outcome
        #expect(outcome == .verified(method: mode == .both ? .both : .token))
    }

    /// Replays every answer the tap captured from a fake card with the real card's identity, which takes any
    /// card PIN (in mode = both the attacker also knows the PIN); returns how many were tried. None may verify.
    func replayEveryAnswer(_ mode: VerificationMode, window: String) throws -> Int {
        let answers = tap.answers
        for (index, answer) in answers.enumerated() {
            tap.replay(answer)
            defer { tap.replay(nil) }
            let script = ScriptedInteraction(mode == .both ? ["482916", "000000"] : ["000000"])
            let outcome = try service.verify(script, method: .token).outcome
            switch outcome {
            case .tokenRejected(let reason):
                #expect(reason.contains("does not open the token slot"), "\(window), answer \(index): \(reason)")
            case .rejected:
                #expect(mode == .both, "\(window), answer \(index): a PIN outcome without a PIN")
            default:
                Issue.record("\(window): captured answer \(index) of \(answers.count) gave \(outcome)")
            }
        }
        return answers.count
    }
}

@Suite struct ReplayTests {
    /// Every answer of the bind and of each verify, replayed right after the bind, after one verify and after
    /// three: the slot was never sealed under an answer that crossed the line, so none opens it.
    @Test(arguments: ReplayCard.allCases, [VerificationMode.either, .both])
    func noCapturedAnswerEverOpensTheSlot(card: ReplayCard, mode: VerificationMode) throws {
        let setup = try replaySetup(card, mode: mode)
        var tried = 0
        var verified = 0
        for window in [0, 1, 3] {
            while verified < window {
                try setup.verifyWithTheCard(mode)
                verified += 1
            }
            tried += try setup.replayEveryAnswer(mode, window: "after \(window) verifies")
        }
        #expect(tried == 1 + 2 + 4, "the windows saw the bind's answer and each verify's")
        try setup.verifyWithTheCard(mode)
        #expect(try setup.record().counter.remaining == 10, "the real card still verifies, and restored the counter")
    }

    /// `toggle token on --mode both` over a binding in `either`, then a PIN change in `both`: the composite slot
    /// is sealed under fresh challenges each time, so no answer captured before or during opens it.
    @Test(arguments: [ReplayCard.openpgpP256, .pivRSA2048])
    func aRebindAndAPINChangeInModeBothOpenNothingForACapturedAnswer(card: ReplayCard) throws {
        let setup = try replaySetup(card)
        #expect(
            try setup.service.enableToken(ScriptedInteraction(["482916", cardPIN]), mode: .both).outcome
                == .verified(method: .both))
        #expect(try setup.record().slot(.composite) != nil)
        _ = try setup.replayEveryAnswer(.both, window: "after the rebind")
        let change = ScriptedInteraction(["482916", cardPIN, "739154", "739154"])
        #expect(try setup.service.change(change).outcome == .verified(method: .both))
        for answer in setup.tap.answers {
            setup.tap.replay(answer)
            let outcome = try setup.service.verify(ScriptedInteraction(["739154", "000000"])).outcome
            #expect(outcome != .verified(method: .both), "a captured answer opened the composite slot")
        }
        setup.tap.replay(nil)
        #expect(
            try setup.service.verify(ScriptedInteraction(["739154", cardPIN])).outcome == .verified(method: .both))
    }

    /// A hostile reader keeps the card's answer and hands tokenpin an error, so the verification falls back to the
    /// PIN: the challenge the card answered is retired as soon as the PIN opens the vault, so the kept answer
    /// opens nothing afterwards.
    @Test(arguments: [ReplayCard.openpgpCv25519, .pivRSA2048])
    func anAnswerKeptFromTokenpinIsRetiredWhenThePINVerifiesInstead(card: ReplayCard) throws {
        let setup = try replaySetup(card)
        setup.tap.withhold(true)
        let fallback = try setup.service.verify(ScriptedInteraction([cardPIN, "482916"]))
        #expect(fallback.outcome == .verified(method: .pin))
        #expect(fallback.tokenFailure != nil)
        setup.tap.withhold(false)
        #expect(setup.tap.answers.count == 2, "the reader kept the card's answer")
        _ = try setup.replayEveryAnswer(.either, window: "after an answer was kept from tokenpin")
        try setup.verifyWithTheCard(.either)
    }

    /// `mode = both` from the configuration over a binding in `either`: the card opens the token slot, then the PIN
    /// is wrong. The card's answer crossed the line and opened the slot, so the slot is re-sealed all the same.
    @Test func aCardAnswerFollowedByAWrongPINIsRetiredInModeBothFromTheConfiguration() throws {
        let setup = try replaySetup(.openpgpP256)
        var configuration = setup.service.configuration
        configuration.mode = .both
        var strict = PINService(
            store: setup.service.store, configuration: configuration, user: "alice", time: ManualTime(),
            cards: setup.service.cards)
        strict.selection = setup.service.selection
        let wrong = try strict.verify(ScriptedInteraction(["000001", cardPIN]))
        #expect(wrong.outcome == .rejected(remaining: 9, lastTry: false))
        #expect(setup.tap.answers.count == 2)
        _ = try setup.replayEveryAnswer(.either, window: "after a wrong PIN in mode both")
        #expect(try strict.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
    }

    /// The offline attack: a copy of the record and an answer from the line. The token key of each captured
    /// answer (the card's secret as the session takes it out of the answer) opens none of the record's slots.
    @Test(arguments: [ReplayCard.openpgpCv25519, .openpgpP256, .pivP256])
    func noCapturedAnswerOpensACopyOfTheRecord(card: ReplayCard) throws {
        let setup = try replaySetup(card)
        for window in 0..<3 {
            if window > 0 { try setup.verifyWithTheCard(.either) }
            let record = try setup.record()
            let slot = try #require(record.slot(.token))
            let binding = try #require(slot.token)
            for answer in setup.tap.answers {
                let secret = try secretInAnswer(answer, card: card)
                let key = try TokenKeys.tokenKey(sharedSecret: secret, binding: binding, salt: [UInt8](slot.kdf.salt))
                let opened = slot.open(keyEncryptionKey: key, user: "alice") != nil
                #expect(!opened, "window \(window): a captured answer opened a copy of the record")
            }
        }
    }

    /// The secret an ECDH answer carries, as the sessions take it: the data (OpenPGP), the value of `7C { 82 }`
    /// (PIV).
    func secretInAnswer(_ answer: [UInt8], card: ReplayCard) throws -> SecretBytes {
        var data = Array(answer.dropLast(2))
        if card.isPIV {
            let template = try TLV.parseOne(data)
            data = try #require(try template.children().first { $0.tag == 0x82 }?.value)
        }
        return SecretBytes(consuming: &data)
    }
}
