import Synchronization

/// Counts what the helpers given it do: the PKCS#11 calls each reports (its modules' loading in `ready`, then
/// every request's), the helpers started and their start cost (spawn → ready). `tokenpin bench --token` hands one
/// to the service (`PKCS11Access.counter`) and reads it around each verify, as the APDU bench counts APDUs.
package final class PKCS11CallCounter: Sendable {
    /// What was counted so far.
    package struct Totals: Sendable, Equatable {
        /// PKCS#11 calls the helpers reported.
        package var calls = 0
        /// Helpers started.
        package var helpers = 0
        /// Their start cost, spawn → ready, summed, in nanoseconds.
        package var startNanoseconds: UInt64 = 0
    }

    private let state = Mutex(Totals())

    package init() {}

    /// The totals now.
    package var totals: Totals { state.withLock { $0 } }

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
