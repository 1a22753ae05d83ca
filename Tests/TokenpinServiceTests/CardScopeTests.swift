import Foundation
import Testing
import TokenpinAPDU
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The admin PIN's tries left.
func adminPINTries(_ card: SimulatedCard) -> Int { pinStatusByte(card, index: 6) }

/// What tokenpind tells the service about cards for a user who is not root: the bindings of the other records in
/// the same store, `card-bind`'s answer (`refusal`, nil: may bind), and claims that always succeed.
struct StoreCardAccess: CardAccess {
    let store: RecordStore
    var refusal: String?

    func identities(boundToOthersThan user: String) -> Set<String> { store.boundIdentities(except: user) }
    func bindRefusal(for user: String) -> String? { refusal }
    func claim(_ identity: String, for user: String) -> Bool { true }
}

/// What a non-root peer of the daemon gets: the same service, limited to the card bound to its record, or to bind,
/// a card no other record binds (`card-bind` refusing with `refusal` when set).
func daemonScoped(_ service: PINService, refusal: String? = nil) -> PINService {
    var scoped = service
    scoped.cardScope = .boundCardOnly
    scoped.cardAccess = StoreCardAccess(store: service.store, refusal: refusal)
    return scoped
}

/// Bob: enrolled, no card bound, in front of alice's card (Reader A) and a spare card (Reader B).
func bobBeforeOthersCards() throws -> (bob: PINService, alice: TokenSetup, spare: SimulatedCard) {
    let spare = try newCard(0x2222_2222)
    let alice = try tokenSetup(extraCards: [("Reader B", spare)])
    let bob = PINService(
        store: alice.service.store, configuration: alice.service.configuration, user: "bob",
        time: ManualTime(), cards: alice.service.cards)
    try enrol(bob)
    return (daemonScoped(bob), alice, spare)
}

@Suite struct CardScopeTests {
    @Test func localModeReachesEveryCard() throws {
        let (bob, alice, _) = try bobBeforeOthersCards()
        var local = bob
        local.cardScope = .any
        #expect(
            PINService(store: alice.service.store, configuration: alice.service.configuration, user: "x").cardScope
                == .any)
        #expect(try local.listReaders().map(\.name) == ["Reader A", "Reader B"])
    }

    @Test func readersAndStatusShowOnlyTheBoundCard() throws {
        let (bob, alice, spare) = try bobBeforeOthersCards()
        // No binding: only the card no other record binds, and none at all when card-bind refuses.
        #expect(try bob.listReaders().map(\.name) == ["Reader B"], "alice's card is never shown to bob")
        let refused = daemonScoped(bob, refusal: "card-bind = root")
        #expect(try refused.listReaders().isEmpty, "no binding, may not bind: no card")
        #expect(try refused.status().token?.readers.isEmpty == true)

        let scopedAlice = daemonScoped(alice.service)
        let readers = try scopedAlice.listReaders()
        #expect(readers.map(\.name) == ["Reader A"])
        #expect(readers.first?.serial == "FFFE00001111")
        let status = try #require(try scopedAlice.status().token)
        #expect(status.readers.map(\.name) == ["Reader A"] && status.matchingReader == "Reader A")
        alice.card.remove()
        #expect(try scopedAlice.listReaders().isEmpty, "the bound card is not present")
        _ = spare
    }

    @Test(arguments: [false, true])
    func withoutABindingNoCardPINIsManagedThroughTheDaemon(unblock: Bool) throws {
        let (bob, alice, spare) = try bobBeforeOthersCards()
        var targeted = bob
        targeted.selection = CardSelection(serial: "00001111")  // names alice's card
        let script = ScriptedInteraction(["000000", "246813", "246813"])
        #expect {
            if unblock { try targeted.unblockCardPIN(script, admin: true) } else { try targeted.changeCardPIN(script) }
        } throws: { error in
            guard let error = error as? ServiceError, case .permissionDenied(let why) = error else { return false }
            return ExitCode(error) == .permissionDenied && why.contains("tokenpin --local token")
        }
        #expect(script.prompts.isEmpty, "nothing asked")
        #expect(cardPINTries(alice.card) == 3 && adminPINTries(alice.card) == 3)
        #expect(cardPINTries(spare) == 3 && adminPINTries(spare) == 3)
    }

    @Test func aUserWithNoRecordManagesNoCard() throws {
        let (bob, alice, _) = try bobBeforeOthersCards()
        let stranger = daemonScoped(
            PINService(
                store: bob.store, configuration: bob.configuration, user: "carol",
                time: ManualTime(), cards: bob.cards))
        let before = alice.card.processedCount
        #expect { try stranger.changeCardPIN(ScriptedInteraction(["000000", "246813", "246813"])) } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return ExitCode(error) == .permissionDenied
        }
        #expect(alice.card.processedCount == before, "not even a SELECT")
        #expect(try stranger.listReaders().isEmpty)
    }

    @Test func withABindingOnlyTheBoundCardIsManaged() throws {
        let spare = try newCard(0x2222_2222)
        let alice = try tokenSetup(extraCards: [("Reader B", spare)])
        var scoped = daemonScoped(alice.service)
        // The bound card, checked by serial on the card before any prompt.
        let change = ScriptedInteraction([cardPIN, "246813", "246813"])
        try scoped.changeCardPIN(change)
        #expect(change.prompts.map(\.name) == ["card-pin", "new-card-pin", "confirm-card-pin"])
        #expect(try scoped.verify(ScriptedInteraction(["246813"])).outcome == .verified(method: .token))
        // Naming another card is refused; so is managing any card while the bound one is away.
        scoped.selection = CardSelection(serial: "22222222")
        #expect { try scoped.changeCardPIN(ScriptedInteraction(["000000", "246813", "246813"])) } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return ExitCode(error) == .permissionDenied
        }
        scoped.selection = CardSelection()
        alice.card.remove()
        let script = ScriptedInteraction(["000000", "246813", "246813"])
        #expect { try scoped.unblockCardPIN(script, admin: true) } throws: { error in
            guard let error = error as? ServiceError else { return false }
            return ExitCode(error) == .tokenUnavailable
        }
        #expect(script.prompts.isEmpty)
        #expect(cardPINTries(spare) == 3 && adminPINTries(spare) == 3)
    }

    @Test func bindingThroughTheDaemonReachesTheCardOnlyAfterThePINVerified() throws {
        let setup = try tokenSetup(bind: false)
        let scoped = daemonScoped(setup.service)
        let script = ScriptedInteraction(["000001", adminPIN, cardPIN])
        #expect(
            try scoped.enableToken(script, generateKey: true, assumeYes: true).outcome
                == .rejected(remaining: 4, lastTry: false))
        #expect(script.prompts == [.pin], "a wrong PIN: no admin PIN, no card PIN")
        #expect(adminPINTries(setup.card) == 3 && cardPINTries(setup.card) == 3)
        #expect(try scoped.listReaders().map(\.name) == ["Reader A"], "nothing bound: the free card still shows")

        let stranger = daemonScoped(
            PINService(
                store: setup.service.store, configuration: setup.service.configuration,
                user: "carol", time: ManualTime(), cards: setup.service.cards))
        let before = setup.card.processedCount
        #expect {
            _ = try stranger.enableToken(
                ScriptedInteraction([adminPIN, adminPIN, cardPIN]), generateKey: true,
                assumeYes: true)
        } throws: { error in
            guard let error = error as? ServiceError, case .notEnrolled = error else { return false }
            return true
        }
        #expect(setup.card.processedCount == before, "no record: the card is not touched")

        let right = ScriptedInteraction(["482916", cardPIN, adminPIN])
        #expect(try scoped.enableToken(right, generateKey: true, assumeYes: true).outcome == .verified(method: .pin))
        #expect(right.prompts.map(\.name) == ["pin", "card-pin", "admin-pin"])
        #expect(try scoped.listReaders().map(\.name) == ["Reader A"])
    }
}
