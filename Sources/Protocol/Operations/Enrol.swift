package import TokenpinService

extension Operation {
    /// Enrol a PIN; the result carries the recovery key.
    package struct Enrol: FieldlessOperation {
        static let name = "enrol"
        static let lock = OperationLock.userAfterFirstWayIn
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// Enrols a PIN; the recovery key comes back in guarded memory.
    package func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        try enrolment(Request(.enrol(.init()), user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }
}
