import FoundationEssentials

/// Reads a record's JSON exactly as `JSONDecoder` with `RecordDate.decoding` read it into an `EnrolmentRecord` (the
/// same records accepted, to the same values, the same refused), without the decoder and its first-use cost.
///
/// The bytes go through the core's one parser with the record grammar (`JSONGrammar.record`: the decoder's
/// leniencies). Then, as the synthesized `Codable` conformances decode: unknown keys are ignored; of duplicate keys the
/// first counts; an optional that is missing or null is nil, any other value must read as its type; a required
/// field must be there and not null; every key of an object that is read must read. Whole numbers follow the
/// decoder's rules (`wholeNumber`), enumerations their raw values, byte fields `Data(base64Encoded:)`, dates
/// `RecordDate.date(from:)`. A UTF-8 byte order mark is skipped, as the decoder skips it; `RecordJSONTests` checks
/// the two against each other.
enum RecordJSONReader {
    /// Any refusal: the decoder's `DecodingError`, whatever its kind.
    struct Refusal: Error {}

    /// The JSON value of a record's bytes, or nil when the decoder would find no JSON there.
    static func parse(_ data: Data) -> JSONValue? {
        var bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        return try? JSONParser.parse(bytes, grammar: .record)
    }

    /// The record `value` holds, or nil when the decoder would refuse it.
    static func record(_ value: JSONValue) -> EnrolmentRecord? { try? Fields(value).record() }

    /// The `version` of `value`, or nil when it has none the decoder would read (the store's "header").
    static func version(_ value: JSONValue) -> Int? { try? Fields(value).integer("version") }
}

/// The members of one object that is read; every lookup is one of the synthesized decoder's.
private struct Fields {
    typealias Refusal = RecordJSONReader.Refusal
    let members: [JSONMember]

    init(_ value: JSONValue?) throws(Refusal) {
        guard case .object(let members) = value, members.allSatisfy({ $0.isKeyRead }) else { throw Refusal() }
        self.members = members
    }

    /// The value of `key` (the first, when there are several), nil when missing or null (`decodeIfPresent`).
    func present(_ key: String) -> JSONValue? {
        guard let value = members.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    /// The value of `key`, which must be there and not null (`decode`).
    func required(_ key: String) throws(Refusal) -> JSONValue {
        guard let value = present(key) else { throw Refusal() }
        return value
    }

    func integer(_ key: String) throws(Refusal) -> Int {
        Int(try Self.wholeNumber(required(key), in: Int64.min...Int64.max))
    }

    func string(_ key: String) throws(Refusal) -> String { try Self.string(required(key)) }

    func optionalString(_ key: String) throws(Refusal) -> String? { try present(key).map(Self.string) }

    func data(_ key: String) throws(Refusal) -> Data { try Self.data(required(key)) }

    func optionalData(_ key: String) throws(Refusal) -> Data? { try present(key).map(Self.data) }

    func date(_ key: String) throws(Refusal) -> Date { try Self.date(required(key)) }

    func optionalDate(_ key: String) throws(Refusal) -> Date? { try present(key).map(Self.date) }

    func fields(_ key: String) throws(Refusal) -> Fields { try Fields(required(key)) }

    func optionalFields(_ key: String) throws(Refusal) -> Fields? { try present(key).map(Fields.init) }

    static func string(_ value: JSONValue) throws(Refusal) -> String {
        guard case .string(let bytes) = value else { throw Refusal() }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func data(_ value: JSONValue) throws(Refusal) -> Data {
        guard let data = Data(base64Encoded: try string(value)) else { throw Refusal() }
        return data
    }

    static func date(_ value: JSONValue) throws(Refusal) -> Date {
        guard let date = RecordDate.date(from: try string(value)) else { throw Refusal() }
        return date
    }

    /// A whole number in `range` as the decoder reads one: a plain one exactly; any other JSON number through its
    /// `Double` (which must be a whole number in range), and beyond 2^53 through its decimal digits, the fraction
    /// cut off (`RecordJSONNumber`).
    static func wholeNumber(_ value: JSONValue, in range: ClosedRange<Int64>) throws(Refusal) -> Int64 {
        switch value {
        case .integer(let number) where range.contains(number): return number
        case .decimal(let text):
            guard let number = RecordJSONNumber.whole(text), range.contains(number) else { throw Refusal() }
            return number
        default: throw Refusal()
        }
    }
}

extension Fields {
    func record() throws(Refusal) -> EnrolmentRecord {
        var record = EnrolmentRecord(
            user: try string("user"), created: try date("created"), policy: try policy(fields("policy")),
            counter: try counter(fields("counter")), slots: [])
        record.version = try integer("version")
        record.updated = try date("updated")
        record.otherAttempts = try optionalFields("otherAttempts").map(Self.otherAttempts)
        guard case .array(let slots) = try required("slots") else { throw Refusal() }
        for slot in slots { record.slots.append(try Self.slot(Fields(slot))) }
        return record
    }

    private func policy(_ fields: Fields) throws(Refusal) -> EnrolmentRecord.Policy {
        guard let fallback = FallbackPolicy(rawValue: try fields.string("fallback")),
            let mode = VerificationMode(rawValue: try fields.string("mode"))
        else { throw Refusal() }
        return EnrolmentRecord.Policy(mode: mode, fallback: fallback)
    }

    private func counter(_ fields: Fields) throws(Refusal) -> RetryCounter {
        var counter = RetryCounter(max: try fields.integer("max"))
        counter.failures = try fields.integer("failures")
        counter.lastAttemptAt = try fields.optionalDate("lastAttemptAt")
        counter.lockedAt = try fields.optionalDate("lockedAt")
        counter.recoveryFailures = try fields.integer("recoveryFailures")
        counter.remaining = try fields.integer("remaining")
        return counter
    }

    private static func otherAttempts(_ fields: Fields) throws(Refusal) -> OtherAttempts {
        var attempts = OtherAttempts()
        attempts.failures = try fields.integer("failures")
        attempts.lockedAt = try fields.optionalDate("lockedAt")
        if let last = try fields.optionalFields("last") {
            guard let attemptClass = AttemptClass(rawValue: try last.string("class")) else { throw Refusal() }
            let uid = try wholeNumber(last.required("invokerUID"), in: 0...Int64(UInt32.max))
            attempts.last = OtherAttempts.Attempt(
                class: attemptClass, service: try last.optionalString("service"), invokerUID: UInt32(uid),
                rhost: try last.optionalString("rhost"), at: try last.date("at"))
        }
        return attempts
    }

    private static func slot(_ fields: Fields) throws(Refusal) -> VaultSlot {
        guard let kind = SlotKind(rawValue: try fields.string("kind")) else { throw Refusal() }
        let kdf = try fields.fields("kdf")
        guard let algorithm = KDFParameters.Algorithm(rawValue: try kdf.string("algorithm")) else { throw Refusal() }
        let parameters = KDFParameters(
            algorithm: algorithm, memoryKiB: try kdf.integer("memoryKiB"), passes: try kdf.integer("passes"),
            salt: try kdf.data("salt"))
        return VaultSlot(
            kind: kind, kdf: parameters, token: try fields.optionalFields("token").map(token),
            nonce: try fields.data("nonce"), wrappedKey: try fields.data("wrappedKey"),
            created: try fields.date("created"))
    }

    private static func token(_ fields: Fields) throws(Refusal) -> TokenBinding {
        var token = TokenBinding(
            serial: try fields.string("serial"), cardPublicKey: try fields.data("cardPublicKey"),
            ephemeralPublicKey: try fields.data("ephemeralPublicKey"), reader: try fields.optionalString("reader"),
            algorithm: try fields.optionalString("algorithm"),
            cardPublicExponent: try fields.optionalData("cardPublicExponent"),
            application: try fields.optionalString("application"), slot: try fields.optionalString("slot"))
        if let key = try fields.optionalFields("cardAuthentication") {
            token.cardAuthentication = CardAuthenticationKey(
                algorithm: try key.string("algorithm"), publicKey: try key.data("publicKey"),
                exponent: try key.optionalData("exponent"))
        }
        token.uri = try fields.optionalString("uri")
        token.rsaPadding = try fields.optionalString("rsaPadding")
        return token
    }
}
