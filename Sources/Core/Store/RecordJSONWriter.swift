import FoundationEssentials

/// Writes a record's JSON byte for byte as `JSONEncoder` with `[.prettyPrinted, .sortedKeys]` and
/// `RecordDate.encoding` wrote it, without the encoder: its first use costs a process more than the rest of a
/// verification's Swift code (the runtime looks up the generic Codable containers' types and conformances).
///
/// Members are written in the encoder's sorted order (byte order of the keys), absent optionals are left out, byte
/// fields are base64 and dates `RecordDate.string(from:)`; two spaces of indent and `" : "` between key and value.
/// `RecordJSONTests` compares the output with the encoder's.
struct RecordJSONWriter {
    private(set) var bytes: [UInt8] = []
    private var depth = 0
    private var isFirst = true

    /// The record's JSON.
    static func encode(_ record: EnrolmentRecord) -> [UInt8] {
        var writer = RecordJSONWriter()
        writer.bytes.reserveCapacity(4096)
        writer.write(record)
        return writer.bytes
    }

    private mutating func write(_ record: EnrolmentRecord) {
        open(UInt8(ascii: "{"))
        key("counter")
        write(record.counter)
        key("created")
        date(record.created)
        if let otherAttempts = record.otherAttempts {
            key("otherAttempts")
            write(otherAttempts)
        }
        key("policy")
        open(UInt8(ascii: "{"))
        key("fallback")
        string(record.policy.fallback.rawValue)
        key("mode")
        string(record.policy.mode.rawValue)
        close(UInt8(ascii: "}"))
        key("slots")
        open(UInt8(ascii: "["))
        for slot in record.slots {
            element()
            write(slot)
        }
        close(UInt8(ascii: "]"))
        key("updated")
        date(record.updated)
        key("user")
        string(record.user)
        key("version")
        integer(record.version)
        close(UInt8(ascii: "}"))
    }

    private mutating func write(_ counter: RetryCounter) {
        open(UInt8(ascii: "{"))
        key("failures")
        integer(counter.failures)
        optional("lastAttemptAt", counter.lastAttemptAt) { $0.date($1) }
        optional("lockedAt", counter.lockedAt) { $0.date($1) }
        key("max")
        integer(counter.max)
        key("recoveryFailures")
        integer(counter.recoveryFailures)
        key("remaining")
        integer(counter.remaining)
        close(UInt8(ascii: "}"))
    }

    private mutating func write(_ attempts: OtherAttempts) {
        open(UInt8(ascii: "{"))
        key("failures")
        integer(attempts.failures)
        if let last = attempts.last {
            key("last")
            open(UInt8(ascii: "{"))
            key("at")
            date(last.at)
            key("class")
            string(last.class.rawValue)
            key("invokerUID")
            integer(Int(last.invokerUID))
            optional("rhost", last.rhost) { $0.string($1) }
            optional("service", last.service) { $0.string($1) }
            close(UInt8(ascii: "}"))
        }
        optional("lockedAt", attempts.lockedAt) { $0.date($1) }
        close(UInt8(ascii: "}"))
    }

    private mutating func write(_ slot: VaultSlot) {
        open(UInt8(ascii: "{"))
        key("created")
        date(slot.created)
        key("kdf")
        open(UInt8(ascii: "{"))
        key("algorithm")
        string(slot.kdf.algorithm.rawValue)
        key("memoryKiB")
        integer(slot.kdf.memoryKiB)
        key("passes")
        integer(slot.kdf.passes)
        key("salt")
        data(slot.kdf.salt)
        close(UInt8(ascii: "}"))
        key("kind")
        string(slot.kind.rawValue)
        key("nonce")
        data(slot.nonce)
        if let token = slot.token {
            key("token")
            write(token)
        }
        key("wrappedKey")
        data(slot.wrappedKey)
        close(UInt8(ascii: "}"))
    }

    private mutating func write(_ token: TokenBinding) {
        open(UInt8(ascii: "{"))
        optional("algorithm", token.algorithm) { $0.string($1) }
        optional("application", token.application) { $0.string($1) }
        if let authentication = token.cardAuthentication {
            key("cardAuthentication")
            open(UInt8(ascii: "{"))
            key("algorithm")
            string(authentication.algorithm)
            optional("exponent", authentication.exponent) { $0.data($1) }
            key("publicKey")
            data(authentication.publicKey)
            close(UInt8(ascii: "}"))
        }
        optional("cardPublicExponent", token.cardPublicExponent) { $0.data($1) }
        key("cardPublicKey")
        data(token.cardPublicKey)
        key("ephemeralPublicKey")
        data(token.ephemeralPublicKey)
        optional("reader", token.reader) { $0.string($1) }
        optional("rsaPadding", token.rsaPadding) { $0.string($1) }
        key("serial")
        string(token.serial)
        optional("slot", token.slot) { $0.string($1) }
        optional("uri", token.uri) { $0.string($1) }
        close(UInt8(ascii: "}"))
    }

    // MARK: The encoder's layout

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        depth += 1
        isFirst = true
    }

    /// Closes a container: an empty one as the encoder writes it, a blank line between the brackets.
    private mutating func close(_ bracket: UInt8) {
        depth -= 1
        bytes.append(0x0A)
        if isFirst { bytes.append(0x0A) }
        indent()
        bytes.append(bracket)
        isFirst = false
    }

    /// Starts the next array element.
    private mutating func element() {
        if !isFirst { bytes.append(UInt8(ascii: ",")) }
        isFirst = false
        bytes.append(0x0A)
        indent()
    }

    /// Starts the next object member.
    private mutating func key(_ name: String) {
        element()
        string(name)
        bytes.append(0x20)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(0x20)
    }

    /// A member the encoder leaves out when `value` is nil.
    private mutating func optional<Value>(_ name: String, _ value: Value?, _ write: (inout Self, Value) -> Void) {
        guard let value else { return }
        key(name)
        write(&self, value)
    }

    private mutating func indent() {
        for _ in 0..<depth * 2 { bytes.append(0x20) }
    }

    private mutating func integer(_ number: Int) { bytes.append(contentsOf: String(number).utf8) }

    private mutating func date(_ date: Date) { string(RecordDate.string(from: date)) }

    private mutating func data(_ data: Data) { string(data.base64EncodedString()) }

    /// `text` quoted as the encoder quotes it: `"`, `\` and `/` escaped, `\b \t \n \f \r`, other control characters
    /// as `\u00xx` (lower-case hex), everything else (DEL, non-ASCII) as it is.
    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape(byte)
            case 0x08: escape(UInt8(ascii: "b"))
            case 0x09: escape(UInt8(ascii: "t"))
            case 0x0A: escape(UInt8(ascii: "n"))
            case 0x0C: escape(UInt8(ascii: "f"))
            case 0x0D: escape(UInt8(ascii: "r"))
            case 0..<0x20:
                escape(UInt8(ascii: "u"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(UInt8(ascii: "0"))
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0xF))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A backslash, then `byte`.
    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(byte)
    }

    /// The lower-case hex digit of a value below 16.
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}
