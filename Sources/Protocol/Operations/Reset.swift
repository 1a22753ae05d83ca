internal import TokenpinCore
package import TokenpinService

extension Operation {
    /// Reset the PIN with the recovery key, or as root without it.
    package struct Reset: WireOperation {
        static let name = "reset"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["admin"]

        /// Root acting as the administrator, without the recovery key (wire `admin`; a non-root peer is refused).
        package var administrator: Bool

        /// Creates the operation.
        package init(administrator: Bool = false) { self.administrator = administrator }

        init(fields: MessageFields) throws(ProtocolError) {
            administrator = try fields.optionalBool("admin") ?? false
        }

        func encode(into writer: inout LineWriter) {
            if administrator { writer.append("admin", .bool(true)) }
        }
    }
}

extension DaemonClient {
    /// Resets the PIN with the recovery key.
    package func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try report(Request(.reset(.init()), user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }

    /// Root's reset without the recovery key: a new record, its recovery key in guarded memory.
    package func administratorReset(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        let request = Request(
            .reset(.init(administrator: true)), user: user, newPINAttempts: Self.attempts(interaction))
        return try enrolment(request, interaction)
    }
}
