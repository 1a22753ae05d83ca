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

    /// The authentication types.
    package struct Types: FieldlessOperation, PerformableOperation {
        static let name = "types"
        static let lock = OperationLock.none
        /// The user alone: the card selection stays out (the daemon's own applies).
        package static let scope = RequestScope.user
        /// Creates the operation.
        package init() {}

        /// The types request.
        package var operation: Operation { .types(self) }

        /// The authentication types and whether each is on.
        package func run(on service: PINService, _ interaction: some Interaction) throws(ServiceError)
            -> [TypeStatus]
        {
            try service.types()
        }

        /// `types`: the list, as `--json` writes it too.
        package func resultFields(for outcome: [TypeStatus]) -> [JSONMember] {
            [JSONMember("types", TypeStatus.protocolValue(outcome))]
        }

        /// The list in `types`.
        package func outcome(fromResult fields: [JSONMember]) throws(ProtocolError) -> [TypeStatus] {
            try TypeStatus.list(protocolValue: JSONValue.object(fields)["types"])
        }
    }
}
