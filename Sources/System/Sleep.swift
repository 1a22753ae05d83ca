#if canImport(Glibc)
    import Glibc
#endif

/// The calling thread, for what blocks it.
package enum CurrentThread {
    /// Blocks the calling thread for about `microseconds` (longer when the system is busy; a signal may end it
    /// early). Only for threads of their own, never the cooperative pool.
    ///
    /// The corresponding C function is `usleep`.
    package static func sleep(microseconds: UInt32) {
        _ = usleep(microseconds)
    }
}
