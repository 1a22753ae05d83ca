internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// The readers and the card in each.
    package struct Readers: FieldlessOperation, PerformableOperation {
        static let name = "readers"
        static let lock = OperationLock.none
        /// Creates the operation.
        package init() {}

        /// The readers request.
        package var operation: Operation { .readers(self) }

        /// The readers the service sees and the card in each, as far as the caller may see them.
        package func run(on service: PINService, _ interaction: some Interaction) throws(ServiceError)
            -> [ReaderInfo]
        {
            try service.listReaders()
        }

        /// `readers`: each reader's codec value.
        package func resultFields(for outcome: [ReaderInfo]) -> [JSONMember] {
            [JSONMember("readers", .array(outcome.map(\.protocolValue)))]
        }

        /// The list in `readers`.
        package func outcome(fromResult fields: [JSONMember]) throws(ProtocolError) -> [ReaderInfo] {
            try ReaderInfo.list(protocolValue: JSONValue.object(fields)["readers"])
        }
    }
}
