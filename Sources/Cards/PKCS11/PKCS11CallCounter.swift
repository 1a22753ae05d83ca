import Synchronization

/// Counts what the helpers given it do: the PKCS#11 calls each reports (its modules' loading in `ready`, then
/// every request's), the helpers started and their start cost (spawn → ready). `tokenpin bench --token` hands one
/// to the service (`PKCS11Access.counter`) and reads it around each verify, as the APDU bench counts APDUs.
public final class PKCS11CallCounter: Sendable {
    /// What was counted so far.
    public struct Totals: Sendable, Equatable {
        /// PKCS#11 calls the helpers reported.
        public var calls = 0
        /// Helpers started.
        public var helpers = 0
        /// Their start cost, spawn → ready, summed, in nanoseconds.
        public var startNanoseconds: UInt64 = 0
    }

    private let state = Mutex(Totals())

    public init() {}

    /// The totals now.
    public var totals: Totals { state.withLock { $0 } }

    func started(calls: Int, nanoseconds: UInt64) {
        state.withLock { totals in
            totals.helpers += 1
            totals.calls += calls
            totals.startNanoseconds += nanoseconds
        }
    }

    func add(calls: Int) {
        state.withLock { $0.calls += calls }
    }
}
