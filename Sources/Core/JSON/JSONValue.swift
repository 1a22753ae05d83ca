/// tokenpin's one JSON value: the daemon protocol's messages, the CLI's `--json` output and the store's records.
///
/// Strings stay bytes so that a secret (a PIN in a `secret` message) can be moved into guarded memory and the
/// ordinary copy wiped; no `String` of a secret is ever made. The protocol carries whole numbers only: its grammar
/// never produces `decimal` (which reports, the CLI's `bench` figures, write) nor `unread`; the record grammar does.
package enum JSONValue: Sendable, Equatable {
    /// A string's UTF-8 bytes.
    case string([UInt8])
    /// A whole number.
    case integer(Int64)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null
    /// An array.
    case array([JSONValue])
    /// An object, members in the order they were given.
    case object([JSONMember])
    /// A number with a fraction, already written as JSON text (`double(_:)` makes one). Never on the wire; the
    /// record grammar (`JSONGrammar.record`) gives every number that is not a plain 64-bit whole number this way.
    case decimal(String)
    /// A string or number the record grammar skipped unread (bad escapes, control characters or UTF-8 in a string,
    /// a number that is not JSON): Foundation's `JSONDecoder` accepts those where nothing reads them, and whatever
    /// reads one refuses it. The protocol's grammar never produces it.
    case unread

    /// A string value from text.
    package static func text(_ text: String) -> JSONValue { .string(Array(text.utf8)) }
    /// A string value from text (the same as `text`).
    package static func string(_ text: String) -> JSONValue { .string(Array(text.utf8)) }
    /// An object from key-value pairs, in order.
    package static func object(_ pairs: [(String, JSONValue)]) -> JSONValue {
        .object(pairs.map { JSONMember($0.0, $0.1) })
    }
    /// A whole number, or null.
    package static func optional(_ value: Int?) -> JSONValue { value.map(JSONValue.int) ?? .null }
    /// A string, or null.
    package static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.text) ?? .null }
    /// A whole number from an `Int`.
    package static func int(_ number: Int) -> JSONValue { .integer(Int64(number)) }

    /// The text of a string value.
    package var stringValue: String? {
        if case .string(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// The value of a whole number that fits an `Int`.
    package var intValue: Int? {
        if case .integer(let number) = self { return Int(exactly: number) }
        return nil
    }

    /// The value of a boolean.
    package var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The members of an object.
    package var members: [JSONMember]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value of `key` in an object.
    package subscript(key: String) -> JSONValue? {
        members?.first { $0.key == key }?.value
    }

    /// Compact JSON bytes, on one line (no newline is ever produced inside).
    package var serialized: [UInt8] {
        var out: [UInt8] = []
        serialize(into: &out)
        return out
    }

    /// Compact JSON text, on one line (for output that is no secret).
    package var jsonText: String { String(decoding: serialized, as: UTF8.self) }

    /// `text` as a quoted JSON string.
    package static func quote(_ text: String) -> String {
        var out: [UInt8] = []
        quote(Array(text.utf8), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the compact JSON form to `out`.
    package func serialize(into out: inout [UInt8]) {
        switch self {
        case .string(let bytes): Self.quote(bytes, into: &out)
        case .integer(let number): out += Array(String(number).utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .null, .unread: out += Array("null".utf8)
        case .decimal(let text): out += Array(text.utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.serialize(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.quote(Array(member.key.utf8), into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.serialize(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `bytes` as a quoted JSON string, escaping quotes, backslashes and control characters.
    package static func quote(_ bytes: some Sequence<UInt8>, into out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                // Byte by byte: no temporary array holding a secret's byte is left behind unwiped.
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "u"))
                out.append(UInt8(ascii: "0"))
                out.append(UInt8(ascii: "0"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// One member of a JSON object.
package struct JSONMember: Sendable, Equatable {
    /// The key.
    package var key: String
    /// The value.
    package var value: JSONValue
    /// False when the record grammar could not read the key (it is then empty): an object holding such a key is
    /// refused by whatever reads it, as Foundation's `JSONDecoder` refuses it.
    package var isKeyRead = true

    /// Creates a member.
    package init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}
