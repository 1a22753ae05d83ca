import Foundation
import Testing

@testable import TokenpinCore

/// Record dates are written and read exactly as `JSONEncoder`/`JSONDecoder` with `.iso8601` write and read them,
/// so records written before and after read the same.
@Suite struct RecordDateTests {
    static let edges: [Double] = [
        0, -1.5, 59.999, 951_782_400, 951_868_799.5, 1_709_164_800, 1_800_000_000.75, 4_107_542_400,
        253_402_300_799.9, 978_307_200, 1_078_099_199, 1_093_996_799, -62_135_596_800,
    ]

    static func randomDates() -> [Double] {
        var generator = SystemRandomNumberGenerator()
        return (0..<500).map { _ in Double.random(in: -2_000_000_000...8_000_000_000, using: &generator) }
    }

    @Test("a date is written as Foundation's ISO 8601 writes it", arguments: edges + randomDates())
    func writesAsFoundation(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(RecordDate.string(from: date) == date.formatted(.iso8601))
    }

    @Test("a written date reads back as Foundation reads it", arguments: edges + randomDates())
    func readsAsFoundation(seconds: Double) throws {
        let text = Date(timeIntervalSince1970: seconds).formatted(.iso8601)
        #expect(RecordDate.date(from: text) == (try? Date.ISO8601FormatStyle().parse(text)))
    }

    @Test(
        "other ISO 8601 forms and malformed dates read as Foundation reads them",
        arguments: [
            "2027-01-15T08:00:00+01:00", "2027-01-15T08:00:00.5Z", "2027-01-15 08:00:00Z", "2027-01-15T08:00:00",
            "20270115T080000Z", "2027-02-29T00:00:00Z", "2028-02-29T00:00:00Z", "2027-13-01T00:00:00Z",
            "2027-01-15T24:00:00Z", "2027-01-15T23:60:00Z", "2027-01-15T23:59:60Z", "2027-04-31T00:00:00Z",
            "0000-01-01T00:00:00Z", "+2027-01-15T08:00:00Z", "2027-1-15T08:00:00Z", "", "Z", "2027-01-15T08:00:0AZ",
            "٢٠٢٧-01-15T08:00:00Z",
        ])
    func readsOddFormsAsFoundation(text: String) {
        #expect(RecordDate.date(from: text) == (try? Date.ISO8601FormatStyle().parse(text)))
    }

    @Test("records encode and decode their dates through RecordDate, unchanged in form")
    func recordsRoundTrip() throws {
        struct Stamped: Codable, Equatable { var at: Date }
        let value = Stamped(at: Date(timeIntervalSince1970: 1_800_000_000))
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = RecordDate.encoding
        let data = try encoder.encode(value)
        #expect(String(decoding: data, as: UTF8.self) == #"{"at":"2027-01-15T08:00:00Z"}"#)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = RecordDate.decoding
        #expect(try decoder.decode(Stamped.self, from: data) == value)
        #expect {
            _ = try decoder.decode(Stamped.self, from: Data(#"{"at":"yesterday"}"#.utf8))
        } throws: { error in
            guard case DecodingError.dataCorrupted = error else { return false }
            return true
        }
    }
}
