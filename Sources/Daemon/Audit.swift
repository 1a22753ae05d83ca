import TokenpinCore
import TokenpinService
internal import TokenpinSystem

/// One event of the audit trail: who spent or changed a way in, for whom, how, and what came of it.
///
/// Never a secret: the fields are the user, the invoker, the class, the PAM service and remote host, the method,
/// the result and the tries left.
package struct AuditEvent: Sendable, Equatable {
    /// The kinds of event, each with the journal `MESSAGE_ID` fleets filter on (docs/security.md lists them).
    package enum Kind: String, Sendable, CaseIterable {
        /// A verification succeeded (`verify`, and the counted check of `change`, `toggle`).
        case verified
        /// A verification failed: a wrong PIN, a refused card, a delay, a class that gets nothing.
        case verifyFailed = "verify-failed"
        /// The PIN, or the remote/other attempts, locked.
        case locked
        /// A card was bound to a record.
        case bound
        /// A card's binding was removed.
        case unbound
        /// A record was imported.
        case imported
        /// The login password checked before a first way in was right.
        case passwordAccepted = "password-accepted"
        /// It was wrong, or the check was throttled.
        case passwordRefused = "password-refused"

        /// The journal's `MESSAGE_ID`: one 128-bit id per kind, never reused for another.
        package var messageID: String {
            switch self {
            case .verified: "67bcd6c3e47849e9818468e219db859d"
            case .verifyFailed: "42cc99024b6d4e0f9be437a300d7f682"
            case .locked: "ad4059e7164f4e21a6abe048bf84517b"
            case .bound: "3d3d07051fb94ac482a7061de9a85c1d"
            case .unbound: "bd85eb1c15cd4e2d929302a1a0582aa5"
            case .imported: "1b856301151340ef9a2e6977028bd70b"
            case .passwordAccepted: "e52af74a643b4e2285834c567c7d6061"
            case .passwordRefused: "9f6fda4c28a84f0b901c22c9702e2889"
            }
        }

        /// syslog's priority: failures and locks are notices and warnings, successes information.
        var priority: Int {
            switch self {
            case .verified, .bound, .unbound, .imported, .passwordAccepted: 6
            case .verifyFailed, .passwordRefused: 5
            case .locked: 4
            }
        }

        /// The message's wording, before the user; constant text, as every log line's.
        var summary: StaticString {
            switch self {
            case .verified: "verification succeeded"
            case .verifyFailed: "verification failed"
            case .locked: "locked"
            case .bound: "card bound"
            case .unbound: "card binding removed"
            case .imported: "record imported"
            case .passwordAccepted: "login password accepted before a first PIN"
            case .passwordRefused: "login password refused before a first PIN"
            }
        }
    }

    /// The kind.
    package var kind: Kind
    /// The user whose record it concerns (`TOKENPIN_USER`).
    package var user: String
    /// Who asked: the peer, or for PAM the invoking real uid (`TOKENPIN_INVOKER_UID`).
    package var invokerUID: UInt32?
    /// The attempt's class (`TOKENPIN_CLASS`).
    package var attemptClass: AttemptClass?
    /// The PAM service (`TOKENPIN_SERVICE`).
    package var service: String?
    /// The remote host (`TOKENPIN_RHOST`).
    package var rhost: String?
    /// `pin`, `token`, `both`, `recovery`, `password` (`TOKENPIN_METHOD`).
    package var method: String?
    /// What came of it: `verified`, `rejected`, `locked`, `delayed`, `token-rejected`, `refused`, `ignored`,
    /// `accepted`, `throttled`... (`TOKENPIN_RESULT`).
    package var result: String
    /// Tries left on the counter the attempt spent (`TOKENPIN_REMAINING`).
    package var remaining: Int?
    /// Further fields of later kinds, `TOKENPIN_` names without the prefix (`CARD`, `READER`).
    package var extra: [(name: String, value: String)] = []

    /// Creates an event.
    package init(
        _ kind: Kind, user: String, context: AttemptContext? = nil, method: String? = nil, result: String,
        remaining: Int? = nil
    ) {
        self.kind = kind
        self.user = user
        self.invokerUID = context?.invokerUID
        self.attemptClass = context?.class
        self.service = context?.service
        self.rhost = context?.rhost
        self.method = method
        self.result = result
        self.remaining = remaining
    }

    package static func == (lhs: AuditEvent, rhs: AuditEvent) -> Bool {
        lhs.fields.map { "\($0.name)=\($0.value)" } == rhs.fields.map { "\($0.name)=\($0.value)" }
    }

    /// The message a person reads: `tokenpin: verification failed for alice (other, su, by uid 1001: rejected)`.
    package var message: String {
        var details: [String] = []
        if let attemptClass { details.append(attemptClass.rawValue) }
        if let service { details.append(service) }
        if let invokerUID { details.append("by uid \(invokerUID)") }
        if let rhost, !rhost.isEmpty { details.append("from \(rhost)") }
        if let method { details.append(method) }
        return "tokenpin: \(kind.summary.description) for \(user) (" + details.joined(separator: ", ") + ": \(result))"
    }

    /// The journal fields, in order: `MESSAGE_ID`, `MESSAGE`, `PRIORITY`, `SYSLOG_IDENTIFIER`, then `TOKENPIN_*`.
    package var fields: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = [
            ("MESSAGE_ID", kind.messageID), ("MESSAGE", message), ("PRIORITY", String(kind.priority)),
            ("SYSLOG_IDENTIFIER", "tokenpind"), ("TOKENPIN_EVENT", kind.rawValue), ("TOKENPIN_USER", user),
        ]
        if let invokerUID { out.append(("TOKENPIN_INVOKER_UID", String(invokerUID))) }
        if let attemptClass { out.append(("TOKENPIN_CLASS", attemptClass.rawValue)) }
        if let service { out.append(("TOKENPIN_SERVICE", service)) }
        if let rhost { out.append(("TOKENPIN_RHOST", rhost)) }
        if let method { out.append(("TOKENPIN_METHOD", method)) }
        out.append(("TOKENPIN_RESULT", result))
        if let remaining { out.append(("TOKENPIN_REMAINING", String(remaining))) }
        out += extra.map { (name: "TOKENPIN_" + $0.name, value: $0.value) }
        return out
    }
}

/// The daemon's one journal sink: each audit event as structured fields through the journal's native protocol,
/// or, where no journal listens, as a log line with the same keys on stderr.
package final class AuditTrail: Sendable {
    /// The journal, or nil to write log lines only.
    let journal: JournalSocket?
    let logger: Logger

    /// Writes to the journal at `journalSocket` (nil: log lines only), falling back to `logger`.
    package init(journalSocket: String?, logger: Logger) {
        self.journal = journalSocket.map(JournalSocket.init(path:))
        self.logger = logger.labelled("audit")
    }

    /// Records `event`.
    package func record(_ event: AuditEvent) {
        if let journal, (try? journal.send(event.fields)) != nil { return }
        // `tokenpin_user=alice` and the like, after MESSAGE_ID, MESSAGE, PRIORITY and SYSLOG_IDENTIFIER.
        let keys =
            [("message_id", event.kind.messageID)] + event.fields.dropFirst(4).map { ($0.name.lowercased(), $0.value) }
        if event.kind.priority <= 5 {
            logger.warning(event.kind.summary, keys)
        } else {
            logger.info(event.kind.summary, keys)
        }
    }
}
