import FoundationEssentials
internal import TokenpinSystem

/// The source of the current time, injected so that counter and delay tests never sleep.
public protocol TimeSource: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// A monotonic reading in nanoseconds, for measuring durations.
    var monotonicNanoseconds: UInt64 { get }
}

/// The system clock.
public struct SystemTimeSource: TimeSource {
    /// Creates the system clock.
    public init() {}

    public var now: Date { Date() }

    public var monotonicNanoseconds: UInt64 { MonotonicClock.nanoseconds }
}
