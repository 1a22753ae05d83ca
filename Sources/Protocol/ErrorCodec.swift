import FoundationEssentials
internal import TokenpinCore
package import TokenpinService

// How errors travel: a service error or a broken request as an `error` message, and back.

extension ServiceError {
    /// The error message for this error: code, message, exit code and the data to rebuild it.
    package var protocolMessage: ServerMessage {
        var fields: [JSONMember] = []
        switch self {
        case .notEnrolled(let user, let path), .alreadyEnrolled(let user, let path):
            fields = [JSONMember("user", .text(user)), JSONMember("path", .text(path))]
        case .policyViolation(let rule): fields = [JSONMember("rule", .text(rule.rawValue))]
        case .siteCheckRefused(let reason):
            fields = [JSONMember("rule", .text(PolicyRule.siteCheck.rawValue)), JSONMember("reason", .text(reason))]
        case .store(let error):
            fields = [JSONMember("path", .text(error.path)), JSONMember("detail", .text(error.detail))]
        case .crypto(let error):
            fields = [JSONMember("cryptoCode", .text(error.code.rawValue)), JSONMember("detail", .text(error.detail))]
        case .malformedRecoveryKey(let detail), .tokenUnavailable(let detail), .serviceUnavailable(let detail),
            .input(let detail), .configuration(let detail), .cardRefused(let detail), .permissionDenied(let detail),
            .usage(let detail), .busy(let detail), .passwordRejected(let detail), .notAPIN(let detail),
            .cardPINRefused(let detail), .cardHeldElsewhere(let detail), .ignored(let detail):
            fields = [JSONMember("detail", .text(detail))]
        case .passwordDelayed(let seconds): fields = [JSONMember("retryAfter", .int(seconds))]
        case .tokenAlreadyEnabled(let serial): fields = [JSONMember("serial", .text(serial))]
        case .cancelled, .pinAlwaysEnabled, .tokenNotEnabled: fields = []
        }
        return .error(code: code, message: message, exitCode: Int(ExitCode(self).rawValue), fields: fields)
    }

    /// Rebuilds the error an `error` message describes; protocol-level codes become `serviceUnavailable`.
    package init(protocolCode code: String, message: String, fields: [JSONMember]) {
        let value = JSONValue.object(fields)
        let detail = value["detail"]?.stringValue ?? message
        let user = value["user"]?.stringValue ?? ""
        let path = value["path"]?.stringValue ?? ""
        switch code {
        case "not-enrolled": self = .notEnrolled(user: user, path: path)
        case "already-enrolled": self = .alreadyEnrolled(user: user, path: path)
        case "policy":
            if value["rule"]?.stringValue == PolicyRule.siteCheck.rawValue {
                self = .siteCheckRefused(reason: value["reason"]?.stringValue ?? message)
            } else if let rule = value["rule"]?.stringValue.flatMap(PolicyRule.init(rawValue:)) {
                self = .policyViolation(rule)
            } else {
                self = .input(message)
            }
        case "cancelled": self = .cancelled
        case "crypto":
            let cryptoCode =
                value["cryptoCode"]?.stringValue.flatMap(CryptoError.Code.init(rawValue:)) ?? .operationFailed
            self = .crypto(CryptoError(cryptoCode, detail))
        case "pin-always-enabled": self = .pinAlwaysEnabled
        case "malformed-recovery-key": self = .malformedRecoveryKey(detail)
        case "token-unavailable": self = .tokenUnavailable(detail)
        case "token-not-enabled": self = .tokenNotEnabled
        case "token-already-enabled": self = .tokenAlreadyEnabled(serial: value["serial"]?.stringValue ?? "")
        case "service-unavailable": self = .serviceUnavailable(detail)
        case "input": self = .input(detail)
        case "configuration": self = .configuration(detail)
        case "card-refused": self = .cardRefused(detail)
        case "permission-denied": self = .permissionDenied(detail)
        case "usage": self = .usage(detail)
        case "busy": self = .busy(detail)
        case "password-rejected": self = .passwordRejected(detail)
        case "not-a-pin": self = .notAPIN(detail)
        case "card-pin-policy": self = .cardPINRefused(detail)
        case "delayed":
            self = .passwordDelayed(seconds: (try? value.number("retryAfter", in: ProtocolRanges.delay)) ?? 0)
        case "ignored": self = .ignored(detail)
        default:
            if code.hasPrefix("store-"), let storeCode = StoreError.Code(rawValue: String(code.dropFirst(6))) {
                self = .store(StoreError(storeCode, path: path, detail))
            } else {
                self = .serviceUnavailable("tokenpind: \(message) (\(code))")
            }
        }
    }
}

extension ProtocolError {
    /// The `error` message for a broken request: code `protocol-<code>`, exit code 2 (usage) or 69 (busy).
    package var message: ServerMessage {
        let exit: ExitCode = (code == .busy || code == .rateLimited || code == .timeout) ? .serviceUnavailable : .usage
        return .error(code: "protocol-" + code.rawValue, message: detail, exitCode: Int(exit.rawValue), fields: [])
    }
}
