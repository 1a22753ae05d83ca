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
        let start = Date()
        do {
            try waiter.withLock(user: "alice") {}
            Issue.record("the lock was taken while another holder kept it")
        } catch let error as StoreError {
            #expect(error.code == .busy)
        }
        #expect(Date().timeIntervalSince(start) < 2)
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
