import Foundation
import Synchronization
import Testing
import TokenpinTestSupport

@testable import TokenpinCore

/// Issue 8, finding 3: every lock wait has a bound. A store with `lockWaitSeconds` gives up on a record lock
/// another holder keeps, with a `busy` error, instead of waiting for good.
@Suite struct StoreLockTests {
    @Test func boundedLockWaitEndsBusy() throws {
        let directory = temporaryDirectory("lock")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let holder = RecordStore(directory: directory)
        var waiter = RecordStore(directory: directory)
        waiter.lockWaitSeconds = 0.2
        let held = Atomic<Bool>(false)
        let release = Atomic<Bool>(false)
        let thread = Thread {
            try? holder.withLock(user: "alice") {
                held.store(true, ordering: .releasing)
                while !release.load(ordering: .acquiring) { usleep(1000) }
            }
        }
        thread.start()
        while !held.load(ordering: .acquiring) { usleep(1000) }
        // The waiter's bound is its clock's, moved by hand: short of the bound it keeps waiting however long the
        // wall clock takes, and it says busy once the clock has passed the bound.
        let clock = ManualTime()
        waiter.time = clock
        let waiting = waiter
        let outcome = Mutex<StoreError.Code?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                try waiting.withLock(user: "alice") {}
                Issue.record("the lock was taken while another holder kept it")
            } catch let error as StoreError {
                outcome.withLock { $0 = error.code }
            } catch {
                Issue.record("\(error)")
            }
            done.signal()
        }.start()
        while clock.monotonicReads < 2 { usleep(1000) }  // the deadline is set and the first try failed
        clock.advance(0.19)
        #expect(done.wait(timeout: .now() + 0.5) == .timedOut, "still waiting: the clock is short of 0.2 s")
        clock.advance(0.01)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(outcome.withLock { $0 } == .busy)
        // Another user's record is not held: no wait.
        try waiter.withLock(user: "bob") {}
        release.store(true, ordering: .releasing)
        // Once released, the bounded store takes it.
        var taken = false
        for _ in 0..<100 where !taken {
            taken = (try? waiter.withLock(user: "alice") { true }) ?? false
            if !taken { usleep(10_000) }
        }
        #expect(taken)
    }
}
