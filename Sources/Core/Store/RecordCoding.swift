import FoundationEssentials

/// A record's bytes: decoded and checked as every reader of the store needs, encoded as the store writes them.
extension RecordStore {
    /// Decodes and checks a record's bytes.
    public static func decode(_ data: Data, path: String, user: String? = nil) throws(StoreError) -> EnrolmentRecord {
        guard !data.isEmpty else { throw StoreError(.corrupt, path: path, "the record is empty (truncated?)") }
        struct Header: Decodable { var version: Int }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = RecordDate.decoding
        // One decoding pass in the common case; the header alone is read only to explain a failure.
        guard let record = try? decoder.decode(EnrolmentRecord.self, from: data) else {
            guard let header = try? decoder.decode(Header.self, from: data) else {
                throw StoreError(
                    .corrupt, path: path, "the record is not valid JSON or has no version (truncated or edited?)")
            }
            if header.version != EnrolmentRecord.currentVersion { throw unknownVersion(header.version, path: path) }
            throw StoreError(
                .corrupt, path: path, "the record does not have the expected fields (truncated or edited?)")
        }
        if record.version != EnrolmentRecord.currentVersion { throw unknownVersion(record.version, path: path) }
        if let problem = record.structuralProblem { throw StoreError(.corrupt, path: path, problem) }
        if let user, record.user != user {
            throw StoreError(.corrupt, path: path, "the record belongs to \(record.user), not \(user)")
        }
        return record
    }

    static func unknownVersion(_ version: Int, path: String) -> StoreError {
        StoreError(
            .unknownVersion, path: path,
            "the record has format version \(version); this tokenpin reads version \(EnrolmentRecord.currentVersion)")
    }

    /// Encodes a record as the store writes it.
    public static func encode(_ record: EnrolmentRecord) throws(StoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = RecordDate.encoding
        do {
            return try encoder.encode(record)
        } catch {
            throw StoreError(.io, path: "", "cannot encode the record")
        }
    }
}
