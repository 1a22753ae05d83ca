/// tokenpin's one JSON value: the daemon protocol's messages and the CLI's `--json` output.
///
/// Strings stay bytes so that a secret (a PIN in a `secret` message) can be moved into guarded memory and the
/// ordinary copy wiped; no `String` of a secret is ever made. The protocol carries whole numbers only: the parser
/// never produces `decimal`, which only reports (the CLI's `bench` figures) write.
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
    /// A number with a fraction, already written as JSON text (`double(_:)` makes one). Never on the wire.
    case decimal(String)

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
        case .null: out += Array("null".utf8)
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

    /// Creates a member.
    package init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// A strict JSON parser for one protocol line.
///
/// Accepts exactly one value with optional surrounding spaces; rejects trailing bytes, invalid UTF-8, control
/// characters in strings, duplicate keys, fractions and exponents, numbers beyond 64 bits and nesting deeper
/// than `maximumDepth`. Every failure is a `ProtocolError`; no input can make it trap.
package struct JSONParser {
    /// The deepest nesting accepted.
    package static let maximumDepth = 8

    private let bytes: [UInt8]
    private var index = 0

    /// Parses `bytes` as one JSON value.
    package static func parse(_ bytes: [UInt8]) throws(ProtocolError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.parseValue(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else {
            throw ProtocolError(.malformed, "trailing bytes after the JSON value at offset \(parser.index)")
        }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0D, 0x0A].contains(bytes[index]) { index += 1 }
    }

    private func fail(_ what: String) -> ProtocolError {
        index >= bytes.count
            ? ProtocolError(.malformed, "the JSON value ends early (\(what))")
            : ProtocolError(.malformed, "\(what) at offset \(index)")
    }

    private mutating func expect(_ literal: String) throws(ProtocolError) {
        for byte in literal.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw fail("expected `\(literal)`") }
            index += 1
        }
    }

    private mutating func parseValue(depth: Int) throws(ProtocolError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw ProtocolError(.malformed, "JSON nested too deeply") }
        guard index < bytes.count else { throw fail("expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .integer(try parseInteger())
        default: throw fail("unexpected byte")
        }
    }

    private mutating func parseObject(depth: Int) throws(ProtocolError) -> JSONValue {
        index += 1
        var members: [JSONMember] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let keyBytes = try parseString()
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard !members.contains(where: { $0.key == key }) else {
                throw ProtocolError(.malformed, "duplicate key `\(key)`")
            }
            skipSpace()
            try expect(":")
            skipSpace()
            let value = try parseValue(depth: depth + 1)
            members.append(JSONMember(key, value))
            skipSpace()
            guard index < bytes.count else { throw fail("expected `,` or `}`") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw fail("expected `,` or `}`")
        }
    }

    private mutating func parseArray(depth: Int) throws(ProtocolError) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipSpace()
            items.append(try parseValue(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw fail("expected `,` or `]`") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            throw fail("expected `,` or `]`")
        }
    }

    private mutating func parseInteger() throws(ProtocolError) -> Int64 {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let digitsStart = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        guard index > digitsStart else { throw fail("expected digits") }
        guard !(bytes[digitsStart] == UInt8(ascii: "0") && index - digitsStart > 1) else {
            throw fail("leading zero in a number")
        }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            throw fail("numbers in the protocol are whole numbers")
        }
        guard let number = Int64(String(decoding: bytes[start..<index], as: UTF8.self)) else {
            throw ProtocolError(.malformed, "number out of range at offset \(start)")
        }
        return number
    }

    private mutating func hexDigit() throws(ProtocolError) -> UInt32 {
        guard index < bytes.count else { throw fail("expected a hex digit") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default:
            index -= 1
            throw fail("expected a hex digit")
        }
    }

    private mutating func unicodeEscape() throws(ProtocolError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 4 | (try hexDigit()) }
        return value
    }

    private mutating func parseString() throws(ProtocolError) -> [UInt8] {
        index += 1
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count - index)  // no regrowth: no stray copies of a secret
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return out
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try unicodeEscape()
                    if (0xD800...0xDBFF).contains(scalar) {
                        try expect("\\u")
                        let low = try unicodeEscape()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                    out += Array(String(Character(unicode)).utf8)
                default:
                    index -= 1
                    throw fail("invalid escape")
                }
            case 0..<0x20:
                throw fail("control character in a string")
            case 0x80...:
                let length = try utf8SequenceLength()
                out += bytes[index..<index + length]
                index += length
            default:
                out.append(byte)
                index += 1
            }
        }
    }

    /// The length of the valid UTF-8 sequence at `index` (which starts with a byte ≥ 0x80).
    private func utf8SequenceLength() throws(ProtocolError) -> Int {
        let first = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch first {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            upper = 0x9F
        case 0xF0:
            length = 4
            lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            upper = 0x8F
        default: throw fail("invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw fail("invalid UTF-8") }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            let (low, high) = offset == 1 ? (lower, upper) : (UInt8(0x80), UInt8(0xBF))
            guard (low...high).contains(byte) else { throw fail("invalid UTF-8") }
        }
        return length
    }
}
