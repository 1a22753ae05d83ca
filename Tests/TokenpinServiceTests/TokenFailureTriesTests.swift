import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator

@testable import TokenpinService

/// The `tokenFailed` event carries the card PIN's tries left as the card reported them.
@Suite struct TokenFailureTriesTests {
    /// The `cardTriesLeft` of the first `tokenFailed` event, or `.none` when there was no such event.
    func reportedTries(_ events: [Event]) -> Int?? {
        for case .tokenFailed(_, _, let tries) in events { return .some(tries) }
        return .none
    }

    @Test func aWrongCardPINReportsTheCardsCount() throws {
        let setup = try tokenSetup(fallback: .deny)
        let script = ScriptedInteraction(["654321"])
        _ = try setup.service.verify(script)
        #expect(reportedTries(script.events) == .some(2))
        #expect(cardPINTries(setup.card) == 2)
    }

    @Test func aBlockedCardReportsZeroWithoutAskingItsPIN() throws {
        let setup = try tokenSetup(fallback: .deny)
        for _ in 0..<3 { _ = try setup.service.verify(ScriptedInteraction(["654321"])) }
        let script = ScriptedInteraction([])
        _ = try setup.service.verify(script)
        #expect(script.prompts.isEmpty)
        #expect(reportedTries(script.events) == .some(0))
    }

    @Test func aCardThatIsNotThereReportsNone() throws {
        let setup = try tokenSetup()
        setup.card.remove()
        let script = ScriptedInteraction(["482916"])
        _ = try setup.service.verify(script)
        #expect(reportedTries(script.events) == .some(nil))
    }

    @Test func inModeBothTooAndThePINIsNotCounted() throws {
        let setup = try tokenSetup(mode: .both)
        let script = ScriptedInteraction(["482916", "654321"])
        _ = try setup.service.verify(script)
        #expect(reportedTries(script.events) == .some(2))
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5)
    }
}
