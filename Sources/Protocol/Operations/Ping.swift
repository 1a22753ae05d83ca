import TokenpinService

extension Operation {
    /// Liveness check; the result carries the protocol version.
    public struct Ping: FieldlessOperation {
        static let name = "ping"
        static let lock = OperationLock.none
        /// Creates the operation.
        public init() {}
    }
}

extension DaemonClient {
    /// The protocol version the daemon speaks.
    public func ping() throws(ServiceError) -> Int {
        let fields = try run(Request(.ping(.init())), NoInteraction())
        return JSONValue.object(fields)["version"]?.intValue ?? 0
    }
}
