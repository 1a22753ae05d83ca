import FoundationEssentials

/// Who is asking for a verification, as tokenpind classes it (docs/pam.md, "Who is asking").
///
/// The class decides which counter an attempt spends and whether the card is offered: a card in this machine's
/// reader answers only the user themselves and local logins (invariant 11).
public enum AttemptClass: String, Codable, Sendable, CaseIterable {
    /// The user themselves: the peer is the user (a locker, the CLI), or a PAM stack run by the user (`sudo`).
    case own
    /// Root at this machine with no remote host: `login`, a greeter, root's own tools.
    case local
    /// A PAM stack with a remote host set: `sshd`.
    case remote
    /// A PAM stack run by another user: `su victim`.
    case other

    /// Whether the attempt comes from the person at this machine or the user themselves: the PIN's own counter,
    /// the token, and the only classes that can make the PIN need the recovery key.
    public var isTrusted: Bool { self == .own || self == .local }
}

/// The failures of *remote* and *other* attempts, counted apart from the PIN's own counter.
///
/// When `failures` reaches `retries-max` those classes are locked out; the user's own and local verifications
/// go on working, and the user's next own or local success clears this (and reports it). So no one but the user
/// can lock the user's PIN. Invariant 1 holds here too: an attempt is counted durably before the PIN is checked,
/// and a remote or other success only takes its own count back.
public struct OtherAttempts: Codable, Sendable, Equatable {
    /// Failed remote and other attempts since the user's last own or local success (an attempt whose outcome
    /// was never written counts).
    public var failures: Int
    /// When the remote and other classes were locked out, if they are.
    public var lockedAt: Date?
    /// The last such attempt: who made it and when.
    public var last: Attempt?

    /// One remote or other attempt, as the audit trail and `status` show it.
    public struct Attempt: Codable, Sendable, Equatable {
        /// `remote` or `other`.
        public var `class`: AttemptClass
        /// The PAM service (`su`, `sshd`).
        public var service: String?
        /// The invoking real uid.
        public var invokerUID: UInt32
        /// The remote host, for `remote`.
        public var rhost: String?
        /// When it was made.
        public var at: Date

        /// Creates an attempt.
        public init(class: AttemptClass, service: String?, invokerUID: UInt32, rhost: String?, at: Date) {
            self.class = `class`
            self.service = service
            self.invokerUID = invokerUID
            self.rhost = rhost
            self.at = at
        }
    }

    /// None yet.
    public init() {
        failures = 0
        lockedAt = nil
        last = nil
    }

    /// The longest service or host name a record keeps, in bytes.
    public static let maximumTextLength = 256

    /// Whether remote and other attempts are locked out under `retries-max` `maximum`.
    public func isLocked(maximum: Int) -> Bool { failures >= Swift.max(1, maximum) }

    /// Tries the remote and other classes have left under `maximum`.
    public func remaining(maximum: Int) -> Int { Swift.max(0, Swift.max(1, maximum) - failures) }

    /// Counts `attempt` before its outcome is known; locks the classes out when `maximum` is reached.
    public mutating func consume(_ attempt: Attempt, maximum: Int) {
        failures = RetryCounter.counted(failures)
        last = attempt
        if isLocked(maximum: maximum), lockedAt == nil { lockedAt = attempt.at }
    }

    /// A remote or other attempt verified: its own count is taken back, what the others did stays to be reported.
    public mutating func succeeded() {
        failures = Swift.max(0, failures - 1)
        if failures == 0 && last == nil { lockedAt = nil }
    }

    /// Which field is out of range, or nil; the message names the field as the record spells it.
    public var rangeProblem: String? {
        guard (0...RetryCounter.maximumFailureCount).contains(failures) else {
            return "otherAttempts.failures is \(failures); it must be from 0 to \(RetryCounter.maximumFailureCount)"
        }
        if let last {
            guard !last.class.isTrusted else { return "otherAttempts.last.class must be remote or other" }
            for text in [last.service, last.rhost].compactMap({ $0 }) where text.utf8.count > Self.maximumTextLength {
                return "otherAttempts.last holds a name longer than \(Self.maximumTextLength) bytes"
            }
        }
        return nil
    }
}

/// What the user is told at their next own or local verification about remote and other attempts.
public struct OtherAttemptsNotice: Sendable, Equatable {
    /// How many failed since the user's last own or local success.
    public var failures: Int
    /// The last one.
    public var last: OtherAttempts.Attempt?
    /// The last one's invoker by name, when known.
    public var invoker: String?

    /// Creates a notice.
    public init(failures: Int, last: OtherAttempts.Attempt?, invoker: String? = nil) {
        self.failures = failures
        self.last = last
        self.invoker = invoker
    }

    /// `5 failed attempts from su by bob at 14:02; the PIN and token still work here`.
    public var sentence: String {
        var text = "\(failures) failed \(failures == 1 ? "attempt" : "attempts")"
        if let last {
            switch last.class {
            case .remote: text += " from a remote login" + (last.service.map { " (\($0))" } ?? "")
            case .other, .own, .local: text += " from " + (last.service ?? "another user's PAM stack")
            }
            if let invoker, last.class == .other { text += " by \(invoker)" }
            if let rhost = last.rhost, !rhost.isEmpty { text += " from \(rhost)" }
            text += " at " + Self.clock(last.at)
        }
        return text + "; the PIN and token still work here"
    }

    /// `2026-12-01 14:02 UTC`.
    static func clock(_ date: Date) -> String {
        let iso = date.formatted(.iso8601)  // 2026-12-01T14:02:33Z
        guard iso.count >= 16 else { return iso }
        return String(iso.prefix(10)) + " " + String(iso.dropFirst(11).prefix(5)) + " UTC"
    }
}
