internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// Liveness check; the result carries the protocol version.
    package struct Ping: FieldlessOperation {
        static let name = "ping"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// The protocol version the daemon speaks.
    package func ping() throws(ServiceError) -> Int {
        let fields = try run(Request(.ping(.init())), NoInteraction())
        return JSONValue.object(fields)["version"]?.intValue ?? 0
    }
}
