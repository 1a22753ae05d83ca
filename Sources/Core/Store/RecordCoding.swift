import FoundationEssentials

/// A record's bytes: decoded and checked as every reader of the store needs, encoded as the store writes them.
///
/// Both without Foundation's `JSONDecoder` and `JSONEncoder`, whose first use in a process (the Swift runtime's type
/// and conformance look-ups for the generic Codable containers) cost a `tokenpin verify` about a quarter of its
/// instructions; the records read and written are the same (`RecordJSONTests`). The types keep their `Codable`
/// conformances for the library's users.
extension RecordStore {
    /// Decodes and checks a record's bytes.
    public static func decode(_ data: Data, path: String, user: String? = nil) throws(StoreError) -> EnrolmentRecord {
        guard !data.isEmpty else { throw StoreError(.corrupt, path: path, "the record is empty (truncated?)") }
        // One reading in the common case; the version alone is read only to explain a failure.
        let value = RecordJSONReader.parse(data)
        guard let value, let record = RecordJSONReader.record(value) else {
            guard let version = value.flatMap(RecordJSONReader.version) else {
                throw StoreError(
                    .corrupt, path: path, "the record is not valid JSON or has no version (truncated or edited?)")
            }
            if version != EnrolmentRecord.currentVersion { throw unknownVersion(version, path: path) }
            throw StoreError(
                .corrupt, path: path, "the record does not have the expected fields (truncated or edited?)")
        }
        try check(record, path: path, user: user)
        return record
    }

    /// The checks every decoded record passes: the version this tokenpin reads, the structure (`structuralProblem`),
    /// and the user it belongs to.
    static func check(_ record: EnrolmentRecord, path: String, user: String?) throws(StoreError) {
        if record.version != EnrolmentRecord.currentVersion { throw unknownVersion(record.version, path: path) }
        if let problem = record.structuralProblem { throw StoreError(.corrupt, path: path, problem) }
        if let user, record.user != user {
            throw StoreError(.corrupt, path: path, "the record belongs to \(record.user), not \(user)")
        }
    }

    static func unknownVersion(_ version: Int, path: String) -> StoreError {
        StoreError(
            .unknownVersion, path: path,
            "the record has format version \(version); this tokenpin reads version \(EnrolmentRecord.currentVersion)")
    }

    /// Encodes a record as the store writes it: pretty-printed JSON with sorted keys, byte for byte what
    /// `JSONEncoder` with `[.prettyPrinted, .sortedKeys]` wrote (`RecordJSONWriter`). It does not fail; the
    /// signature stays for callers.
    public static func encode(_ record: EnrolmentRecord) throws(StoreError) -> Data {
        Data(RecordJSONWriter.encode(record))
    }
}
