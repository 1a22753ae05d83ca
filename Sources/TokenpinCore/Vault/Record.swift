import Foundation

/// How verification combines the authentication types (`mode`).
public enum VerificationMode: String, Codable, Sendable, CaseIterable {
    /// The PIN or the token.
    case either
    /// The PIN and the token together.
    case both
}

/// Whether a missing or failing token falls back to the PIN (`fallback`).
public enum FallbackPolicy: String, Codable, Sendable, CaseIterable {
    /// Ask for the PIN when the token cannot be used.
    case allow
    /// Do not.
    case deny
}

/// The retry counter and failure history of one user's PIN.
///
/// Invariant 1: `remaining` is decremented and written durably before the PIN is checked; a success restores
/// it. The PIN is locked when `remaining` is 0, whatever else the record says, so a crash after the last
/// decrement leaves it locked.
public struct RetryCounter: Codable, Sendable, Equatable {
    /// Tries left before the PIN locks.
    public var remaining: Int
    /// Tries after a success or reset.
    public var max: Int
    /// When the PIN locked, if it did.
    public var lockedAt: Date?
    /// Failures since the last success (also counts attempts whose outcome was never written: a crash).
    public var failures: Int
    /// When the last counted attempt began; the failure delay runs from here.
    public var lastAttemptAt: Date?
    /// Wrong recovery keys entered since the last reset.
    public var recoveryFailures: Int

    /// A full counter.
    public init(max: Int) {
        self.remaining = max
        self.max = max
        self.lockedAt = nil
        self.failures = 0
        self.lastAttemptAt = nil
        self.recoveryFailures = 0
    }

    /// Whether the PIN is locked.
    public var isLocked: Bool { remaining <= 0 }

    /// The seconds to wait before the next attempt under `schedule` (`fail-delay`), or 0.
    ///
    /// `schedule[n - 1]` is the pause after the n-th consecutive failure; past the end the last entry holds.
    public func delay(at now: Date, schedule: [Int]) -> Int {
        guard failures > 0, !schedule.isEmpty, let last = lastAttemptAt else { return 0 }
        let pause = schedule[Swift.min(failures, schedule.count) - 1]
        guard pause > 0 else { return 0 }
        let elapsed = now.timeIntervalSince(last)
        if elapsed < 0 { return pause }  // a clock set back does not shorten the pause
        return elapsed >= Double(pause) ? 0 : Int((Double(pause) - elapsed).rounded(.up))
    }

    /// Counts an attempt before its outcome is known.
    public mutating func consumeAttempt(at now: Date) {
        remaining = Swift.max(0, remaining - 1)
        failures += 1
        lastAttemptAt = now
        if remaining == 0 { lockedAt = now }
    }

    /// Restores the counter after a success; `newMax` applies a changed `retries-max`.
    public mutating func restore(max newMax: Int? = nil) {
        if let newMax { max = newMax }
        remaining = max
        lockedAt = nil
        failures = 0
        lastAttemptAt = nil
    }
}

/// One user's enrolment: the record tokenpin keeps in its store.
///
/// `{version, user, policy, counter, slots}`, byte fields base64. The slot list can gain `token` and
/// `composite` slots without a new version.
public struct EnrolmentRecord: Codable, Sendable, Equatable {
    /// The record format this build writes and reads.
    public static let currentVersion = 1

    /// The format version.
    public var version: Int
    /// The user the record belongs to (part of every slot's associated data).
    public var user: String
    /// When the PIN was first enrolled.
    public var created: Date
    /// When the record last changed.
    public var updated: Date
    /// How the types combine, as chosen when the token was bound.
    public var policy: Policy
    /// The PIN retry counter.
    public var counter: RetryCounter
    /// The key slots.
    public var slots: [VaultSlot]

    /// The verification policy stored with the record.
    public struct Policy: Codable, Sendable, Equatable {
        /// PIN or token, or both.
        public var mode: VerificationMode
        /// Whether a failing token falls back to the PIN.
        public var fallback: FallbackPolicy

        /// Creates a policy.
        public init(mode: VerificationMode = .either, fallback: FallbackPolicy = .allow) {
            self.mode = mode
            self.fallback = fallback
        }
    }

    /// Creates a record.
    public init(user: String, created: Date, policy: Policy = Policy(), counter: RetryCounter, slots: [VaultSlot]) {
        self.version = Self.currentVersion
        self.user = user
        self.created = created
        self.updated = created
        self.policy = policy
        self.counter = counter
        self.slots = slots
    }

    /// The first slot of `kind`.
    public func slot(_ kind: SlotKind) -> VaultSlot? { slots.first { $0.kind == kind } }

    /// Replaces the slots of `kind` with `slot` (or removes them when nil).
    public mutating func setSlot(_ kind: SlotKind, _ slot: VaultSlot?) {
        slots.removeAll { $0.kind == kind }
        if let slot { slots.append(slot) }
        slots.sort { SlotKind.allCases.firstIndex(of: $0.kind)! < SlotKind.allCases.firstIndex(of: $1.kind)! }
    }

    /// Whether the token type is on.
    public var tokenEnabled: Bool { slot(.token) != nil || slot(.composite) != nil }

    /// Why the record is not one tokenpin can use, or nil.
    public var structuralProblem: String? {
        if version != Self.currentVersion { return "unknown record version \(version)" }
        if user.isEmpty { return "record names no user" }
        if counter.max < 1 || counter.max > 100 || counter.remaining < 0 || counter.remaining > counter.max {
            return "retry counter out of range"
        }
        if counter.failures < 0 || counter.recoveryFailures < 0 { return "retry counter out of range" }
        if slot(.pin) == nil && slot(.composite) == nil { return "record has no PIN slot" }
        if slot(.recovery) == nil { return "record has no recovery slot" }
        for kind in SlotKind.allCases where slots.filter({ $0.kind == kind }).count > 1 {
            return "record has two \(kind.rawValue) slots"
        }
        if let bad = slots.first(where: { !$0.isWellFormed }) { return "\(bad.kind.rawValue) slot is malformed" }
        return nil
    }
}
