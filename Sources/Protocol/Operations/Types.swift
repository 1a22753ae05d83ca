internal import TokenpinCore
package import TokenpinService

extension Operation {
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
