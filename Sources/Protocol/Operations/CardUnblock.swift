internal import TokenpinCore
package import TokenpinService

extension Operation {
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
    /// `tokenpin token unblock [--admin]` through the daemon.
    package func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError) {
        _ = try run(selected(Request(.cardUnblock(.init(withAdminPIN: admin)), user: user)), interaction)
    }
}
