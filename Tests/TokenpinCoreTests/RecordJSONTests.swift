import Foundation
import Testing

@testable import TokenpinCore

/// The store's own record reader and writer against the `Codable` path they replaced (`CodableRecordReference`): the
/// same bytes written, and over the corpus, every mutation of it and hand-picked oddities, the same records read and
/// the same refusals, to the message.
@Suite struct RecordJSONTests {
    typealias Outcome = Result<EnrolmentRecord, StoreError>

    static func outcome(_ data: Data, reference: Bool, user: String? = nil) -> Outcome {
        Result { () throws(StoreError) in
            reference
                ? try CodableRecordReference.decode(data, path: "/r", user: user)
                : try RecordStore.decode(data, path: "/r", user: user)
        }
    }

    /// The inputs on which the two readers disagree (at most `limit` of them, shown as text).
    static func disagreements(_ inputs: [Data], user: String? = nil, limit: Int = 5) -> [String] {
        var found: [String] = []
        for data in inputs
        where outcome(data, reference: true, user: user) != outcome(data, reference: false, user: user) {
            let new = outcome(data, reference: false, user: user)
            let old = outcome(data, reference: true, user: user)
            found.append("\(String(decoding: data, as: UTF8.self)) → old \(old), new \(new)")
            if found.count == limit { break }
        }
        return found
    }

    static func encoded(_ record: EnrolmentRecord) throws -> Data { try RecordStore.encode(record) }

    @Test func writesWhatTheEncoderWrote() throws {
        let records = RecordJSONCorpus.records + RecordJSONCorpus.unusual
        #expect(records.count > 30)
        for record in records {
            let old = try CodableRecordReference.encode(record)
            let new = try Self.encoded(record)
            #expect(new == old, "\(String(decoding: new, as: UTF8.self))\n≠\n\(String(decoding: old, as: UTF8.self))")
        }
    }

    @Test func readsTheCorpusAsTheDecoderRead() throws {
        for record in RecordJSONCorpus.records {
            let data = try Self.encoded(record)
            let read = try RecordStore.decode(data, path: "/r", user: "alice")
            #expect(read == (try CodableRecordReference.decode(data, path: "/r", user: "alice")))
            #expect(try Self.encoded(read) == data)
        }
        let inputs = try RecordJSONCorpus.unusual.map(Self.encoded)
        #expect(Self.disagreements(inputs).isEmpty)
        #expect(Self.disagreements(inputs, user: "alice").isEmpty)
        #expect(Self.disagreements(try RecordJSONCorpus.records.map(Self.encoded), user: "bob").isEmpty)
    }

    /// Values every member and element is replaced by in turn.
    static let replacements: [JSONValue] = [
        .null, .string("x"), .string(""), .string("AAAA"), .string("2027-01-15T08:00:00Z"), .integer(0), .integer(1),
        .integer(-1), .integer(Int64.max), .decimal("1.5"), .decimal("1.0"), .decimal("1e0"), .decimal("-0.0"),
        .decimal("18446744073709551616"), .bool(true), .array([]), .array([.null]), .object([JSONMember]()),
        .object([JSONMember("version", .integer(1))]),
    ]

    /// Every record `value` can become by one change: a member removed, replaced, or given a duplicate before or
    /// after it (with another value or the same); an element removed or replaced; an unknown member added.
    static func mutations(of value: JSONValue) -> [JSONValue] {
        switch value {
        case .object(let members):
            var all: [JSONValue] = [
                .object(members + [JSONMember("unknownKey", .array([.object([JSONMember]()), .decimal("1e999")]))])
            ]
            for (index, member) in members.enumerated() {
                var removed = members
                removed.remove(at: index)
                all.append(.object(removed))
                for replacement in replacements + [member.value] {
                    var replaced = members
                    replaced[index].value = replacement
                    all.append(.object(replaced))
                    var before = members
                    before.insert(JSONMember(member.key, replacement), at: index)
                    all.append(.object(before))
                    var after = members
                    after.insert(JSONMember(member.key, replacement), at: index + 1)
                    all.append(.object(after))
                }
                for inner in mutations(of: member.value) {
                    var nested = members
                    nested[index].value = inner
                    all.append(.object(nested))
                }
            }
            return all
        case .array(let items):
            var all: [JSONValue] = [.array([]), .array(items + items.prefix(1))]
            for (index, item) in items.enumerated() {
                var removed = items
                removed.remove(at: index)
                all.append(.array(removed))
                for replacement in [JSONValue.null, .string("x"), .object([JSONMember]())] + mutations(of: item) {
                    var replaced = items
                    replaced[index] = replacement
                    all.append(.array(replaced))
                }
            }
            return all
        default: return []
        }
    }

    @Test(arguments: [0, 4, 5, 9, 12])
    func readsEveryMutationAsTheDecoderRead(_ corpusIndex: Int) throws {
        let record = RecordJSONCorpus.records[corpusIndex]
        let value = try JSONParser.parse([UInt8](try Self.encoded(record)), grammar: .strict)
        let inputs = Self.mutations(of: value).map { Data($0.serialized) }
        #expect(inputs.count > 500)
        #expect(Self.disagreements(inputs).isEmpty)
        let accepted = inputs.filter { (try? RecordStore.decode($0, path: "/r")) != nil }.count
        #expect(accepted > 0 && accepted < inputs.count)
    }

    @Test func readsEveryTruncationAndByteChangeAsTheDecoderRead() throws {
        let data = try Self.encoded(RecordJSONCorpus.records[12])
        let prefixes = (0..<data.count).map { data.prefix($0) }.map { Data($0) }
        #expect(Self.disagreements(prefixes).isEmpty)
        var changed: [Data] = []
        for offset in stride(from: 0, to: data.count, by: 3) {
            for byte in Array(",}]\"\\0-.e{[ nx".utf8) + [0x00, 0x01, 0x7F, 0xC3, 0xFF] {
                var copy = data
                copy[copy.startIndex + offset] = byte
                changed.append(copy)
            }
        }
        #expect(Self.disagreements(changed).isEmpty)
    }
}
