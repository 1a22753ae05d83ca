import FoundationEssentials

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

    /// The largest `max` a record may hold (`retries-max` is 1 to 100).
    public static let maximumTries = 100
    /// The largest `failures` or `recoveryFailures` a record may hold; counting stops there.
    public static let maximumFailureCount = 1_000_000
    /// The longest pause `delay(at:schedule:)` returns: one day, the largest `fail-delay` entry.
    public static let maximumDelaySeconds = 86_400

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

    /// Which field is out of range, or nil; the message names the field as the record spells it.
    public var rangeProblem: String? {
        guard (1...Self.maximumTries).contains(max) else {
            return "counter.max is \(max); it must be from 1 to \(Self.maximumTries)"
        }
        guard (0...max).contains(remaining) else {
            return "counter.remaining is \(remaining); it must be from 0 to counter.max (\(max))"
        }
        guard (0...Self.maximumFailureCount).contains(failures) else {
            return "counter.failures is \(failures); it must be from 0 to \(Self.maximumFailureCount)"
        }
        guard (0...Self.maximumFailureCount).contains(recoveryFailures) else {
            return "counter.recoveryFailures is \(recoveryFailures); it must be from 0 to \(Self.maximumFailureCount)"
        }
        return nil
    }

    /// The seconds to wait before the next attempt under `schedule` (`fail-delay`), or 0.
    ///
    /// `schedule[n - 1]` is the pause after the n-th consecutive failure; past the end the last entry holds.
    /// Entries are clamped to 0 through `maximumDelaySeconds`, so the result is always in that range, whatever the
    /// counter, the dates or the schedule hold.
    public func delay(at now: Date, schedule: [Int]) -> Int {
        guard failures > 0, !schedule.isEmpty, let last = lastAttemptAt else { return 0 }
        let entry = schedule[Swift.min(failures, schedule.count) - 1]
        let pause = Swift.min(Swift.max(entry, 0), Self.maximumDelaySeconds)
        guard pause > 0 else { return 0 }
        let elapsed = now.timeIntervalSince(last)
        // A clock set back does not shorten the pause, nor does a date that is not a number.
        guard elapsed.isFinite, elapsed >= 0 else { return pause }
        return elapsed >= Double(pause) ? 0 : Swift.min(pause, Int((Double(pause) - elapsed).rounded(.up)))
    }

    /// Counts an attempt before its outcome is known; `failures` saturates at `maximumFailureCount`.
    public mutating func consumeAttempt(at now: Date) {
        remaining = remaining > 0 ? remaining - 1 : 0
        failures = Self.counted(failures)
        lastAttemptAt = now
        if remaining == 0 { lockedAt = now }
    }

    /// Counts a wrong (or not yet checked) recovery key; `recoveryFailures` saturates at `maximumFailureCount`.
    public mutating func countRecoveryFailure() {
        recoveryFailures = Self.counted(recoveryFailures)
    }

    /// `count + 1`, kept in 1 through `maximumFailureCount` (a negative count is taken as 0).
    static func counted(_ count: Int) -> Int {
        count < 0 ? 1 : Swift.min(count, maximumFailureCount - 1) + 1
    }

    /// Restores the counter after a success; `newMax` applies a changed `retries-max` (clamped to 1 through
    /// `maximumTries`).
    public mutating func restore(max newMax: Int? = nil) {
        if let newMax { max = Swift.min(Swift.max(newMax, 1), Self.maximumTries) }
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
    /// Failed attempts from remote logins and other users (`su`), counted apart from `counter`; absent until the
    /// first one, so records without any stay as they were.
    public var otherAttempts: OtherAttempts?
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

    /// Why the record is not one tokenpin can use, or nil; the message names the field that is wrong.
    ///
    /// Every field is bounded here, before anything does arithmetic with it: the version, the user name, each
    /// counter field, each slot's KDF cost, salt, nonce, sealed key and token binding.
    public var structuralProblem: String? {
        if version != Self.currentVersion { return "unknown record version \(version)" }
        if user.isEmpty { return "record names no user" }
        guard RecordStore.validate(user: user) else {
            return "user is not a user name tokenpin accepts (1 to 64 letters, digits, `_`, `-`, `.`)"
        }
        if let problem = counter.rangeProblem { return problem }
        if let problem = otherAttempts?.rangeProblem { return problem }
        if slot(.pin) == nil && slot(.composite) == nil { return "record has no PIN slot" }
        if slot(.recovery) == nil { return "record has no recovery slot" }
        for kind in SlotKind.allCases where slots.filter({ $0.kind == kind }).count > 1 {
            return "record has two \(kind.rawValue) slots"
        }
        for slot in slots {
            if let problem = slot.problem { return "\(slot.kind.rawValue) slot: \(problem)" }
        }
        return nil
    }
}
