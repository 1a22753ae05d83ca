import FoundationEssentials
package import TokenpinCore
internal import TokenpinService

// How the service's events travel: one flat object each, `event` plus data.

extension Event {
    /// The event's data fields (the name travels as `event`).
    package var protocolFields: [JSONMember] {
        switch self {
        case .created, .changed, .reset, .locked, .cancelled, .unenrolled: []
        case .verified(let method): [JSONMember("method", .text(method.rawValue))]
        case .wrongPIN(let remaining, let lastTry):
            [JSONMember("remaining", .int(remaining)), JSONMember("lastTry", .bool(lastTry))]
        case .delayed(let seconds): [JSONMember("seconds", .int(seconds))]
        case .tokenFailed(let reason, let fallback, let tries):
            [
                JSONMember("reason", .text(reason)), JSONMember("fallback", .bool(fallback)),
                JSONMember("cardTriesLeft", tries.map(JSONValue.int) ?? .null),
            ]
        case .policyViolation(let rule, let reason):
            [JSONMember("rule", .text(rule))] + (reason.map { [JSONMember("reason", .text($0))] } ?? [])
        case .typeChanged(let type, let enabled):
            [JSONMember("authType", .text(type.rawValue)), JSONMember("enabled", .bool(enabled))]
        case .otherAttempts(let notice):
            [JSONMember("failures", .int(notice.failures))]
                + (notice.last.map { OtherAttempts.protocolMembers($0, invoker: notice.invoker) } ?? [])
        case .keypadEntry(let reader, let card, let tries):
            [
                JSONMember("reader", .text(reader)), JSONMember("card", .text(card)),
                JSONMember("cardTriesLeft", WireTries.encode(tries).map(JSONValue.int) ?? .null),
            ]
        case .keypadCredentialEntry(let reader, let card, let credential, let tries):
            [
                JSONMember("reader", .text(reader)), JSONMember("card", .text(card)),
                JSONMember("pin", .text(credential.rawValue)),
                JSONMember("cardTriesLeft", WireTries.encode(tries).map(JSONValue.int) ?? .null),
            ]
        case .keypadNotUsed(let reader, let reason):
            [JSONMember("reader", .text(reader)), JSONMember("reason", .text(reason))]
        }
    }

    /// The event of an `event` message, or nil when it is not a service event (reader and card events).
    package init?(name: String, fields: [JSONMember]) {
        let value = JSONValue.object(fields)
        switch name {
        case "created": self = .created
        case "changed": self = .changed
        case "reset": self = .reset
        case "locked": self = .locked
        case "cancelled": self = .cancelled
        case "unenrolled": self = .unenrolled
        case "verified":
            guard let method = value["method"]?.stringValue.flatMap(VerificationMethod.init(rawValue:)) else {
                return nil
            }
            self = .verified(method: method)
        case "wrongPIN":
            guard let remaining = try? value.number("remaining", in: ProtocolRanges.tries) else { return nil }
            self = .wrongPIN(remaining: remaining, lastTry: value["lastTry"]?.boolValue ?? false)
        case "delayed":
            guard let seconds = try? value.number("seconds", in: ProtocolRanges.delay) else { return nil }
            self = .delayed(seconds: seconds)
        case "tokenFailed":
            self = .tokenFailed(
                reason: value["reason"]?.stringValue ?? "", fallback: value["fallback"]?.boolValue ?? false,
                cardTriesLeft: try? value.number("cardTriesLeft", in: ProtocolRanges.tries))
        case "policyViolation":
            guard let rule = value["rule"]?.stringValue else { return nil }
            self = .policyViolation(rule: rule, reason: value["reason"]?.stringValue)
        case "typeChanged":
            guard let type = value["authType"]?.stringValue.flatMap(AuthenticationType.init(rawValue:)) else {
                return nil
            }
            self = .typeChanged(type: type, enabled: value["enabled"]?.boolValue ?? false)
        case "otherAttempts":
            guard let failures = try? value.number("failures", in: ProtocolRanges.failures) else { return nil }
            self = .otherAttempts(
                OtherAttemptsNotice(
                    failures: failures, last: try? OtherAttempts.attempt(protocolValue: value),
                    invoker: value["invoker"]?.stringValue))
        case "keypadEntry":
            guard let reader = value["reader"]?.stringValue, let card = value["card"]?.stringValue else { return nil }
            // cardTriesLeft null: the card does not tell them; one out of range makes no event.
            let tries: Int?
            do { tries = try value.number("cardTriesLeft", in: ProtocolRanges.tries) } catch { return nil }
            // `pin`: which PIN goes in on the keypad; left out (or `card-pin`) for the card PIN, unknown makes no event.
            switch value["pin"]?.stringValue {
            case nil, "card-pin": self = .keypadEntry(reader: reader, card: card, triesLeft: WireTries.decode(tries))
            case let name?:
                guard let credential = KeypadCredential(rawValue: name) else { return nil }
                self = .keypadCredentialEntry(
                    reader: reader, card: card, credential: credential, triesLeft: WireTries.decode(tries))
            }
        case "keypadNotUsed":
            guard let reader = value["reader"]?.stringValue, let reason = value["reason"]?.stringValue else {
                return nil
            }
            self = .keypadNotUsed(reader: reader, reason: reason)
        default: return nil
        }
    }
}
