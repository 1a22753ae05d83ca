#if canImport(Glibc)
    import Glibc
#endif

/// The calling thread, for what blocks it.
package enum CurrentThread {
    /// Blocks the calling thread for `duration` (nothing for zero or less; longer when the system is busy). A
    /// signal that interrupts the wait ends it early unless `resumeAfterSignal` says to sleep what is left (the
    /// default always does). Only for threads of their own, never the cooperative pool.
    ///
    /// The corresponding C function is `nanosleep`.
    package static func sleep(for duration: Duration, resumeAfterSignal: () -> Bool = { true }) {
        let (seconds, attoseconds) = duration.components
        guard seconds > 0 || (seconds == 0 && attoseconds > 0) else { return }
        var request = timespec(tv_sec: Int(clamping: seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR && resumeAfterSignal() { request = remaining }
    }
}
