import FoundationEssentials
package import TokenpinCore
package import TokenpinService

// How the service's values travel: events, prompts, verification reports, status, errors.
// Every message the PAM module reads (prompt, event, the result of verify/change, error) is a flat object.

extension SecretPrompt {
    /// The prompt message for this prompt.
    package var message: ServerMessage {
        switch self {
        case .cardPIN(let card, let tries), .adminPIN(let card, let tries), .resetCode(let card, let tries):
            .prompt(name: name, card: card, triesLeft: WireTries.encode(tries))
        case .puk(let card, let tries):
            .prompt(name: name, card: card, triesLeft: tries)
        case .managementKey(let card):
            .prompt(name: name, card: card, triesLeft: nil)
        default:
            .prompt(name: name, card: nil, triesLeft: nil)
        }
    }

    /// The prompt named by a `prompt` message, or nil when the name is unknown.
    package init?(name: String, card: String?, triesLeft: Int?) {
        switch name {
        case "pin": self = .pin
        case "current-pin": self = .currentPIN
        case "new-pin": self = .newPIN
        case "confirm-pin": self = .confirmPIN
        case "recovery-key": self = .recoveryKey
        case "card-pin": self = .cardPIN(card: card ?? "", triesLeft: WireTries.decode(triesLeft))
        case "new-card-pin": self = .newCardPIN
        case "confirm-card-pin": self = .confirmCardPIN
        case "admin-pin": self = .adminPIN(card: card ?? "", triesLeft: triesLeft ?? 0)
        case "reset-code": self = .resetCode(card: card ?? "", triesLeft: triesLeft ?? 0)
        case "puk": self = .puk(card: card ?? "", triesLeft: triesLeft)
        case "management-key": self = .managementKey(card: card ?? "")
        case "password": self = .loginPassword
        default: return nil
        }
    }
}

/// A card's tries left on the wire. A card that does not tell them (a PKCS#11 token) is `cardTriesUntold` inside
/// tokenpin and *no number* on the wire (the field left out or null), so no client, the PAM module included, ever
/// shows the stand-in as a count.
enum WireTries {
    static func encode(_ tries: Int) -> Int? { tries == cardTriesUntold ? nil : tries }
    static func decode(_ tries: Int?) -> Int { tries ?? cardTriesUntold }
}

/// The ranges of the numbers messages from the daemon carry; a number outside its range is a `bad-field` error
/// that names the field, checked before anything uses the number.
package enum ProtocolRanges {
    /// Tries left of the PIN or a card's PIN (a card counts to 15 at most; the PIN to `retries-max`, 100).
    package static let tries = 0...255
    /// `max` of the PIN's retry counter.
    package static let maximumTries = 1...RetryCounter.maximumTries
    /// Failure counts.
    package static let failures = 0...RetryCounter.maximumFailureCount
    /// Seconds of a failure delay.
    package static let delay = 0...RetryCounter.maximumDelaySeconds
    /// Exit codes (a process's exit status is one byte).
    package static let exitCode = 0...255
}

extension JSONValue {
    /// The whole number at `key` of an object, checked against `range`; nil when the field is absent or null.
    ///
    /// Throws `bad-field`, naming the field, when it is not a whole number in `range`.
    func number(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        guard let field = self[key], field != .null else { return nil }
        guard let number = field.intValue, range.contains(number) else {
            throw ProtocolError(
                .badField, "`\(key)` must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// `number(key, in:)`, or, when `key` is absent, the same field under the name protocol version 1 gave it.
    func number(_ key: String, formerly oldKey: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        self[key] == nil ? try number(oldKey, in: range) : try number(key, in: range)
    }
}

/// Dates travel as whole milliseconds since 1970, from year 0 to year 9999 (a date beyond is sent as the bound).
enum ProtocolDate {
    /// 9999-12-31T23:59:59.999Z in milliseconds since 1970; the earliest date is year 0, as far back.
    static let limit: Int64 = 253_402_300_799_999

    static func encode(_ date: Date?) -> JSONValue {
        guard let date else { return .null }
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard !milliseconds.isNaN else { return .null }
        // Clamped as a Double first, so the conversion cannot trap on a far or infinite date.
        return .integer(Int64(Swift.min(Swift.max(milliseconds, -Double(limit)), Double(limit))))
    }

    /// The date at `key`; nil when absent or null; `bad-field` naming the field when it is not a date in range.
    static func decode(_ value: JSONValue, _ key: String) throws(ProtocolError) -> Date? {
        guard let field = value[key], field != .null else { return nil }
        guard case .integer(let milliseconds) = field, (-limit...limit).contains(milliseconds) else {
            throw ProtocolError(.badField, "`\(key)` must be whole milliseconds since 1970, up to year 9999")
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension RetryCounter {
    /// The counter's fields, flat.
    var protocolFields: [JSONMember] {
        [
            JSONMember("remaining", .int(remaining)), JSONMember("max", .int(max)),
            JSONMember("lastTry", .bool(remaining == 1)), JSONMember("locked", .bool(isLocked)),
            JSONMember("failures", .int(failures)), JSONMember("recoveryFailures", .int(recoveryFailures)),
            JSONMember("lockedAt", ProtocolDate.encode(lockedAt)),
            JSONMember("lastAttemptAt", ProtocolDate.encode(lastAttemptAt)),
        ]
    }

    /// A counter from a message's fields, or nil when it has none (`max` missing).
    ///
    /// Each number is range-checked (`bad-field` naming it), as the record's structural check would.
    init?(protocolFields value: JSONValue) throws(ProtocolError) {
        guard let max = try value.number("max", in: ProtocolRanges.maximumTries) else { return nil }
        guard let remaining = try value.number("remaining", in: 0...max) else { return nil }
        self.init(max: max)
        self.remaining = remaining
        failures = try value.number("failures", in: ProtocolRanges.failures) ?? 0
        recoveryFailures = try value.number("recoveryFailures", in: ProtocolRanges.failures) ?? 0
        lockedAt = try ProtocolDate.decode(value, "lockedAt")
        lastAttemptAt = try ProtocolDate.decode(value, "lastAttemptAt")
    }
}

extension VerifyOutcome {
    /// The outcome's name: a result's `outcome` on the wire, and the CLI's `--json` `outcome` (beside its `event`,
    /// which names the same thing in the event vocabulary: `rejected` is the event `wrongPIN`).
    package var protocolName: String {
        switch self {
        case .verified: "verified"
        case .rejected: "rejected"
        case .locked: "locked"
        case .delayed: "delayed"
        case .tokenRejected: "tokenRejected"
        }
    }
}

extension VerifyReport {
    /// The report's fields, flat: `outcome`, its data, the counter.
    package var protocolFields: [JSONMember] {
        var fields: [JSONMember] = []
        fields.append(JSONMember("outcome", .text(outcome.protocolName)))
        switch outcome {
        case .verified(let method):
            fields.append(JSONMember("method", .text(method.rawValue)))
        case .rejected(let remaining, let lastTry):
            fields += [JSONMember("remaining", .int(remaining)), JSONMember("lastTry", .bool(lastTry))]
        case .locked:
            break
        case .delayed(let seconds):
            fields.append(JSONMember("retryAfter", .int(seconds)))
        case .tokenRejected(let reason):
            fields.append(JSONMember("reason", .text(reason)))
        }
        if let counter {
            fields += counter.protocolFields.filter { field in !fields.contains { $0.key == field.key } }
        }
        if let tokenFailure { fields.append(JSONMember("tokenFailure", .text(tokenFailure))) }
        // A remote or other attempt's counter is theirs, not the PIN's own: the PAM module words a lock so.
        if countedApart { fields.append(JSONMember("counter", .text("others"))) }
        fields.append(JSONMember("kdfNanoseconds", .integer(Int64(clamping: kdfNanoseconds))))
        return fields
    }

    /// A report from a result's fields.
    package init(protocolFields fields: [JSONMember]) throws(ProtocolError) {
        let value = JSONValue.object(fields)
        let outcome: VerifyOutcome
        switch value["outcome"]?.stringValue {
        case "verified":
            guard let method = value["method"]?.stringValue.flatMap(VerificationMethod.init(rawValue:)) else {
                throw ProtocolError(.badField, "`method` is missing or unknown")
            }
            outcome = .verified(method: method)
        case "rejected":
            guard let remaining = try value.number("remaining", formerly: "triesLeft", in: ProtocolRanges.tries) else {
                throw ProtocolError(.missingField, "`remaining` is missing")
            }
            outcome = .rejected(remaining: remaining, lastTry: value["lastTry"]?.boolValue ?? false)
        case "locked": outcome = .locked
        case "delayed":
            guard let seconds = try value.number("retryAfter", in: ProtocolRanges.delay) else {
                throw ProtocolError(.missingField, "`retryAfter` is missing")
            }
            outcome = .delayed(seconds: seconds)
        case "tokenRejected":
            outcome = .tokenRejected(reason: value["reason"]?.stringValue ?? "the token was not verified")
        default:
            throw ProtocolError(.badField, "`outcome` is missing or unknown")
        }
        let nanoseconds = try value.number("kdfNanoseconds", in: 0...Int.max).map { UInt64($0) } ?? 0
        self.init(
            outcome: outcome, tokenFailure: value["tokenFailure"]?.stringValue, kdfNanoseconds: nanoseconds,
            counter: try RetryCounter(protocolFields: value))
        countedApart = value["counter"]?.stringValue == "others"
    }
}

extension OtherAttempts {
    /// A remote or other attempt's fields, flat (the `otherAttempts` event, `status`'s `otherLast`): `class`,
    /// `service`, `invokerUID`, `invoker` (the name, when known), `rhost`, `at` (ms since 1970).
    static func protocolMembers(_ attempt: Attempt, invoker: String?) -> [JSONMember] {
        [
            JSONMember("class", .text(attempt.class.rawValue)),
            JSONMember("service", attempt.service.map(JSONValue.text) ?? .null),
            JSONMember("invokerUID", .int(Int(attempt.invokerUID))),
            JSONMember("invoker", invoker.map(JSONValue.text) ?? .null),
            JSONMember("rhost", attempt.rhost.map(JSONValue.text) ?? .null),
            JSONMember("at", ProtocolDate.encode(attempt.at)),
        ]
    }

    /// The attempt of such fields; `bad-field` for a class that is not remote or other, a uid or a date out of range.
    static func attempt(protocolValue value: JSONValue) throws(ProtocolError) -> Attempt {
        guard let name = value["class"]?.stringValue, let attemptClass = AttemptClass(rawValue: name),
            !attemptClass.isTrusted
        else { throw ProtocolError(.badField, "`class` must be remote or other") }
        guard let uid = try value.number("invokerUID", in: 0...Int(UInt32.max)) else {
            throw ProtocolError(.missingField, "`invokerUID` is missing")
        }
        guard let at = try ProtocolDate.decode(value, "at") else {
            throw ProtocolError(.missingField, "`at` is missing")
        }
        return Attempt(
            class: attemptClass, service: value["service"]?.stringValue, invokerUID: UInt32(uid),
            rhost: value["rhost"]?.stringValue, at: at)
    }
}

extension KDFParameters {
    /// The parameters as an object (salt in base64).
    package var protocolValue: JSONValue {
        .object([
            JSONMember("algorithm", .text(algorithm.rawValue)), JSONMember("memoryKiB", .int(memoryKiB)),
            JSONMember("passes", .int(passes)), JSONMember("salt", .text(Base64.encode([UInt8](salt)))),
        ])
    }

    /// The parameters of an object, or nil when it is malformed or out of the bounds a slot may hold.
    init?(protocolValue value: JSONValue?) {
        guard let value, let algorithm = value["algorithm"]?.stringValue.flatMap(Algorithm.init(rawValue:)),
            let memory = value["memoryKiB"]?.intValue, let passes = value["passes"]?.intValue,
            let salt = value["salt"]?.stringValue.flatMap(Base64.decode)
        else { return nil }
        self.init(algorithm: algorithm, memoryKiB: memory, passes: passes, salt: Data(salt))
        guard problem == nil else { return nil }
    }
}

extension TypeStatus {
    var protocolValue: JSONValue {
        var members = [
            JSONMember("type", .text(type.rawValue)), JSONMember("enabled", .bool(enabled)),
            JSONMember("canDisable", .bool(canDisable)),
        ]
        // The token's `serial` is always there (null while unbound), as `--json` has always shown it.
        if serial != nil || type == .token { members.append(JSONMember("serial", serial.map(JSONValue.text) ?? .null)) }
        return .object(members)
    }

    init?(protocolValue value: JSONValue) {
        guard let type = value["type"]?.stringValue.flatMap(AuthenticationType.init(rawValue:)),
            let enabled = value["enabled"]?.boolValue
        else { return nil }
        self.init(
            type: type, enabled: enabled, canDisable: value["canDisable"]?.boolValue ?? true,
            serial: value["serial"]?.stringValue)
    }

    /// A list of types as an array.
    package static func protocolValue(_ types: [TypeStatus]) -> JSONValue { .array(types.map(\.protocolValue)) }

    /// Types from an array.
    package static func list(protocolValue value: JSONValue?) throws(ProtocolError) -> [TypeStatus] {
        guard case .array(let items)? = value else { throw ProtocolError(.missingField, "`types` is missing") }
        var types: [TypeStatus] = []
        for item in items {
            guard let type = TypeStatus(protocolValue: item) else {
                throw ProtocolError(.badField, "a type is malformed")
            }
            types.append(type)
        }
        return types
    }
}

extension StatusReport {
    /// The status as an object (the `status` field of a `status` result).
    package var protocolValue: JSONValue {
        .object([
            JSONMember("user", .text(user)), JSONMember("record", .text(recordPath)),
            JSONMember("enrolled", .bool(enrolled)), JSONMember("remaining", remaining.map(JSONValue.int) ?? .null),
            JSONMember("max", maximum.map(JSONValue.int) ?? .null), JSONMember("locked", .bool(locked)),
            JSONMember("lockedAt", ProtocolDate.encode(lockedAt)), JSONMember("delay", .int(delaySeconds)),
            JSONMember("failures", .int(failures)), JSONMember("kdf", kdf?.protocolValue ?? .null),
            JSONMember("types", TypeStatus.protocolValue(types)),
            JSONMember("mode", mode.map { .text($0.rawValue) } ?? .null),
            JSONMember("fallback", fallback.map { .text($0.rawValue) } ?? .null),
            JSONMember("modeSource", modeSource.map { .text($0.rawValue) } ?? .null),
            JSONMember("token", token?.protocolValue ?? .null),
            JSONMember("otherFailures", .int(otherFailures)), JSONMember("otherLocked", .bool(otherLocked)),
            JSONMember(
                "otherLast",
                otherLast.map { .object(OtherAttempts.protocolMembers($0, invoker: otherLastInvoker)) } ?? .null),
        ])
    }

    /// A status from its object.
    package init(protocolValue value: JSONValue?) throws(ProtocolError) {
        guard let value, let user = value["user"]?.stringValue, let path = value["record"]?.stringValue,
            let enrolled = value["enrolled"]?.boolValue
        else {
            throw ProtocolError(.badField, "`status` is missing or malformed")
        }
        var token: TokenStatus?
        if let tokenValue = value["token"], tokenValue != .null { token = try TokenStatus(protocolValue: tokenValue) }
        let maximum = try value.number("max", in: ProtocolRanges.maximumTries)
        var kdf: KDFParameters?
        if let kdfValue = value["kdf"], kdfValue != .null {
            guard let parameters = KDFParameters(protocolValue: kdfValue) else {
                throw ProtocolError(.badField, "`kdf` is malformed or out of bounds")
            }
            kdf = parameters
        }
        self.init(
            user: user, recordPath: path, enrolled: enrolled,
            remaining: try value.number("remaining", in: 0...(maximum ?? RetryCounter.maximumTries)),
            maximum: maximum, locked: value["locked"]?.boolValue ?? false,
            lockedAt: try ProtocolDate.decode(value, "lockedAt"),
            delaySeconds: try value.number("delay", in: ProtocolRanges.delay) ?? 0,
            failures: try value.number("failures", in: ProtocolRanges.failures) ?? 0,
            kdf: kdf,
            types: try TypeStatus.list(protocolValue: value["types"]),
            mode: value["mode"]?.stringValue.flatMap(VerificationMode.init(rawValue:)),
            fallback: value["fallback"]?.stringValue.flatMap(FallbackPolicy.init(rawValue:)),
            token: token,
            modeSource: value["modeSource"]?.stringValue.flatMap(ModeInForce.Source.init(rawValue:)))
        otherFailures = try value.number("otherFailures", in: ProtocolRanges.failures) ?? 0
        otherLocked = value["otherLocked"]?.boolValue ?? false
        if let last = value["otherLast"], last != .null {
            otherLast = try OtherAttempts.attempt(protocolValue: last)
            otherLastInvoker = last["invoker"]?.stringValue
        }
    }
}

extension JSONValue {
    /// A number with a fraction, with three decimals; null when it is not finite (JSON has no NaN or infinity).
    package static func double(_ value: Double) -> JSONValue { value.isFinite ? .decimal(fixed(value, 3)) : .null }
}
