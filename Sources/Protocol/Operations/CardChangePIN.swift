internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// Change the card's own PIN (PW1).
    package struct CardChangePIN: FieldlessOperation {
        static let name = "card-change-pin"
        static let lock = OperationLock.user
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// `tokenpin token change-pin` through the daemon.
    package func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) {
        _ = try run(selected(Request(.cardChangePIN(.init()), user: user)), interaction)
    }
}
