#if canImport(Glibc)
    import Glibc
#endif

/// A mutex and a condition variable together, like Foundation's `NSCondition`.
///
/// Lock it, test the state it guards, `wait` while the state is not right, unlock; whoever changes the state does
/// so while locked and then calls `signal` or `broadcast`. Deadlines are on the wall clock (`CLOCK_REALTIME`), as
/// `NSCondition.wait(until: Date)` has them.
package final class Condition: @unchecked Sendable {
    // @unchecked Sendable: the two pthread objects are made for use from any thread; they live in memory of their
    // own, allocated once, so that they never move.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    /// A point in time on the wall clock, for `wait(until:)`.
    package struct Deadline: Sendable {
        fileprivate var time: timespec

        /// `seconds` from now (at least now).
        package init(secondsFromNow seconds: Double) {
            // Clamped to 30 years either way, so that no figure (infinity, NaN) can trap the conversion.
            let seconds = seconds.isNaN ? 0 : min(max(seconds, -1e9), 1e9)
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let whole = seconds.rounded(.down)
            var nanoseconds = Int(now.tv_nsec) + Int((seconds - whole) * 1_000_000_000)
            var wholeSeconds = Int(now.tv_sec) + Int(whole)
            if nanoseconds >= 1_000_000_000 {
                nanoseconds -= 1_000_000_000
                wholeSeconds += 1
            }
            time = timespec(tv_sec: wholeSeconds, tv_nsec: nanoseconds)
        }

        /// Whether the wall clock has reached the deadline.
        package var hasPassed: Bool {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return (now.tv_sec, now.tv_nsec) >= (time.tv_sec, time.tv_nsec)
        }
    }

    /// A new, unlocked condition.
    ///
    /// The corresponding C functions are `pthread_mutex_init` and `pthread_cond_init`.
    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Takes the lock, waiting for it as long as it takes.
    ///
    /// The corresponding C function is `pthread_mutex_lock`.
    package func lock() { pthread_mutex_lock(mutex) }

    /// Gives the lock back; only the thread that holds it may.
    ///
    /// The corresponding C function is `pthread_mutex_unlock`.
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Gives the lock back, sleeps until signalled (or woken spuriously), and takes the lock again.
    ///
    /// The corresponding C function is `pthread_cond_wait`.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Like `wait()`, but wakes at `deadline` at the latest; false when it woke because the deadline passed.
    ///
    /// The corresponding C function is `pthread_cond_timedwait`.
    package func wait(until deadline: Deadline) -> Bool {
        var time = deadline.time
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    /// Wakes one waiter.
    ///
    /// The corresponding C function is `pthread_cond_signal`.
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    ///
    /// The corresponding C function is `pthread_cond_broadcast`.
    package func broadcast() { pthread_cond_broadcast(condition) }
}
