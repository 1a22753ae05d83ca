import FoundationEssentials
import Synchronization
internal import TokenpinSystem

/// A semaphore weighted in KiB: Argon2id work takes its slot's memory from the budget and gives it back.
///
/// Waiters are served first come, first served, so a flood queues in order and a large request is not starved
/// by small ones. A request larger than the whole budget is refused before it waits (`fits`). At most
/// `maximumHolders` hold memory at once (the daemon uses the number of cores): Argon2id is CPU-bound, so more
/// parallel derivations than cores add memory and latency for everyone else without adding throughput.
///
/// Every wait is bounded: a waiter whose time runs out leaves the queue, and those behind it move up.
package final class MemoryBudget: @unchecked Sendable {
    // @unchecked Sendable: every stored property is read and written only while `condition` is locked.
    private let condition = Condition()
    private var capacity: Int
    private let maximumHolders: Int
    private var holders = 0
    private var used = 0
    private var peak = 0
    private var nextTicket: UInt64 = 0
    /// Tickets of the waiters, oldest first; only the first may take memory.
    private var queue: [UInt64] = []

    /// A budget of `capacityKiB` shared by at most `maximumHolders` holders.
    package init(capacityKiB: Int, maximumHolders: Int = .max) {
        capacity = max(1, capacityKiB)
        self.maximumHolders = max(1, maximumHolders)
    }

    /// Whether a request of `kib` can ever be granted.
    package func fits(_ kib: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return kib <= capacity
    }

    /// Changes the capacity (a reloaded `daemon-kdf-memory`); waiters re-check.
    package func setCapacity(_ kib: Int) {
        condition.lock()
        capacity = max(1, kib)
        condition.broadcast()
        condition.unlock()
    }

    /// Takes `kib` (clamped to the capacity), waiting in turn until it is free or `seconds` have passed.
    ///
    /// Returns false, holding nothing, when the time ran out.
    @discardableResult
    package func acquire(_ kib: Int, waitingAtMost seconds: Double = .infinity) -> Bool {
        // No deadline means a plain wait (NSCondition.wait(until: .distantFuture) trapped on Linux).
        let deadline = seconds.isFinite ? Condition.Deadline(secondsFromNow: max(0, min(seconds, 86_400))) : nil
        condition.lock()
        defer { condition.unlock() }
        let ticket = nextTicket
        nextTicket &+= 1
        queue.append(ticket)
        while queue.first != ticket || used + min(kib, capacity) > capacity || holders >= maximumHolders {
            guard let deadline else {
                condition.wait()
                continue
            }
            if !condition.wait(until: deadline) && deadline.hasPassed {
                queue.removeAll { $0 == ticket }
                condition.broadcast()
                return false
            }
        }
        queue.removeFirst()
        holders += 1
        used += min(kib, capacity)
        peak = max(peak, used)
        condition.broadcast()
        return true
    }

    /// Gives back what `acquire(kib)` took.
    package func release(_ kib: Int) {
        condition.lock()
        used = max(0, used - min(kib, capacity))
        holders = max(0, holders - 1)
        condition.broadcast()
        condition.unlock()
    }

    /// In use, the most ever in use, and the number of waiters.
    package var usage: (usedKiB: Int, peakKiB: Int, waiting: Int, capacityKiB: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (used, peak, queue.count, capacity)
    }
}

/// One operation per user inside the daemon (the store's `flock` does the same across processes).
///
/// Lock order, everywhere in the daemon: this lock first, then the record's `flock`, then the memory budget
/// (only around a key derivation). Every wait is bounded.
package final class UserLocks: @unchecked Sendable {
    // @unchecked Sendable: `busy` is read and written only while `condition` is locked.
    private let condition = Condition()
    private var busy = Set<String>()

    /// Creates the table.
    package init() {}

    /// Waits until no operation runs for `user` (at most `seconds`), then marks one running.
    ///
    /// Returns false, holding nothing, when the time ran out.
    @discardableResult
    package func lock(_ user: String, waitingAtMost seconds: Double = .infinity) -> Bool {
        let deadline = seconds.isFinite ? Condition.Deadline(secondsFromNow: max(0, min(seconds, 86_400))) : nil
        condition.lock()
        defer { condition.unlock() }
        while busy.contains(user) {
            guard let deadline else {
                condition.wait()
                continue
            }
            if !condition.wait(until: deadline) && deadline.hasPassed && busy.contains(user) { return false }
        }
        busy.insert(user)
        return true
    }

    /// Marks `user`'s operation finished.
    package func unlock(_ user: String) {
        condition.lock()
        busy.remove(user)
        condition.broadcast()
        condition.unlock()
    }

    /// Whether an operation runs for `user`.
    package func isLocked(_ user: String) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return busy.contains(user)
    }
}

/// A fixed-window request counter per connection; time is injected so tests never sleep.
package struct RateLimiter: Sendable {
    /// Requests allowed per window.
    package var limit: Int
    /// The window, in nanoseconds.
    package var windowNanoseconds: UInt64
    private var windowStart: UInt64 = 0
    private var count = 0

    /// Allows `limit` requests per `windowNanoseconds`.
    package init(limit: Int, windowNanoseconds: UInt64) {
        self.limit = limit
        self.windowNanoseconds = windowNanoseconds
    }

    /// Counts a request at `now`; false when it is over the limit.
    package mutating func allow(now: UInt64) -> Bool {
        if count == 0 || now &- windowStart >= windowNanoseconds {
            windowStart = now
            count = 0
        }
        count += 1
        return count <= limit
    }
}

/// Counts connections in total and per uid.
package final class ConnectionTable: Sendable {
    private let state = Mutex<(total: Int, perUID: [UInt32: Int])>((0, [:]))
    /// The most connections at once.
    package let maximumTotal: Int
    /// The most connections one uid may hold (root included: the bench and PAM stacks run as root).
    package let maximumPerUID: Int

    /// Creates the table.
    package init(maximumTotal: Int, maximumPerUID: Int) {
        self.maximumTotal = maximumTotal
        self.maximumPerUID = maximumPerUID
    }

    /// Takes a place for `uid`; false when a limit is reached.
    ///
    /// Root (login, sudo, sshd, the PAM stacks) is held only to the per-uid limit, so users filling the table
    /// cannot keep root's authentications out.
    package func open(uid: UInt32) -> Bool {
        state.withLock { state in
            guard uid == 0 || state.total < maximumTotal, state.perUID[uid, default: 0] < maximumPerUID else {
                return false
            }
            if uid != 0 { state.total += 1 }
            state.perUID[uid, default: 0] += 1
            return true
        }
    }

    /// Gives the place back.
    package func close(uid: UInt32) {
        state.withLock { state in
            if uid != 0 { state.total -= 1 }
            state.perUID[uid, default: 1] -= 1
            if state.perUID[uid] == 0 { state.perUID[uid] = nil }
        }
    }

    /// Connections of users other than root open now.
    package var total: Int { state.withLock { $0.total } }
}
