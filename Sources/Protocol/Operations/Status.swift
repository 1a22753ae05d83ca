import TokenpinService

extension Operation {
    /// The record's state.
    public struct Status: FieldlessOperation {
        static let name = "status"
        static let lock = OperationLock.none
        /// Creates the operation.
        public init() {}
    }

    /// The authentication types.
    public struct Types: FieldlessOperation {
        static let name = "types"
        static let lock = OperationLock.none
        /// Creates the operation.
        public init() {}
    }
}

extension DaemonClient {
    /// The record's state.
    public func status() throws(ServiceError) -> StatusReport {
        let fields = try run(Request(.status(.init()), user: user), NoInteraction())
        do {
            return try StatusReport(protocolValue: JSONValue.object(fields)["status"])
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed status: \(error.detail)")
        }
    }

    /// The authentication types.
    public func types() throws(ServiceError) -> [TypeStatus] {
        let fields = try run(Request(.types(.init()), user: user), NoInteraction())
        do {
            return try TypeStatus.list(protocolValue: JSONValue.object(fields)["types"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed types: \(error.detail)")
        }
    }
}
