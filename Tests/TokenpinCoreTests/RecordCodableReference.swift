import Foundation

@testable import TokenpinCore

/// The store's record coding as it was, through `JSONDecoder` and `JSONEncoder` and the types' `Codable`
/// conformances: the reference `RecordJSONTests` holds the store's own reader and writer to.
enum CodableRecordReference {
    /// Decodes and checks a record's bytes, as `RecordStore.decode` did.
    static func decode(_ data: Data, path: String, user: String? = nil) throws(StoreError) -> EnrolmentRecord {
        guard !data.isEmpty else { throw StoreError(.corrupt, path: path, "the record is empty (truncated?)") }
        struct Header: Decodable { var version: Int }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = RecordDate.decoding
        guard let record = try? decoder.decode(EnrolmentRecord.self, from: data) else {
            guard let header = try? decoder.decode(Header.self, from: data) else {
                throw StoreError(
                    .corrupt, path: path, "the record is not valid JSON or has no version (truncated or edited?)")
            }
            if header.version != EnrolmentRecord.currentVersion {
                throw RecordStore.unknownVersion(header.version, path: path)
            }
            throw StoreError(
                .corrupt, path: path, "the record does not have the expected fields (truncated or edited?)")
        }
        if record.version != EnrolmentRecord.currentVersion {
            throw RecordStore.unknownVersion(record.version, path: path)
        }
        if let problem = record.structuralProblem { throw StoreError(.corrupt, path: path, problem) }
        if let user, record.user != user {
            throw StoreError(.corrupt, path: path, "the record belongs to \(record.user), not \(user)")
        }
        return record
    }

    /// Encodes a record as `RecordStore.encode` did.
    static func encode(_ record: EnrolmentRecord) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = RecordDate.encoding
        return try encoder.encode(record)
    }
}
