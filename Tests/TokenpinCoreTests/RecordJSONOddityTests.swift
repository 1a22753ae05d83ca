import Foundation
import Testing

@testable import TokenpinCore

/// Where Foundation's `JSONDecoder` is lenient or particular, the store's reader must be the same: trailing commas,
/// duplicate keys (the first counts), numbers with fractions and exponents, strings and numbers it never reads,
/// nesting, a byte order mark.
@Suite struct RecordJSONOddityTests {
    static var text: String {
        String(
            decoding: (try? RecordStore.encode(RecordJSONCorpus.tokenRecord(RecordJSONCorpus.openPGP))) ?? Data(),
            as: UTF8.self)
    }

    /// The record with `"version" : 1` written as `replacement`.
    static func version(_ replacement: String) -> String {
        text.replacingOccurrences(of: "\"version\" : 1", with: replacement)
    }

    /// The record with a member `"extra" : value` first in the outer object.
    static func extra(_ value: String) -> String { "{\"extra\" : " + value + "," + text.dropFirst() }

    static let numbers = [
        "1", "1.0", "1e0", "1E0", "10e-1", "0.1e1", "1.0000000000000001", "-0", "01", "1.", ".5", "1e", "-", "+1",
        "1e+0",
        "0x1", "1.5", "2", "9007199254740993.5", "9007199254740993.00000000000", "-9007199254740993.9",
        "9223372036854775807", "9223372036854775808", "9223372036854775807.0", "-9223372036854775808",
        "123456789012345678901234567890e-12", "1e400", "-1e400", "1e-400", "true", "null", "\"1\"", "[1]", "{}",
    ]

    static let values = [
        "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00x\"", "\"a\u{1}b\"", "1-2+e", "1.2.3", "--1", "[1,]", "[,]",
        "{\"a\":1,}", "{,}", "{\"\\ud800\":1}", "{\"a\u{1}\":[tru]}", "tru", "nul", "truee", "[1 2]", "\"\\u12\\\"\"",
        String(repeating: "[", count: 510) + String(repeating: "]", count: 510),
        String(repeating: "[", count: 511) + String(repeating: "]", count: 511),
        String(repeating: "{\"a\":", count: 511) + "1" + String(repeating: "}", count: 511),
    ]

    @Test func numbersReadAsTheDecoderReadThem() {
        var inputs = Self.numbers.map { Self.version("\"version\" : " + $0) }
        inputs += Self.numbers.map {
            Self.text.replacingOccurrences(of: "\"remaining\" : 5", with: "\"remaining\" : " + $0)
        }
        inputs += Self.numbers.map { Self.extra($0) }
        #expect(RecordJSONTests.disagreements(inputs.map { Data($0.utf8) }).isEmpty)
    }

    @Test func valuesNotReadAreSkippedAsTheDecoderSkippedThem() {
        var inputs = Self.values.map { Self.extra($0) }
        inputs += Self.values.map { Self.version("\"version\" : " + $0) }
        inputs += Self.values.map {
            Self.text.replacingOccurrences(of: "\"reader\" : ", with: "\"reader\" : " + $0 + ", \"x\" : ")
        }
        #expect(RecordJSONTests.disagreements(inputs.map { Data($0.utf8) }).isEmpty)
    }

    @Test func layoutAsTheDecoderTookIt() {
        let inputs = [
            Self.text + " ", " \t\r\n" + Self.text, Self.text + "\u{0B}", "\u{0C}" + Self.text, Self.text + "x",
            Self.text + "}", Self.text.replacingOccurrences(of: "\n}", with: ",\n}"),
            Self.text.replacingOccurrences(of: "\n  ]", with: ",\n  ]"),
            Self.text.replacingOccurrences(of: " : ", with: ":"), Self.text.replacingOccurrences(of: "\n", with: ""),
            "{}", "[]", "1", "null", "\"x\"", "{\"version\":1}", "{\"version\":2}", "{\"version\":1,\"version\":2}",
            "{\"version\":2,\"version\":1}", "{\"version\":null,\"version\":2}", "{\"vers\\u0069on\":2}",
        ]
        #expect(RecordJSONTests.disagreements(inputs.map { Data($0.utf8) }).isEmpty)
        let bom = Data([0xEF, 0xBB, 0xBF]) + Data(Self.text.utf8)
        #expect(RecordJSONTests.disagreements([bom, Data([0xEF, 0xBB]) + Data(Self.text.utf8)]).isEmpty)
    }

    /// Of duplicate keys the first counts, as in `JSONDecoder` (which keeps the first it meets).
    @Test func theFirstOfDuplicateKeysCounts() throws {
        let twice = Self.text.replacingOccurrences(
            of: "\"user\" : \"alice\"", with: "\"user\" : \"alice\", \"user\" : \"bob\"")
        #expect(try RecordStore.decode(Data(twice.utf8), path: "/r").user == "alice")
        let nullFirst = Self.text.replacingOccurrences(
            of: "\"user\" : \"alice\"", with: "\"user\" : null, \"user\" : \"alice\"")
        #expect(throws: StoreError.self) { try RecordStore.decode(Data(nullFirst.utf8), path: "/r") }
        #expect(RecordJSONTests.disagreements([Data(twice.utf8), Data(nullFirst.utf8)]).isEmpty)
    }

    @Test func stringsInValuesAndKeysAsTheDecoderReadThem() {
        let bad: [[UInt8]] = [
            [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x01], [0x7F], [0xE2, 0x82],
        ]
        var inputs: [Data] = []
        for bytes in bad {
            let parts = Self.text.components(separatedBy: "\"reader\" : \"")
            inputs.append(Data((parts[0] + "\"reader\" : \"").utf8) + Data(bytes) + Data(parts[1].utf8))
            inputs.append(Data("{\"x\" : \"".utf8) + Data(bytes) + Data(("\"," + Self.text.dropFirst()).utf8))
            inputs.append(Data("{\"x\" : {\"".utf8) + Data(bytes) + Data(("\" : 1}," + Self.text.dropFirst()).utf8))
            inputs.append(Data("{\"".utf8) + Data(bytes) + Data(("\" : 1," + Self.text.dropFirst()).utf8))
        }
        #expect(RecordJSONTests.disagreements(inputs).isEmpty)
    }
}
