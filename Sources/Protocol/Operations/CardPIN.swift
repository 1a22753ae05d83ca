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

    /// Unblock the card's PIN with the Reset Code, or with the admin PIN.
    package struct CardUnblock: WireOperation {
        static let name = "card-unblock"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["admin"]

        /// With the admin PIN instead of the Reset Code (wire `admin`).
        package var withAdminPIN: Bool

        /// Creates the operation.
        package init(withAdminPIN: Bool = false) { self.withAdminPIN = withAdminPIN }

        init(fields: MessageFields) throws(ProtocolError) {
            withAdminPIN = try fields.optionalBool("admin") ?? false
        }

        func encode(into writer: inout LineWriter) {
            if withAdminPIN { writer.append("admin", .bool(true)) }
        }
    }
}

extension DaemonClient {
    /// `tokenpin token change-pin` through the daemon.
    package func changeCardPIN(_ interaction: some Interaction) throws(ServiceError) {
        _ = try run(selected(Request(.cardChangePIN(.init()), user: user)), interaction)
    }

    /// `tokenpin token unblock [--admin]` through the daemon.
    package func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) {
        _ = try run(selected(Request(.cardUnblock(.init(withAdminPIN: admin)), user: user)), interaction)
    }
}
