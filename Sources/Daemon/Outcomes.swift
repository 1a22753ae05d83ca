import TokenpinCore
import TokenpinProtocol
import TokenpinService

// What a counted attempt leaves behind: the audit trail, the events `watch` subscribers see, the log line.
extension Daemon {
    /// Records the outcome of a counted attempt in the audit trail: a success, a failure, and a lock it caused.
    func auditOutcome(_ report: VerifyReport, user: String, context: AttemptContext) {
        let remaining = report.counter?.remaining
        switch report.outcome {
        case .verified(let method):
            audit.record(
                AuditEvent(.verified, user: user, context: context, method: method.rawValue, result: "verified"))
        case .rejected:
            audit.record(
                AuditEvent(.verifyFailed, user: user, context: context, result: "rejected", remaining: remaining))
        case .locked:
            // Locked by this very attempt (it ran the key derivation), or already locked before anything was asked.
            let now = report.kdfNanoseconds > 0
            audit.record(
                AuditEvent(now ? .locked : .verifyFailed, user: user, context: context, result: "locked", remaining: 0))
        case .delayed:
            audit.record(
                AuditEvent(.verifyFailed, user: user, context: context, result: "delayed", remaining: remaining))
        case .tokenRejected:
            audit.record(
                AuditEvent(
                    .verifyFailed, user: user, context: context, method: "token", result: "token-rejected",
                    remaining: remaining))
        }
    }

    /// Publishes the outcome of a counted attempt to `watch` subscribers.
    func publishOutcome(_ report: VerifyReport, user: String, success: Event?) {
        let event: Event
        if case .verified = report.outcome, let success { event = success } else { event = report.outcome.event }
        var fields = event.protocolFields
        if case .rejected = report.outcome, let counter = report.counter {
            fields = [
                JSONMember("remaining", .int(counter.remaining)), JSONMember("lastTry", .bool(counter.remaining == 1)),
            ]
        }
        // A remote or other attempt spends its own counter; watchers are told which.
        if report.countedApart { fields.append(JSONMember("counter", .text("others"))) }
        hub.publish(user: user, name: event.name, fields: fields)
        if case .verified(let method) = report.outcome, method == .token || method == .both, let card = report.card {
            cardRemoval.tokenVerified(user: user, serial: card.serial, reader: card.reader, watch: card.removalWatch)
        }
        if case .verified(let method) = report.outcome {
            switch success {
            case .changed?: logger.info("PIN changed", [("user", user)])
            case .reset?: logger.warning("PIN reset with the recovery key; the lock is cleared", [("user", user)])
            case .typeChanged(_, let enabled)?:
                logger.info(
                    enabled ? "token switched on" : "token switched off", [("user", user), ("method", method.rawValue)])
            default: break
            }
        }
        if let counter = report.counter, counter.isLocked, report.outcome != .locked {
            hub.publish(user: user, name: "locked", fields: [])
        }
    }
}
