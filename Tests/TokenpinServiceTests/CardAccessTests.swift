import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinPIV
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// A `CardAccess` that lets a user bind, but whose claims another user's operation already holds.
struct ClaimedCardAccess: CardAccess {
    let store: RecordStore
    func identities(boundToOthersThan user: String) -> Set<String> { store.boundIdentities(except: user) }
    func bindRefusal(for user: String) -> String? { nil }
    func claim(_ identity: String, for user: String) -> Bool { false }
}

/// Issue 18: through the daemon a user touches only their own bound card or, to bind, a card no other record binds
/// (and only as `card-bind` allows); nothing destructive happens on a card before its PIN verified.
@Suite struct CardAccessTests {
    /// Whether `error` is a refusal (77) whose message names none of `serials`.
    static func refusedWithoutNaming(_ error: any Error, _ serials: [String]) -> Bool {
        guard let error = error as? ServiceError, case .permissionDenied(let why) = error else { return false }
        return ExitCode(error) == .permissionDenied && !serials.contains { why.contains($0) }
    }

    @Test func anotherUsersCardCannotBeBoundAndIsNeverNamed() throws {
        let alice = try tokenSetup()
        let bob = daemonScoped(
            PINService(
                store: alice.service.store, configuration: alice.service.configuration, user: "bob",
                time: ManualTime(), cards: alice.service.cards))
        try enrol(bob)
        let before = (cardPINTries(alice.card), adminPINTries(alice.card))
        for generate in [false, true] {
            let script = ScriptedInteraction(["482916", "000000", adminPIN])
            #expect {
                _ = try bob.enableToken(script, generateKey: generate, assumeYes: true)
            } throws: { Self.refusedWithoutNaming($0, ["00001111", "0000:1111"]) }
            #expect(script.prompts.isEmpty, "refused before anything is asked")
        }
        var naming = bob
        naming.selection = CardSelection(serial: "00001111")
        #expect { _ = try naming.enableToken(ScriptedInteraction(["482916", "000000"])) } throws: {
            Self.refusedWithoutNaming($0, ["FFFE"])
        }
        #expect((cardPINTries(alice.card), adminPINTries(alice.card)) == before)
        #expect(try bob.listReaders().isEmpty, "readers never show bob alice's card")
        #expect(try bob.status().remaining == 5, "bob's own PIN was never asked")
        #expect(try alice.service.verify(ScriptedInteraction([cardPIN])).outcome == .verified(method: .token))
    }

    @Test func cardBindRefusesBeforeAnythingIsAsked() throws {
        let (bob, _, spare) = try bobBeforeOthersCards()
        let refused = daemonScoped(bob, refusal: "card-bind = active-session: not at the seat")
        let script = ScriptedInteraction(["482916", cardPIN])
        let before = spare.processedCount
        #expect {
            _ = try refused.enableToken(script)
        } throws: { error in
            guard case .permissionDenied(let why) = error as? ServiceError else { return false }
            return why.contains("not at the seat")
        }
        #expect(script.prompts.isEmpty && spare.processedCount == before, "not even a SELECT")
    }

    @Test func aFreeCardIsBoundWithoutEverListingTheOthers() throws {
        let (bob, alice, spare) = try bobBeforeOthersCards()
        let key = try bob.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true)
        #expect(key.outcome == .verified(method: .pin))
        #expect(try bob.store.load(user: "bob")?.slot(.token)?.token?.serial == "FFFE22222222")
        #expect(cardPINTries(alice.card) == 3)
        _ = spare
    }

    @Test func aCardAnotherUserIsBindingIsRefused() throws {
        let (bob, _, _) = try bobBeforeOthersCards()
        var claimed = bob
        claimed.cardAccess = ClaimedCardAccess(store: bob.store)
        let script = ScriptedInteraction(["482916", cardPIN])
        #expect { _ = try claimed.enableToken(script) } throws: { error in
            guard case .permissionDenied(let why) = error as? ServiceError else { return false }
            return why.contains("binding this card right now")
        }
        #expect(script.prompts.isEmpty)
    }

    @Test func generateKeyChecksTheCardPINBeforeItWrites() throws {
        let setup = try tokenSetup(bind: false)
        func hasKey() throws -> Bool {
            let card = try setup.service.openCard(reader: "Reader A", kind: .openpgp)
            defer { card.close() }
            return card.unusableReason == nil
        }
        #expect(try !hasKey())
        let wrong = ScriptedInteraction(["482916", "000000", adminPIN])
        #expect { _ = try setup.service.enableToken(wrong, generateKey: true, assumeYes: true) } throws: { error in
            guard case .cardRefused(let why) = error as? ServiceError else { return false }
            return why.contains("wrong card PIN")
        }
        #expect(wrong.prompts.map(\.name) == ["pin", "card-pin"], "no admin PIN asked after a wrong card PIN")
        #expect(try !hasKey(), "a wrong card PIN leaves the card's keys untouched")
        #expect(adminPINTries(setup.card) == 3 && cardPINTries(setup.card) == 2)
        let right = ScriptedInteraction(["482916", cardPIN, adminPIN])
        _ = try setup.service.enableToken(right, generateKey: true, assumeYes: true)
        #expect(right.prompts.map(\.name) == ["pin", "card-pin", "admin-pin"])
        #expect(try hasKey())
        #expect(cardPINTries(setup.card) == 3)
    }

    @Test func pivGenerateKeyChecksTheCardPINBeforeTheManagementKey() throws {
        let fixture = try PIVFixture(.yubikey)
        var service = makeService()
        service = PINService(
            store: service.store, configuration: service.configuration, user: "alice", time: ManualTime(),
            cards: readers([("Reader P", fixture.card)]))
        try enrol(service)
        service.selection = CardSelection(application: .piv)
        let factory = Hex.encode(PIVToken.defaultManagementKey)
        let wrong = ScriptedInteraction(["482916", "000000", factory])
        #expect(throws: ServiceError.self) { _ = try service.enableToken(wrong, generateKey: true, assumeYes: true) }
        #expect(wrong.prompts.map(\.name) == ["pin", "card-pin"])
        let token = try fixture.open()
        #expect(token.pinTriesLeft == 2)
        #expect(throws: TokenCardError.self) { _ = try token.bindableKey(slot: "82") }
        token.close()
    }
}
