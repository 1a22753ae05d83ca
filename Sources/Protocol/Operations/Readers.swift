import TokenpinService

extension Operation {
    /// The readers and the card in each.
    public struct Readers: FieldlessOperation {
        static let name = "readers"
        static let lock = OperationLock.none
        /// Creates the operation.
        public init() {}
    }
}

extension DaemonClient {
    /// The readers the daemon sees and the card in each.
    public func listReaders() throws(ServiceError) -> [ReaderInfo] {
        let fields = try run(selected(Request(.readers(.init()), user: user)), NoInteraction())
        do {
            return try ReaderInfo.list(protocolValue: JSONValue.object(fields)["readers"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed readers: \(error.detail)")
        }
    }
}
