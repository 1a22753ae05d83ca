/// Why bytes are not JSON the parser accepts: a human detail (with the offset), never containing a string's bytes.
package struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, with the offset where it is.
    package var detail: String

    /// Creates an error.
    package init(_ detail: String) { self.detail = detail }

    /// The detail.
    package var description: String { detail }
}

/// Which JSON a parse accepts.
package enum JSONGrammar: Sendable {
    /// The daemon protocol's: strict (see `JSONParser`).
    case strict
    /// What Foundation's `JSONDecoder` accepts, for the store's records, which were read with it: duplicate keys kept
    /// (a lookup finds the first, as the decoder does), a comma before a closing bracket or brace, nesting up to 512
    /// arrays and objects, numbers of any JSON form (those that are not plain 64-bit whole numbers as `.decimal`), and
    /// strings and numbers that would not read kept as `.unread` (or, for a key, `isKeyRead` false), since the
    /// decoder refuses them only where something reads them. Strings are not given room for a secret: records hold
    /// none.
    case record
}

/// tokenpin's one JSON parser: a protocol line (`.strict`) or a record (`.record`).
///
/// The strict grammar accepts exactly one value with optional surrounding spaces; it rejects trailing bytes, invalid
/// UTF-8, control characters in strings, duplicate keys, fractions and exponents, numbers beyond 64 bits and
/// nesting deeper than `maximumDepth`. The record grammar is described at `JSONGrammar.record`. Every failure is a
/// `JSONError`; no input can make it trap.
package struct JSONParser {
    /// The deepest nesting the strict grammar accepts.
    package static let maximumDepth = 8
    /// The most arrays and objects the record grammar nests, as Foundation's `JSONDecoder`.
    package static let recordMaximumNesting = 512

    private let bytes: [UInt8]
    private let grammar: JSONGrammar
    private var index = 0

    /// Parses `bytes` as one JSON value of `grammar`.
    package static func parse(_ bytes: [UInt8], grammar: JSONGrammar) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, grammar: grammar)
        parser.skipSpace()
        let value = try parser.parseValue(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else {
            throw JSONError("trailing bytes after the JSON value at offset \(parser.index)")
        }
        return value
    }

    private init(bytes: [UInt8], grammar: JSONGrammar) {
        self.bytes = bytes
        self.grammar = grammar
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0D, 0x0A: index += 1
            default: return
            }
        }
    }

    private func fail(_ what: String) -> JSONError {
        index >= bytes.count
            ? JSONError("the JSON value ends early (\(what))")
            : JSONError("\(what) at offset \(index)")
    }

    private mutating func expect(_ literal: String) throws(JSONError) {
        for byte in literal.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw fail("expected `\(literal)`") }
            index += 1
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard grammar == .record || depth <= Self.maximumDepth else { throw JSONError("JSON nested too deeply") }
        guard index < bytes.count else { throw fail("expected a value") }
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard grammar == .strict || depth < Self.recordMaximumNesting else {
                throw JSONError("JSON nested too deeply")
            }
            return bytes[index] == UInt8(ascii: "{") ? try parseObject(depth: depth) : try parseArray(depth: depth)
        case UInt8(ascii: "\""):
            guard grammar == .record else { return .string(try parseString()) }
            let start = index
            if let text = try? parseString() { return .string(text) }
            index = start
            try skipUnreadString()
            return .unread
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return grammar == .record ? recordNumber() : .integer(try parseInteger())
        default: throw fail("unexpected byte")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
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
            var member = try parseKey()
            guard grammar == .record || !members.contains(where: { $0.key == member.key }) else {
                throw JSONError("duplicate key `\(member.key)`")
            }
            skipSpace()
            try expect(":")
            skipSpace()
            member.value = try parseValue(depth: depth + 1)
            members.append(member)
            skipSpace()
            guard index < bytes.count else { throw fail("expected `,` or `}`") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                if closesAfterComma(UInt8(ascii: "}")) { return .object(members) }
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw fail("expected `,` or `}`")
        }
    }

    /// A key; in the record grammar one that does not read is kept unread, as Foundation's decoder keeps it.
    private mutating func parseKey() throws(JSONError) -> JSONMember {
        guard grammar == .record else { return JSONMember(String(decoding: try parseString(), as: UTF8.self), .null) }
        let start = index
        if let key = try? parseString() { return JSONMember(String(decoding: key, as: UTF8.self), .null) }
        index = start
        try skipUnreadString()
        var member = JSONMember("", .null)
        member.isKeyRead = false
        return member
    }

    /// Record grammar: whether `close` follows the comma just read (and is consumed), as the decoder allows.
    private mutating func closesAfterComma(_ close: UInt8) -> Bool {
        guard grammar == .record else { return false }
        skipSpace()
        guard index < bytes.count, bytes[index] == close else { return false }
        index += 1
        return true
    }

    /// Skips a string the way Foundation's decoder scans one it has not read: to the next quote that no backslash
    /// escapes, with four bytes and no quote after each `\u`.
    private mutating func skipUnreadString() throws(JSONError) {
        index += 1
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                if bytes[index] == UInt8(ascii: "u") {
                    index += 1
                    guard index + 4 <= bytes.count, !bytes[index..<index + 4].contains(UInt8(ascii: "\"")) else {
                        throw fail("invalid escape")
                    }
                    index += 4
                } else {
                    index += 1
                }
            default: index += 1
            }
        }
    }

    /// Record grammar: a number token as Foundation's decoder scans it (digits, `.`, `+`, `-`, `e`, `E`), read only
    /// when something asks for it: a plain whole number that fits 64 bits, any other JSON number as its text, and a
    /// token that is no JSON number unread.
    private mutating func recordNumber() -> JSONValue {
        let start = index
        index += 1
        var plain = true
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): break
            case UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "e"), UInt8(ascii: "E"): plain = false
            default: return recordNumber(bytes[start..<index], plain: plain)
            }
            index += 1
        }
        return recordNumber(bytes[start..<index], plain: plain)
    }

    /// The value of a number token: `plain` when it holds only digits and `-`.
    private func recordNumber(_ token: ArraySlice<UInt8>, plain: Bool) -> JSONValue {
        guard Self.isNumber(token) else { return .unread }
        let text = String(decoding: token, as: UTF8.self)
        if plain, let number = Int64(text) { return .integer(number) }
        return .decimal(text)
    }

    /// Whether `token` is a JSON number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    static func isNumber(_ token: ArraySlice<UInt8>) -> Bool {
        var rest = token[...]
        func digits() -> Int {
            let count = rest.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.count
            rest = rest.dropFirst(count)
            return count
        }
        if rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
        let leadingZero = rest.first == UInt8(ascii: "0")
        let whole = digits()
        guard whole > 0, !(leadingZero && whole > 1) else { return false }
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            guard digits() > 0 else { return false }
        }
        if rest.first == UInt8(ascii: "e") || rest.first == UInt8(ascii: "E") {
            rest = rest.dropFirst()
            if rest.first == UInt8(ascii: "+") || rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return rest.isEmpty
    }

    private mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
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
                if closesAfterComma(UInt8(ascii: "]")) { return .array(items) }
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            throw fail("expected `,` or `]`")
        }
    }

    private mutating func parseInteger() throws(JSONError) -> Int64 {
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
            throw JSONError("number out of range at offset \(start)")
        }
        return number
    }

    private mutating func hexDigit() throws(JSONError) -> UInt32 {
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

    private mutating func unicodeEscape() throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 4 | (try hexDigit()) }
        return value
    }

    private mutating func parseString() throws(JSONError) -> [UInt8] {
        index += 1
        var out: [UInt8] = []
        // No regrowth: no stray copies of a secret (a record holds none).
        if grammar == .strict { out.reserveCapacity(bytes.count - index) }
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
    private func utf8SequenceLength() throws(JSONError) -> Int {
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
