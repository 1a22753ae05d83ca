internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// Move a local record into the daemon's store.
    package struct Import: WireOperation {
        static let name = "import"
        static let lock = OperationLock.userAfterFirstWayIn
        static let fieldNames: Set<String> = ["record"]

        /// The record file's bytes (base64 on the wire).
        package var record: [UInt8]

        /// Creates the operation.
        package init(record: [UInt8]) { self.record = record }

        init(fields: MessageFields) throws(ProtocolError) {
            let text = try fields.string("record")
            guard let data = Base64.decode(text), !data.isEmpty else {
                throw ProtocolError(.badField, "`record` must be base64")
            }
            guard data.count <= ProtocolLimits.maximumImportBytes else {
                throw ProtocolError(.oversized, "the record is larger than \(ProtocolLimits.maximumImportBytes) bytes")
            }
            record = data
        }

        func encode(into writer: inout LineWriter) {
            writer.append("record", .text(Base64.encode(record)))
        }
    }
}

extension DaemonClient {
    /// Moves a local record (its file's bytes) into the daemon's store; refuses when the daemon has one.
    ///
    /// Returns the record's path on the daemon's side.
    package func importRecord(_ bytes: [UInt8]) throws(ServiceError) -> String {
        try importRecord(bytes, NoInteraction())
    }

    /// `importRecord`, answering the daemon's prompt for the login password (a user's first record) through
    /// `interaction`.
    package func importRecord(_ bytes: [UInt8], _ interaction: some Interaction) throws(ServiceError) -> String {
        let fields = try run(Request(.import(.init(record: bytes)), user: user), interaction)
        return JSONValue.object(fields)["record"]?.stringValue ?? ""
    }
}
