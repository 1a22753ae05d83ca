import FoundationEssentials
package import TokenpinCore

/// Who asks for an operation, as tokenpind classes it: the attempt's class and, for PAM, the invoker it reported.
///
/// Local mode is always the user themselves (`.own`). tokenpind classes each request (docs/pam.md, "Who is
/// asking"): a peer that is not root is the user; root without invoker fields is local; a PAM module reports
/// the invoking real uid, `PAM_SERVICE`, `PAM_RHOST`, `PAM_TTY` and `PAM_RUSER`.
package struct AttemptContext: Sendable, Equatable {
    /// The class.
    package var `class`: AttemptClass
    /// The invoking real uid, when a PAM module reported it.
    package var invokerUID: UInt32?
    /// The invoker's login name, when it has one.
    package var invokerName: String?
    /// `PAM_SERVICE`.
    package var service: String?
    /// `PAM_RHOST`.
    package var rhost: String?

    /// Creates a context.
    package init(
        class: AttemptClass, invokerUID: UInt32? = nil, invokerName: String? = nil, service: String? = nil,
        rhost: String? = nil
    ) {
        self.class = `class`
        self.invokerUID = invokerUID
        self.invokerName = invokerName
        self.service = service
        self.rhost = rhost
    }

    /// The user themselves.
    package static let own = AttemptContext(class: .own)
}

extension PINService {
    /// Whether this attempt spends the remote/other counter (and never sees the token).
    var countsApart: Bool { !attempt.class.isTrusted }

    /// The remote/other counter of `record`, as a `RetryCounter` for reports (`remaining` under `retries-max`).
    func otherCounter(_ record: EnrolmentRecord) -> RetryCounter {
        let others = record.otherAttempts ?? OtherAttempts()
        var counter = RetryCounter(max: configuration.retriesMax)
        counter.remaining = others.remaining(maximum: configuration.retriesMax)
        counter.failures = others.failures
        counter.lockedAt = others.lockedAt
        counter.lastAttemptAt = others.last?.at
        return counter
    }

    /// Locked or delayed for a remote or other attempt before anything is asked, or nil.
    func earlyOtherOutcome(_ record: EnrolmentRecord) -> VerifyOutcome? {
        let counter = otherCounter(record)
        if counter.isLocked { return .locked }
        let delay = counter.delay(at: time.now, schedule: configuration.failDelay)
        return delay > 0 ? .delayed(seconds: delay) : nil
    }

    /// This attempt as the record keeps it.
    func otherAttempt(at now: Date) -> OtherAttempts.Attempt {
        OtherAttempts.Attempt(
            class: attempt.class, service: attempt.service.map(Self.bounded), invokerUID: attempt.invokerUID ?? 0,
            rhost: attempt.rhost.map(Self.bounded), at: now)
    }

    /// A name cut to what a record keeps.
    static func bounded(_ text: String) -> String {
        var out = ""
        for character in text where out.utf8.count + character.utf8.count <= OtherAttempts.maximumTextLength {
            out.append(character)
        }
        return out
    }

    /// An own or local success: takes what remote and other attempts did off the record, to be reported.
    func takeOtherAttempts(_ record: inout EnrolmentRecord) -> OtherAttemptsNotice? {
        guard attempt.class.isTrusted, let others = record.otherAttempts else { return nil }
        record.otherAttempts = nil
        guard others.failures > 0 || others.last != nil else { return nil }
        return OtherAttemptsNotice(
            failures: others.failures, last: others.last,
            invoker: others.last.flatMap { last in invokerNames?(last.invokerUID) })
    }

    /// Refuses the token to remote and other attempts: a card in this machine's reader answers only the person
    /// at this machine and the user themselves (invariant 11).
    func tokenRefusedToThisClass() -> ServiceError {
        .tokenUnavailable(
            "the token answers only at this machine (the user themselves, a local login), not a \(attempt.class.rawValue) attempt"
        )
    }
}

extension StatusReport {
    /// The report with the remote/other counter of a record.
    func withOtherAttempts(
        _ others: OtherAttempts?, maximum: Int, names: (@Sendable (UInt32) -> String?)?
    ) -> StatusReport {
        var report = self
        guard let others else { return report }
        report.otherFailures = others.failures
        report.otherLocked = others.isLocked(maximum: maximum)
        report.otherLast = others.last
        report.otherLastInvoker = others.last.flatMap { names?($0.invokerUID) }
        return report
    }
}
