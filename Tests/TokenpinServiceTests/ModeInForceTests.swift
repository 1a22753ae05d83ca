import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// `mode = both` in the configuration over a record bound in `either`: stricter settings win.
@Suite struct ModeInForceTests {
    /// A card bound in `either`, then the configuration changed to `mode = both`.
    func boundInEitherUnderBoth() throws -> TokenSetup {
        var setup = try tokenSetup(mode: .either)
        var configuration = setup.service.configuration
        configuration.mode = .both
        setup.service = PINService(
            store: setup.service.store, configuration: configuration, user: "alice",
            time: ManualTime(), cards: setup.service.cards)
        return setup
    }

    @Test func verificationNeedsTheCardAndThePINWithOneCountedAttempt() throws {
        let setup = try boundInEitherUnderBoth()
        let script = ScriptedInteraction(["482916", cardPIN])
        let report = try setup.service.verify(script)
        #expect(report.outcome == .verified(method: .both))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])
        #expect(report.counter?.remaining == 5)

        let wrongPIN = try setup.service.verify(ScriptedInteraction(["000001", cardPIN]))
        #expect(wrongPIN.outcome == .rejected(remaining: 4, lastTry: false), "the card alone does not verify")

        let wrongCard = try setup.service.verify(ScriptedInteraction(["482916", "654321"]))
        guard case .tokenRejected = wrongCard.outcome else {
            Issue.record("the PIN alone verified: \(wrongCard.outcome)")
            return
        }
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 4, "a card refusal counts no PIN try")
        #expect(
            try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both),
            "the token slot was re-sealed and still opens")
    }

    @Test func thePINAloneNeverVerifies() throws {
        let setup = try boundInEitherUnderBoth()
        #expect(throws: ServiceError.tokenUnavailable("mode = both (configuration): the PIN alone cannot verify")) {
            _ = try setup.service.verify(ScriptedInteraction(["482916"]), method: .pin)
        }
        setup.card.remove()
        let script = ScriptedInteraction(["482916"])
        let error = #expect(throws: ServiceError.self) { _ = try setup.service.verify(script) }
        #expect(error?.code == "token-unavailable", "no fallback to the PIN: \(String(describing: error))")
        #expect(script.prompts.isEmpty, "nothing asked without the card")
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
    }

    @Test func switchingTheTokenOffNeedsTheCardToo() throws {
        let setup = try boundInEitherUnderBoth()
        #expect(
            throws: ServiceError.tokenUnavailable(
                "mode = both (configuration): the PIN alone cannot switch the token off; the card is needed too")
        ) {
            _ = try setup.service.disableToken(ScriptedInteraction(["482916"]), method: .pin)
        }
        let wrongCard = try setup.service.disableToken(ScriptedInteraction(["482916", "654321"]))
        guard case .tokenRejected = wrongCard.outcome else {
            Issue.record("the PIN alone switched the token off: \(wrongCard.outcome)")
            return
        }
        #expect(try setup.service.types()[1].enabled)
        let script = ScriptedInteraction(["482916", cardPIN])
        #expect(try setup.service.disableToken(script).outcome == .verified(method: .both))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])
        #expect(script.events.contains(.typeChanged(type: .token, enabled: false)))
        #expect(try setup.service.store.load(user: "alice")?.slots.map(\.kind) == [.pin, .recovery])
    }

    @Test func statusSaysTheModeInForceAndWhereItComesFrom() throws {
        let setup = try boundInEitherUnderBoth()
        let status = try setup.service.status()
        #expect(status.mode == .both)
        #expect(status.modeSource == .configuration)
        #expect(status.rebindAdvised)
        let either = try tokenSetup(mode: .either)
        let plain = try either.service.status()
        #expect(plain.mode == .either && plain.modeSource == .record && !plain.rebindAdvised)
        let both = try tokenSetup(mode: .both)
        let composite = try both.service.status()
        #expect(composite.mode == .both && composite.modeSource == .record && !composite.rebindAdvised)
    }

    @Test func rebindingInBothReplacesTheSlotsWithTheCompositeSlot() throws {
        let setup = try boundInEitherUnderBoth()
        let script = ScriptedInteraction(["482916", cardPIN])
        let report = try setup.service.enableToken(script, mode: .both)
        #expect(report.outcome == .verified(method: .both))
        #expect(script.prompts.map(\.name) == ["pin", "card-pin"])
        #expect(script.events.contains(.typeChanged(type: .token, enabled: true)))
        let record = try #require(try setup.service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.recovery, .composite], "no slot opens with one factor")
        #expect(record.policy.mode == .both)
        let status = try setup.service.status()
        #expect(status.modeSource == .record && !status.rebindAdvised)
        #expect(try setup.service.verify(ScriptedInteraction(["482916", cardPIN])).outcome == .verified(method: .both))
        #expect(
            throws: ServiceError.tokenAlreadyEnabled(serial: cardLabel(serial: record.slot(.composite)!.token!.serial))
        ) {
            _ = try setup.service.enableToken(ScriptedInteraction([]), mode: .both)
        }
    }

    @Test func aWrongPINDoesNotRebind() throws {
        let setup = try boundInEitherUnderBoth()
        let report = try setup.service.enableToken(ScriptedInteraction(["000001", cardPIN]), mode: .both)
        #expect(report.outcome == .rejected(remaining: 4, lastTry: false))
        #expect(try setup.service.store.load(user: "alice")?.slots.map(\.kind) == [.pin, .recovery, .token])
    }

    @Test func aNewBindingWithModeBothIsMadeInBothUnderAnEitherConfiguration() throws {
        let setup = try tokenSetup(mode: .either, bind: false)
        var binder = setup.service
        binder.selection = CardSelection(serial: "00001111")
        _ = try binder.enableToken(
            ScriptedInteraction(["482916", cardPIN, adminPIN]), generateKey: true, assumeYes: true,
            mode: .both)
        #expect(try setup.service.store.load(user: "alice")?.slots.map(\.kind) == [.recovery, .composite])
    }
}
