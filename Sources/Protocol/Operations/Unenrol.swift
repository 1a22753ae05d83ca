package import TokenpinCore
package import TokenpinService

extension Operation {
    /// Remove the record, after a verification (or, for root, without one).
    package struct Unenrol: WireOperation {
        static let name = "unenrol"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["method", "admin"]

        /// The verification to run first (`pin` or `token`); nil: as `verify` chooses.
        package var method: VerificationMethod?
        /// Root acting as the administrator, without a verification (wire `admin`; a non-root peer is refused).
        package var administrator: Bool

        /// Creates the operation.
        package init(method: VerificationMethod? = nil, administrator: Bool = false) {
            self.method = method
            self.administrator = administrator
        }

        init(fields: MessageFields) throws(ProtocolError) {
            method = try fields.method()
            administrator = try fields.optionalBool("admin") ?? false
        }

        func encode(into writer: inout LineWriter) {
            writer.append(method: method)
            if administrator { writer.append("admin", .bool(true)) }
        }
    }
}

extension DaemonClient {
    /// Removes the record after a verification, or as root (`administrator`) without one.
    package func unenrol(_ interaction: some Interaction, method: VerificationMethod?, administrator: Bool)
        throws(ServiceError) -> VerifyReport
    {
        let unenrol = Operation.Unenrol(method: method, administrator: administrator)
        return try report(selected(Request(.unenrol(unenrol), user: user)), interaction)
    }
}
