internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// Liveness check; the result carries the protocol version.
    package struct Ping: FieldlessOperation, PerformableOperation {
        static let name = "ping"
        static let lock = OperationLock.none
        /// Nothing but the operation: the daemon answers anyone.
        package static let scope = RequestScope.daemon
        /// Creates the operation.
        package init() {}

        /// The ping request.
        package var operation: Operation { .ping(self) }

        /// The protocol version this build speaks; the service is not asked.
        package func run(on service: PINService, _ interaction: some Interaction) throws(ServiceError) -> Int {
            ProtocolLimits.version
        }

        /// `version`.
        package func resultFields(for outcome: Int) -> [JSONMember] { [JSONMember("version", .int(outcome))] }

        /// The version in `version`; 0 when there is none.
        package func outcome(fromResult fields: [JSONMember]) throws(ProtocolError) -> Int {
            JSONValue.object(fields)["version"]?.intValue ?? 0
        }
    }
}
