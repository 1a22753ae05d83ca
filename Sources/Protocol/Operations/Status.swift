internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// The record's state.
    package struct Status: FieldlessOperation, PerformableOperation {
        static let name = "status"
        static let lock = OperationLock.none
        /// The user alone: the card selection stays out (the daemon's own applies).
        package static let scope = RequestScope.user
        /// Creates the operation.
        package init() {}

        /// The status request.
        package var operation: Operation { .status(self) }

        /// The record's state, with the token's.
        package func run(on service: PINService, _ interaction: some Interaction) throws(ServiceError)
            -> StatusReport
        {
            try service.status()
        }

        /// `status`: the report (the codec `--json` builds on).
        package func resultFields(for outcome: StatusReport) -> [JSONMember] {
            [JSONMember("status", outcome.protocolValue)]
        }

        /// The report in `status`.
        package func outcome(fromResult fields: [JSONMember]) throws(ProtocolError) -> StatusReport {
            try StatusReport(protocolValue: JSONValue.object(fields)["status"])
        }
    }
}
