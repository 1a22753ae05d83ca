import Foundation
import TokenpinCore

/// A clock tests move by hand, so counter and delay tests never sleep.
public final class ManualTime: TimeSource, @unchecked Sendable {
    // @unchecked Sendable: each test owns its instance and moves it from one task at a time.
    public var now: Date
    public var monotonicNanoseconds: UInt64 = 0

    /// Creates a clock standing at `now` (by default a fixed instant in 2027).
    public init(_ now: Date = Date(timeIntervalSince1970: 1_800_000_000)) { self.now = now }

    /// Moves the wall clock forward by `seconds`.
    public func advance(_ seconds: Double) { now = now.addingTimeInterval(seconds) }
}
