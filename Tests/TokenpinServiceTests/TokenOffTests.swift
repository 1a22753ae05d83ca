import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator

@testable import TokenpinService

@Suite struct TokenOffTests {
    @Test func switchingOffNeedsThePINAndAWrongOneCounts() throws {
        let setup = try tokenSetup()
        let wrong = ScriptedInteraction(["000001"])
        #expect(try setup.service.disableToken(wrong).outcome == .rejected(remaining: 4, lastTry: false))
        #expect(wrong.prompts == [.pin])
        #expect(!wrong.events.contains(.typeChanged(type: .token, enabled: false)))
        #expect(try setup.service.types()[1].enabled, "a wrong PIN switches nothing off")

        let right = ScriptedInteraction(["482916"])
        #expect(try setup.service.disableToken(right).outcome == .verified(method: .pin))
        #expect(right.prompts == [.pin])
        #expect(right.events.contains(.typeChanged(type: .token, enabled: false)))
        let record = try #require(try setup.service.store.load(user: "alice"))
        #expect(record.slots.map(\.kind) == [.pin, .recovery])
        #expect(record.counter.remaining == 5, "a right PIN restores the counter as a verify does")
    }

    @Test func withoutAnAnswerNothingIsSwitchedOff() throws {
        let setup = try tokenSetup()
        #expect {
            _ = try setup.service.disableToken(ScriptedInteraction([]))
        } throws: { ($0 as? ServiceError)?.code == "input" }
        #expect(try setup.service.types()[1].enabled)
    }

    @Test func switchingOffWithTheCardNamesTheCard() throws {
        let setup = try tokenSetup()
        let wrong = ScriptedInteraction(["654321"])
        let refused = try setup.service.disableToken(wrong, method: .token)
        if case .tokenRejected = refused.outcome {
        } else {
            Issue.record("a wrong card PIN switched off: \(refused.outcome)")
        }
        #expect(wrong.prompts.map(\.name) == ["card-pin"])
        #expect(try setup.service.types()[1].enabled)

        let script = ScriptedInteraction([cardPIN])
        #expect(try setup.service.disableToken(script, method: .token).outcome == .verified(method: .token))
        #expect(script.prompts.map(\.name) == ["card-pin"])
        #expect(script.events.contains(.typeChanged(type: .token, enabled: false)))
        #expect(!(try setup.service.types()[1].enabled))
        #expect(try setup.service.store.load(user: "alice")?.counter.remaining == 5, "no PIN try spent")
    }

    @Test func aCardThatIsAwayCannotSwitchOff() throws {
        let setup = try tokenSetup()
        setup.card.remove()
        #expect { _ = try setup.service.disableToken(ScriptedInteraction([cardPIN]), method: .token) } throws: {
            error in
            guard let error = error as? ServiceError else { return false }
            return ExitCode(error) == .tokenUnavailable
        }
        #expect(try setup.service.types()[1].enabled)
    }

    @Test func aLockedPINSwitchesNothingOffButTheCardStillCan() throws {
        let setup = try tokenSetup()
        for _ in 0..<5 { _ = try verify(setup.service, "000001") }
        let script = ScriptedInteraction(["482916"])
        #expect(try setup.service.disableToken(script).outcome == .locked)
        #expect(script.prompts.isEmpty)
        #expect(try setup.service.types()[1].enabled)
        #expect(
            try setup.service.disableToken(ScriptedInteraction([cardPIN]), method: .token).outcome
                == .verified(method: .token))
    }

    @Test func inModeBothThePINAloneCannotSwitchOff() throws {
        let setup = try tokenSetup(mode: .both)
        #expect { _ = try setup.service.disableToken(ScriptedInteraction(["482916"]), method: .pin) } throws: { error in
            guard let error = error as? ServiceError, case .tokenUnavailable = error else { return false }
            return true
        }
        #expect(try setup.service.types()[1].enabled)
    }
}
