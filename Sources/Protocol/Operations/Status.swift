internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// The record's state.
    package struct Status: FieldlessOperation {
        static let name = "status"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}
    }

    /// The authentication types.
    package struct Types: FieldlessOperation {
        static let name = "types"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// The record's state.
    package func status() throws(ServiceError) -> StatusReport {
        let fields = try run(Request(.status(.init()), user: user), NoInteraction())
        do {
            return try StatusReport(protocolValue: JSONValue.object(fields)["status"])
        } catch {
            throw .serviceUnavailable("tokenpind sent a malformed status: \(error.detail)")
        }
    }

    /// The authentication types.
    package func types() throws(ServiceError) -> [TypeStatus] {
        let fields = try run(Request(.types(.init()), user: user), NoInteraction())
        do {
            return try TypeStatus.list(protocolValue: JSONValue.object(fields)["types"])
        } catch {
            throw .serviceUnavailable("tokenpind sent malformed types: \(error.detail)")
        }
    }
}
