import FoundationEssentials
internal import TokenpinCore
package import TokenpinService

// How readers, their keypads and the token's state travel.

extension ReaderInfo {
    /// The reader as an object.
    package var protocolValue: JSONValue { .object(protocolMembers) }

    /// The reader's members, for the wire and for `--json` (which adds `matches`).
    package var protocolMembers: [JSONMember] {
        [
            JSONMember("name", .text(name)), JSONMember("cardPresent", .bool(cardPresent)),
            JSONMember("serial", serial.map(JSONValue.text) ?? .null), JSONMember("openpgp", .bool(isOpenPGP)),
            JSONMember("application", application.map(JSONValue.text) ?? .null), JSONMember("usable", .bool(usable)),
            JSONMember("unusableReason", unusableReason.map(JSONValue.text) ?? .null),
            JSONMember("cardTriesLeft", cardPINTriesLeft.map(JSONValue.int) ?? .null),
            JSONMember("key", key.map(JSONValue.text) ?? .null),
            JSONMember("pinpad", pinpad?.protocolValue ?? .null),
        ]
    }

    /// A reader from its object.
    package init(protocolValue value: JSONValue) throws(ProtocolError) {
        guard let name = value["name"]?.stringValue, let present = value["cardPresent"]?.boolValue else {
            throw ProtocolError(.badField, "a reader is malformed")
        }
        self.init(
            name: name, cardPresent: present, serial: value["serial"]?.stringValue,
            isOpenPGP: value["openpgp"]?.boolValue ?? false,
            application: value["application"]?.stringValue.flatMap(TokenApplicationKind.init(rawValue:))?.rawValue,
            usable: value["usable"]?.boolValue ?? false,
            unusableReason: value["unusableReason"]?.stringValue,
            cardPINTriesLeft: try value.number("cardTriesLeft", formerly: "cardPINTriesLeft", in: ProtocolRanges.tries),
            key: value["key"]?.stringValue)
        if let pinpad = value["pinpad"], pinpad != .null { self.pinpad = try ReaderPinpad(protocolValue: pinpad) }
    }

    /// A list of readers from an array.
    package static func list(protocolValue value: JSONValue?) throws(ProtocolError) -> [ReaderInfo] {
        guard case .array(let items) = value else { throw ProtocolError(.badField, "`readers` must be an array") }
        var readers: [ReaderInfo] = []
        for item in items { readers.append(try ReaderInfo(protocolValue: item)) }
        return readers
    }
}

extension TokenStatus {
    /// The token side of a status as an object.
    package var protocolValue: JSONValue { .object(protocolMembers) }

    /// The token side's members, for the wire and for `--json` (which adds `serial` and `present`).
    package var protocolMembers: [JSONMember] {
        [
            JSONMember("readers", .array(readers.map(\.protocolValue))),
            JSONMember("problem", problem.map(JSONValue.text) ?? .null),
            JSONMember("reader", matchingReader.map(JSONValue.text) ?? .null),
            JSONMember("cardTriesLeft", cardPINTriesLeft.map(JSONValue.int) ?? .null),
            JSONMember("application", application.map(JSONValue.text) ?? .null),
            JSONMember("slot", slot.map(JSONValue.text) ?? .null),
            JSONMember("algorithm", algorithm.map(JSONValue.text) ?? .null),
            JSONMember("revoked", revoked.map(JSONValue.text) ?? .null),
        ]
    }

    /// The token side of a status from its object.
    package init(protocolValue value: JSONValue) throws(ProtocolError) {
        self.init(
            readers: try ReaderInfo.list(protocolValue: value["readers"]), problem: value["problem"]?.stringValue,
            matchingReader: value["reader"]?.stringValue,
            cardPINTriesLeft: try value.number("cardTriesLeft", formerly: "cardPINTriesLeft", in: ProtocolRanges.tries),
            application: value["application"]?.stringValue.flatMap(TokenApplicationKind.init(rawValue:))?.rawValue,
            slot: value["slot"]?.stringValue, algorithm: value["algorithm"]?.stringValue)
        revoked = value["revoked"]?.stringValue
    }
}

extension ReaderPinpad {
    /// The keypad as an object: `verify`, `modify`, `minDigits`, `maxDigits`, `ignored`.
    package var protocolValue: JSONValue {
        .object([
            JSONMember("verify", .bool(verify)), JSONMember("modify", .bool(modify)),
            JSONMember("minDigits", .int(minDigits)), JSONMember("maxDigits", .int(maxDigits)),
            JSONMember("ignored", ignored.map(JSONValue.text) ?? .null),
        ])
    }

    /// A keypad from its object; digits outside 1-64 are a `bad-field` error.
    package init(protocolValue value: JSONValue) throws(ProtocolError) {
        guard let verify = value["verify"]?.boolValue, let modify = value["modify"]?.boolValue,
            let low = try value.number("minDigits", in: 1...64), let high = try value.number("maxDigits", in: 1...64)
        else { throw ProtocolError(.badField, "a reader's pinpad is malformed") }
        self.init(
            verify: verify, modify: modify, minDigits: low, maxDigits: high, ignored: value["ignored"]?.stringValue)
    }
}
