import Foundation
import Synchronization
import TokenpinCore

/// A clock tests move by hand, so counter and delay tests never sleep.
///
/// Safe to read from one thread while another moves it (a bounded wait on a thread of its own, the test moving
/// the clock past its bound); `monotonicReads` tells the test that the waiter has started reading it.
package final class ManualTime: TimeSource, Sendable {
    private struct State {
        var now: Date
        var monotonicNanoseconds: UInt64 = 0
        var monotonicReads = 0
    }
    private let state: Mutex<State>

    /// The wall-clock time.
    package var now: Date {
        get { state.withLock { $0.now } }
        set { state.withLock { $0.now = newValue } }
    }

    /// The monotonic reading in nanoseconds.
    package var monotonicNanoseconds: UInt64 {
        get {
            state.withLock {
                $0.monotonicReads += 1
                return $0.monotonicNanoseconds
            }
        }
        set { state.withLock { $0.monotonicNanoseconds = newValue } }
    }

    /// How many times `monotonicNanoseconds` has been read.
    package var monotonicReads: Int { state.withLock { $0.monotonicReads } }

    /// Creates a clock standing at `now` (by default a fixed instant in 2027).
    package init(_ now: Date = Date(timeIntervalSince1970: 1_800_000_000)) { state = Mutex(State(now: now)) }

    /// Moves the clock forward by `seconds`: the wall clock and the monotonic reading alike.
    package func advance(_ seconds: Double) {
        state.withLock {
            $0.now = $0.now.addingTimeInterval(seconds)
            $0.monotonicNanoseconds &+= UInt64(max(0, seconds) * 1e9)
        }
    }
}
