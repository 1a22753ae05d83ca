import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

let cardPIN = "123456"
let adminPIN = "12345678"

/// Readers over simulated cards, as `--reader sim` wires one.
func readers(_ cards: [(String, SimulatedCard)]) -> InProcessReaders {
    InProcessReaders(
        cards.map { name, card in
            InProcessReaders.Reader(
                name: name, isPresent: { card.isPresent },
                connect: { SimulatedCardConnection(card: card, sleep: { _ in }) }, reset: { card.reset() })
        })
}

func newCard(_ serial: UInt32 = 0x0000_1111) throws -> SimulatedCard {
    try SimulatedCard(stateFile: nil, serial: serial)
}

struct TokenSetup {
    var service: PINService
    var card: SimulatedCard
}

/// A service with an enrolled PIN and, unless `bind` is false, the card bound (generating its cv25519 key).
func tokenSetup(
    mode: VerificationMode = .either, fallback: FallbackPolicy = .allow, bind: Bool = true,
    extraCards: [(String, SimulatedCard)] = []
) throws -> TokenSetup {
    let card = try newCard()
    var service = makeService()
    var configuration = service.configuration
    configuration.mode = mode
    configuration.fallback = fallback
    service = PINService(
        store: service.store, configuration: configuration, user: "alice", time: ManualTime(),
        cards: readers([("Reader A", card)] + extraCards))
    try enrol(service)
    if bind {
        var binder = service
        binder.selection = CardSelection(serial: "00001111")
        let report = try binder.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true,
            assumeYes: true)
        #expect(report.outcome == .verified(method: .pin))
    }
    return TokenSetup(service: service, card: card)
}

/// One of the card's PIN counters from its PW status (GET DATA C4 through a fresh session): byte 5 is PW1's
/// (the card PIN), byte 7 PW3's (the admin PIN); -1 when the card did not answer.
func pinStatusByte(_ card: SimulatedCard, index: Int) -> Int {
    let connection = SimulatedCardConnection(card: card)
    _ = try? connection.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]))
    let answer = try? connection.send(CommandAPDU(ins: 0xCA, p1: 0x00, p2: 0xC4, le: 256))
    card.reset()
    guard let data = answer?.data, data.count >= 7 else { return -1 }
    return Int(data[index])
}

/// The card PIN's tries left.
func cardPINTries(_ card: SimulatedCard) -> Int { pinStatusByte(card, index: 4) }

@Suite struct BindTests {
    @Test func bindingAsksPINThenAdminThenCardPIN() throws {
        let setup = try tokenSetup(bind: false)
        let script = ScriptedInteraction(["482916", cardPIN, adminPIN])
        _ = try setup.service.enableToken(script, generateKey: true, assumeYes: true)
        #expect(script.prompts.map(\.name) == ["pin", "card-pin", "admin-pin"])
        #expect(script.events.contains(.typeChanged(type: .token, enabled: true)))
        let record = try #require(try setup.service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.pin, .recovery, .token])
        let binding = try #require(record.slot(.token)?.token)
        #expect(binding.serial.hasSuffix("00001111"))
        #expect(binding.cardPublicKey.count == 32 && binding.ephemeralPublicKey.count == 32)
        let types = try setup.service.types()
        #expect(types[1].enabled && types[1].serial == binding.serial)
    }

    @Test func aCardWithoutACurve25519KeyIsRefusedBeforeAnyPIN() throws {
        let setup = try tokenSetup(bind: false)
        let script = ScriptedInteraction(["482916"])
        #expect { _ = try setup.service.enableToken(script) } throws: { error in
            guard case .tokenUnavailable(let why) = error as? ServiceError else { return false }
            return why.contains("holds no key") && why.contains("--generate-key")
        }
        #expect(script.prompts.isEmpty, "nothing asked, nothing counted")
    }

    @Test func aWrongPINBindsNothingAndIsCounted() throws {
        let setup = try tokenSetup(bind: false)
        let script = ScriptedInteraction(["000001", adminPIN, cardPIN])
        #expect(
            try setup.service.enableToken(script, generateKey: true, assumeYes: true).outcome
                == .rejected(remaining: 4, lastTry: false))
        #expect(script.prompts.map(\.name) == ["pin"])
        #expect(!(try setup.service.types()[1].enabled))
    }

    @Test func aWrongAdminPINIsAClearRefusal() throws {
        let setup = try tokenSetup(bind: false)
        #expect {
            _ = try setup.service.enableToken(
                ScriptedInteraction(["482916", cardPIN, "87654321"]),
                generateKey: true, assumeYes: true)
        } throws: { error in
            guard case .cardRefused(let why) = error as? ServiceError else { return false }
            return why.contains("2 tries left")
        }
    }

    @Test func enablingTwiceIsRefused() throws {
        let setup = try tokenSetup()
        #expect { _ = try setup.service.enableToken(ScriptedInteraction(["482916"])) } throws: { error in
            if case .tokenAlreadyEnabled = error as? ServiceError { return true }
            return false
        }
    }

    @Test func severalCardsNeedAChoiceWhenScripted() throws {
        let second = try newCard(0x2222_2222)
        let setup = try tokenSetup(bind: false, extraCards: [("Reader B", second)])
        #expect { _ = try setup.service.enableToken(ScriptedInteraction(["482916"])) } throws: { error in
            guard case .usage(let why) = error as? ServiceError else { return false }
            return why.contains("--reader or --serial")
        }
        var chosen = setup.service
        chosen.selection = CardSelection(serial: "22222222")
        _ = try chosen.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
        #expect(try chosen.types()[1].serial?.hasSuffix("22222222") == true)
    }
}

@Suite struct TokenVerifyTests {
    @Test func theTokenComesFirstWithFourAPDUs() throws {
        let setup = try tokenSetup()
        let before = setup.card.processedCount
        let script = ScriptedInteraction([cardPIN])
        let report = try setup.service.verify(script)
        #expect(report.outcome == .verified(method: .token))
        #expect(
            script.prompts == [.cardPIN(card: "FFFE:00001111 (unmanaged serial range)", triesLeft: 3)]
                || script.prompts.map(\.name) == ["card-pin"])
        let apdus = setup.card.processedCount - before
        #expect(apdus <= 5, "SELECT, GET DATA, VERIFY, PSO:DECIPHER: \(apdus)")
    }

    @Test func theVerifiedStateIsNotLeftOnTheCard() throws {
        let setup = try tokenSetup()
        _ = try setup.service.verify(ScriptedInteraction([cardPIN]))
        // Another process's session: the card was reset, PSO:DECIPHER needs VERIFY again.
        let connection = SimulatedCardConnection(card: setup.card)
        _ = try connection.send(CommandAPDU(ins: 0xA4, p1: 0x04, p2: 0x00, data: [0xD2, 0x76, 0x00, 0x01, 0x24, 0x01]))
        let point = TLV(
            tag: 0xA6, children: [TLV(tag: 0x7F49, children: [TLV(tag: 0x86, value: [UInt8](repeating: 9, count: 32))])]
        )
        let answer = try connection.send(CommandAPDU(ins: 0x2A, p1: 0x80, p2: 0x86, data: point.encoded, le: 256))
        #expect(answer.statusWord == .securityStatusNotSatisfied)
    }

    @Test func aWrongCardPINFallsBackWithoutSpendingAPINTry() throws {
        let setup = try tokenSetup()
        let script = ScriptedInteraction(["654321", "000001"])
        let report = try setup.service.verify(script)
        #expect(script.prompts.map(\.name) == ["card-pin", "pin"])
        #expect(report.outcome == .rejected(remaining: 4, lastTry: false), "only the PIN attempt counted")
        #expect(report.tokenFailure?.contains("wrong card PIN") == true)
        #expect(
            script.events.contains { if case .tokenFailed(_, true, 2) = $0 { true } else { false } },
            "the event carries the tries the card reported: \(script.events)")
        #expect(cardPINTries(setup.card) == 2, "the card counted its own")
    }

    @Test func denyMeansNoPINAfterATokenFailure() throws {
        let setup = try tokenSetup(fallback: .deny)
        let script = ScriptedInteraction(["654321", "482916"])
        let report = try setup.service.verify(script)
        #expect(script.prompts.map(\.name) == ["card-pin"])
        if case .tokenRejected = report.outcome {
        } else {
            Issue.record("expected tokenRejected, got \(report.outcome)")
        }
        setup.card.remove()
        #expect { _ = try setup.service.verify(ScriptedInteraction(["482916"])) } throws: { error in
            if case .tokenUnavailable = error as? ServiceError { return true }
            return false
        }
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func aPulledCardFallsBackToThePIN() throws {
        let setup = try tokenSetup()
        setup.card.remove()
        let script = ScriptedInteraction(["482916"])
        let report = try setup.service.verify(script)
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("not in any reader") == true)
        #expect(script.prompts == [.pin])
    }

    @Test(arguments: [
        CardFaults.Rule(instruction: 0x2A, fault: .vanish(afterProcessing: false)),
        CardFaults.Rule(instruction: 0x20, fault: .vanish(afterProcessing: true)),
        CardFaults.Rule(instruction: 0x2A, fault: .malformed(.truncated)),
        CardFaults.Rule(instruction: 0x2A, fault: .malformed(.oneByte)),
        CardFaults.Rule(instruction: 0xCA, fault: .malformed(.badTLV)),
        CardFaults.Rule(instruction: 0xCA, fault: .malformed(.empty)),
        CardFaults.Rule(instruction: 0x2A, fault: .status(StatusWord(rawValue: 0x6F00))),
        CardFaults.Rule(instruction: 0xA4, fault: .status(.fileNotFound)),
    ])
    func cardFaultsGiveClearErrorsAndLeaveThePINCounterAlone(rule: CardFaults.Rule) throws {
        let setup = try tokenSetup(fallback: .deny)
        setup.card.faults = CardFaults(rules: [rule])
        do {
            let report = try setup.service.verify(ScriptedInteraction([cardPIN]))
            if case .tokenRejected(let reason) = report.outcome {
                #expect(!reason.isEmpty)
            } else {
                Issue.record("a faulty card verified: \(report.outcome)")
            }
        } catch {
            #expect(ExitCode(error) == .tokenUnavailable, "\(error)")
            #expect(!error.message.isEmpty)
        }
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
        setup.card.insert()
        setup.card.faults = .none
        #expect(
            try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token), "recovers")
    }

    @Test func anotherCardNeverSeesThePIN() throws {
        let other = try newCard(0x3333_3333)
        let setup = try tokenSetup(extraCards: [("Reader B", other)])
        setup.card.remove()
        let before = cardPINTries(other)
        let report = try setup.service.verify(ScriptedInteraction(["482916"]))
        #expect(report.outcome == .verified(method: .pin))
        #expect(report.tokenFailure?.contains("other cards are") == true)
        #expect(cardPINTries(other) == before)
    }

    @Test func aBlockedCardIsNotAskedAndFallsBack() throws {
        let setup = try tokenSetup()
        for _ in 0..<3 { _ = try setup.service.verify(ScriptedInteraction(["000000", "482916"])) }
        #expect(cardPINTries(setup.card) == 0)
        let script = ScriptedInteraction(["482916"])
        let report = try setup.service.verify(script)
        #expect(script.prompts == [.pin])
        #expect(report.tokenFailure?.contains("blocked") == true)
    }

    @Test func methodForcesOneType() throws {
        let setup = try tokenSetup()
        let pinOnly = ScriptedInteraction(["482916"])
        #expect(try setup.service.verify(pinOnly, method: .pin).outcome == .verified(method: .pin))
        #expect(pinOnly.prompts == [.pin])
        let tokenOnly = ScriptedInteraction(["654321", "482916"])
        if case .tokenRejected = try setup.service.verify(tokenOnly, method: .token).outcome {
        } else {
            Issue.record("a forced token does not fall back")
        }
        #expect(tokenOnly.prompts.map(\.name) == ["card-pin"])
        let plain = try tokenSetup(bind: false)
        #expect(throws: ServiceError.tokenNotEnabled) {
            _ = try plain.service.verify(ScriptedInteraction([cardPIN]), method: .token)
        }
    }

    @Test func changingThePINKeepsTheTokenAndSwitchingOffRemovesIt() throws {
        let setup = try tokenSetup()
        let change = ScriptedInteraction(["482916", "739154", "739154"])
        #expect(try setup.service.change(change).outcome == .verified(method: .pin))
        #expect(change.prompts == [.currentPIN, .newPIN, .confirmPIN], "the token is never used for a change")
        #expect(try setup.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
        #expect(try setup.service.disableToken(ScriptedInteraction(["739154"])).outcome == .verified(method: .pin))
        #expect(!(try setup.service.types()[1].enabled))
        let after = ScriptedInteraction(["739154"])
        #expect(try setup.service.verify(after).outcome == .verified(method: .pin))
        #expect(after.prompts == [.pin])
        #expect(throws: ServiceError.tokenNotEnabled) { _ = try setup.service.disableToken(ScriptedInteraction([])) }
    }

    @Test func statusShowsReadersAndTheEnrolledCard() throws {
        let setup = try tokenSetup()
        let status = try setup.service.status()
        let token = try #require(status.token)
        #expect(token.readers.count == 1)
        #expect(token.matchingReader == "Reader A")
        #expect(token.cardPINTriesLeft == 3)
        #expect(token.readers[0].usable && token.readers[0].isOpenPGP)
        setup.card.remove()
        #expect(try setup.service.status().token?.matchingReader == nil)
        #expect(try setup.service.listReaders() == [ReaderInfo(name: "Reader A", cardPresent: false)])
    }
}

@Suite struct BothModeTests {
    @Test func bothFactorsAreNeededAndOnlyThePINAttemptIsCounted() throws {
        let setup = try tokenSetup(mode: .both)
        let record = try #require(try setup.service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.recovery, .composite], "no slot opens with one factor")
        let script = ScriptedInteraction(["482916", cardPIN])
        #expect(try setup.service.verify(script).outcome == .verified(method: .both))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])

        #expect(
            try setup.service.verify(ScriptedInteraction(["000001", cardPIN])).outcome
                == .rejected(remaining: 4, lastTry: false))
        let wrongCard = try setup.service.verify(ScriptedInteraction(["482916", "654321"]))
        if case .tokenRejected = wrongCard.outcome {} else { Issue.record("expected the card to refuse") }
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 4, "a card failure costs no PIN try")

        #expect { _ = try setup.service.verifyPIN(ScriptedInteraction(["482916"])) } throws: { error in
            if case .tokenUnavailable = error as? ServiceError { return true }
            return false
        }
        setup.card.remove()
        #expect { _ = try setup.service.verify(ScriptedInteraction(["482916", cardPIN])) } throws: { error in
            if case .tokenUnavailable = error as? ServiceError { return true }
            return false
        }
    }

    @Test func changeNeedsTheCardAndOffRestoresThePINSlot() throws {
        let setup = try tokenSetup(mode: .both)
        let change = ScriptedInteraction(["482916", cardPIN, "739154", "739154"])
        #expect(try setup.service.change(change).outcome == .verified(method: .both))
        #expect(change.prompts.map(\.name) == ["current-pin", "card-pin", "new-pin", "confirm-pin"])
        #expect(try setup.service.verify(ScriptedInteraction(["739154", cardPIN])).outcome == .verified(method: .both))
        #expect(
            try setup.service.disableToken(ScriptedInteraction(["739154", cardPIN])).outcome == .verified(method: .both)
        )
        let record = try #require(try setup.service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.pin, .recovery])
        #expect(try setup.service.verify(ScriptedInteraction(["739154"])).outcome == .verified(method: .pin))
    }

    @Test func resetWithTheRecoveryKeyDropsTheCompositeSlot() throws {
        let card = try newCard()
        var service = makeService()
        var configuration = service.configuration
        configuration.mode = .both
        service = PINService(
            store: service.store, configuration: configuration, user: "alice", cards: readers([("R", card)]))
        let recovery = try enrol(service)
        _ = try service.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
        #expect(
            try service.reset(ScriptedInteraction([recovery, "915372", "915372"])).outcome
                == .verified(method: .recovery))
        #expect(try service.verify(ScriptedInteraction(["915372"])).outcome == .verified(method: .pin))
    }
}

@Suite struct CardPINTests {
    @Test func changeThenUnblockWithTheAdminPIN() throws {
        let setup = try tokenSetup()
        let change = ScriptedInteraction([cardPIN, "246813", "246813"])
        try setup.service.changeCardPIN(change)
        #expect(change.prompts.map(\.name) == ["card-pin", "new-card-pin", "confirm-card-pin"])
        #expect(try setup.service.verify(ScriptedInteraction(["246813"])).outcome == .verified(method: .token))
        for _ in 0..<3 { _ = try setup.service.verify(ScriptedInteraction(["000000", "482916"])) }
        #expect(cardPINTries(setup.card) == 0)
        #expect { try setup.service.unblockCardPIN(ScriptedInteraction(["x"]), admin: false) } throws: { error in
            guard case .cardRefused(let why) = error as? ServiceError else { return false }
            return why.contains("--admin")
        }
        let unblock = ScriptedInteraction([adminPIN, "135792", "135792"])
        try setup.service.unblockCardPIN(unblock, admin: true)
        #expect(unblock.prompts.map(\.name) == ["admin-pin", "new-card-pin", "confirm-card-pin"])
        #expect(try setup.service.verify(ScriptedInteraction(["135792"])).outcome == .verified(method: .token))
    }

    @Test func newCardPINsAreChecked() throws {
        let setup = try tokenSetup()
        #expect(throws: ServiceError.policyViolation(.mismatch)) {
            try setup.service.changeCardPIN(ScriptedInteraction([cardPIN, "246813", "246814"]))
        }
        #expect(throws: ServiceError.policyViolation(.minLength)) {
            try setup.service.changeCardPIN(ScriptedInteraction([cardPIN, "2468", "2468"]))
        }
        #expect { try setup.service.changeCardPIN(ScriptedInteraction(["999999", "246813", "246813"])) } throws: {
            error in
            guard case .cardRefused(let why) = error as? ServiceError else { return false }
            return why.contains("wrong card PIN")
        }
    }
}
