import Foundation
import Testing
import TokenpinCore
import TokenpinSimulator
import TokenpinTestSupport

@testable import TokenpinService

/// The service as tokenpind runs it for one class of attempt: `su victim` by uid 1001 (`other`), sshd (`remote`).
func asClass(_ service: PINService, _ attemptClass: AttemptClass, uid: UInt32 = 1001) -> PINService {
    var classed = service
    classed.attempt = AttemptContext(
        class: attemptClass, invokerUID: attemptClass == .remote ? 0 : uid,
        service: attemptClass == .remote ? "sshd" : "su", rhost: attemptClass == .remote ? "203.0.113.7" : nil)
    classed.invokerNames = { $0 == 1001 ? "bob" : nil }
    return classed
}

/// Issue 18: no one but the user, at this machine or as themselves, can make the user's PIN need the recovery key;
/// remote and other attempts get the PIN only, on a counter of their own, and the user is told at their next own
/// or local success.
@Suite struct OtherAttemptsTests {
    @Test(arguments: [AttemptClass.other, .remote])
    func failuresCountApartAndNeverLockThePIN(attemptClass: AttemptClass) throws {
        var alice = makeService(retries: 3)
        alice.invokerNames = { $0 == 1001 ? "bob" : nil }
        try enrol(alice)
        let attacker = asClass(alice, attemptClass)
        var outcomes: [VerifyOutcome] = []
        for _ in 0..<3 { outcomes.append(try attacker.verify(ScriptedInteraction(["000000"])).outcome) }
        #expect(
            outcomes == [
                .rejected(remaining: 2, lastTry: false), .rejected(remaining: 1, lastTry: true), .locked,
            ])
        // Locked out: nothing is asked of the next one, even with the right PIN.
        let locked = ScriptedInteraction(["482916"])
        let report = try attacker.verify(locked)
        #expect(report.outcome == .locked && report.countedApart)
        #expect(locked.prompts.isEmpty)
        // The PIN's own counter never moved, and the user verifies (and is told).
        let status = try alice.status()
        #expect(status.remaining == 3 && !status.locked)
        #expect(status.otherFailures == 3 && status.otherLocked)
        #expect(status.otherLast?.class == attemptClass)
        let own = ScriptedInteraction(["482916"])
        let verified = try alice.verify(own)
        #expect(verified.outcome == .verified(method: .pin))
        let notice = try #require(verified.otherAttempts)
        #expect(notice.failures == 3)
        #expect(own.events.contains(.otherAttempts(notice)))
        if attemptClass == .other {
            #expect(notice.sentence.hasPrefix("3 failed attempts from su by bob at "), "\(notice.sentence)")
        } else {
            #expect(notice.sentence.contains("remote login (sshd) from 203.0.113.7"), "\(notice.sentence)")
        }
        let cleared = try alice.status()
        #expect(cleared.otherFailures == 0 && !cleared.otherLocked && cleared.otherLast == nil)
        #expect(try attacker.verify(ScriptedInteraction(["482916"])).outcome == .verified(method: .pin))
    }

    @Test func aRemoteSuccessTakesBackOnlyItsOwnCount() throws {
        let alice = makeService(retries: 5)
        try enrol(alice)
        let remote = asClass(alice, .remote)
        _ = try remote.verify(ScriptedInteraction(["000000"]))
        let right = try remote.verify(ScriptedInteraction(["482916"]))
        #expect(right.outcome == .verified(method: .pin) && right.otherAttempts == nil)
        let status = try alice.status()
        #expect(status.otherFailures == 1, "the failure stays to be told; the success is not a failure")
        #expect(status.remaining == 5)
    }

    @Test func theCountIsWrittenBeforeThePINIsChecked() throws {
        let alice = makeService(retries: 5)
        try enrol(alice)
        var crashing = asClass(alice, .other)
        crashing.hooks = PINService.Hooks(afterCounterPersisted: { throw TestFault() })
        #expect(throws: ServiceError.self) { _ = try crashing.verify(ScriptedInteraction(["482916"])) }
        #expect(try alice.status().otherFailures == 1, "a crash after the write leaves the attempt counted")
        #expect(try alice.status().remaining == 5)
    }

    @Test(arguments: [AttemptClass.other, .remote])
    func theTokenIsNeverOfferedToThem(attemptClass: AttemptClass) throws {
        let setup = try tokenSetup()
        let attacker = asClass(setup.service, attemptClass)
        let script = ScriptedInteraction(["000000"])
        #expect(try attacker.verify(script).outcome == .rejected(remaining: 4, lastTry: false))
        #expect(script.prompts == [.pin], "the PIN only: never the card PIN")
        #expect(cardPINTries(setup.card) == 3)
        #expect(throws: ServiceError.self) { _ = try attacker.verify(ScriptedInteraction(["123456"]), method: .token) }
        #expect(cardPINTries(setup.card) == 3)
        // In mode = both the PIN alone opens nothing: refused before anything is asked.
        let both = try tokenSetup(mode: .both)
        let refused = ScriptedInteraction(["482916"])
        #expect(throws: ServiceError.self) { _ = try asClass(both.service, attemptClass).verify(refused) }
        #expect(refused.prompts.isEmpty && cardPINTries(both.card) == 3)
    }

    @Test func theUserChangingThePINFromAnotherAccountCountsApartToo() throws {
        let alice = makeService(retries: 5)
        try enrol(alice)
        let other = asClass(alice, .other)
        let report = try other.change(ScriptedInteraction(["000000"]))
        #expect(report.outcome == .rejected(remaining: 4, lastTry: false) && report.countedApart)
        #expect(try alice.status().remaining == 5)
    }

    @Test func theRecordRefusesAnOutOfRangeCounter() {
        var others = OtherAttempts()
        others.failures = RetryCounter.maximumFailureCount + 1
        #expect(others.rangeProblem?.contains("otherAttempts.failures") == true)
        others = OtherAttempts()
        others.consume(
            OtherAttempts.Attempt(class: .own, service: nil, invokerUID: 0, rhost: nil, at: Date()), maximum: 5)
        #expect(others.rangeProblem?.contains("remote or other") == true)
    }
}
