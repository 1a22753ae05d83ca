internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// The readers and the card in each.
    package struct Readers: FieldlessOperation {
        static let name = "readers"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// The readers the daemon sees and the card in each.
    package func listReaders() throws(ServiceError) -> [ReaderInfo] {
        let fields = try run(selected(Request(.readers(.init()), user: user)), NoInteraction())
        do {
            return try ReaderInfo.list(protocolValue: JSONValue.object(fields)["readers"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed readers: \(error.detail)")
        }
    }
}
