import Synchronization
import Testing
import TokenpinSystem

@Suite struct ConditionTests {
    @Test func aWaitUntilAPassedDeadlineTimesOut() {
        let condition = Condition()
        let deadline = Condition.Deadline(secondsFromNow: 0.05)
        #expect(!deadline.hasPassed)
        condition.lock()
        // Nobody signals: every wake-up before the deadline is spurious, and the last wait is the time-out.
        while condition.wait(until: deadline) {}
        condition.unlock()
        #expect(deadline.hasPassed)
    }

    @Test func deadlinesInThePastOrAbsurdlyFarNeitherTrapNorWait() {
        let condition = Condition()
        condition.lock()
        defer { condition.unlock() }
        #expect(!condition.wait(until: Condition.Deadline(secondsFromNow: -1)))
        #expect(!condition.wait(until: Condition.Deadline(secondsFromNow: .nan)))
        #expect(Condition.Deadline(secondsFromNow: -.infinity).hasPassed)
        #expect(!Condition.Deadline(secondsFromNow: .infinity).hasPassed)
    }

    @Test func aBroadcastWakesAWaiterThatSeesTheChange() async throws {
        let box = Box()
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            do {
                try DetachedThread.start(stackSize: 1 << 20) {
                    box.condition.lock()
                    let deadline = Condition.Deadline(secondsFromNow: 30)
                    while !box.ready && !deadline.hasPassed { _ = box.condition.wait(until: deadline) }
                    let ready = box.ready
                    box.condition.unlock()
                    ready ? done.resume() : done.resume(throwing: Errno.wouldBlock)
                }
            } catch {
                done.resume(throwing: error)
            }
            box.condition.lock()
            box.ready = true
            box.condition.broadcast()
            box.condition.unlock()
        }
    }
}

/// State a condition guards, shared with another thread.
private final class Box: @unchecked Sendable {
    // @unchecked Sendable: `ready` is read and written only while `condition` is locked.
    let condition = Condition()
    var ready = false
}
