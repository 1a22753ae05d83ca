internal import TokenpinCore
internal import TokenpinService

/// Typed access to a message's fields, checking the version.
struct MessageFields {
    let members: [JSONMember]

    init(_ members: [JSONMember]) throws(ProtocolError) {
        self.members = members
        guard let version = members.first(where: { $0.key == "v" })?.value else {
            throw ProtocolError(.missingField, "`v` is missing")
        }
        guard let number = version.intValue, ProtocolLimits.acceptedVersions.contains(number) else {
            throw ProtocolError(
                .unsupportedVersion,
                "this build speaks protocol versions "
                    + "\(ProtocolLimits.acceptedVersions.lowerBound)–\(ProtocolLimits.version)")
        }
    }

    subscript(key: String) -> JSONValue? { members.first { $0.key == key }?.value }

    func allow(_ keys: Set<String>) throws(ProtocolError) {
        if let extra = members.first(where: { !keys.contains($0.key) }) {
            throw ProtocolError(.unknownField, "unknown field `\(extra.key)`")
        }
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = self[key] else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let text = value.stringValue else { throw ProtocolError(.badField, "`\(key)` must be a string") }
        return text
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        guard let value = self[key], value != .null else { return nil }
        guard let text = value.stringValue else { throw ProtocolError(.badField, "`\(key)` must be a string") }
        return text
    }

    /// The whole number at `key`, checked against `range` before anyone uses it.
    func int(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int {
        guard self[key] != nil else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let number = try optionalInt(key, in: range) else {
            throw ProtocolError(.badField, "`\(key)` must be a whole number")
        }
        return number
    }

    /// The whole number at `key` in `range`, or nil when absent or null; `bad-field` naming the key otherwise.
    func optionalInt(_ key: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        try JSONValue.object(members).number(key, in: range)
    }

    /// `optionalInt(key, in:)`, falling back to the name protocol version 1 gave the field.
    func optionalInt(_ key: String, formerly oldKey: String, in range: ClosedRange<Int>) throws(ProtocolError) -> Int? {
        try JSONValue.object(members).number(key, formerly: oldKey, in: range)
    }

    func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let value = self[key] else { return nil }
        guard let flag = value.boolValue else { throw ProtocolError(.badField, "`\(key)` must be true or false") }
        return flag
    }

    func bool(_ key: String) throws(ProtocolError) -> Bool {
        guard let value = self[key] else { throw ProtocolError(.missingField, "`\(key)` is missing") }
        guard let flag = value.boolValue else { throw ProtocolError(.badField, "`\(key)` must be true or false") }
        return flag
    }
}

/// Base64 (RFC 4648, with padding), strict on decode.
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Encodes bytes.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value =
                (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8)
                | UInt32(chunk.count > 2 ? chunk[2] : 0)
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(chunk.count > 1 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            out.append(chunk.count > 2 ? alphabet[Int(value & 63)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes text, or nil when it is not canonical padded base64.
    package static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < input.count {
            var value: UInt32 = 0
            var padding = 0
            for offset in 0..<4 {
                let byte = input[index + offset]
                if byte == UInt8(ascii: "=") {
                    guard index + 4 == input.count, offset >= 2 else { return nil }
                    padding += 1
                    value <<= 6
                    continue
                }
                guard padding == 0, let digit = alphabet.firstIndex(of: byte) else { return nil }
                value = value << 6 | UInt32(digit)
            }
            out.append(UInt8(value >> 16 & 0xFF))
            if padding < 2 { out.append(UInt8(value >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(value & 0xFF)) }
            index += 4
        }
        return out
    }
}
