import TokenpinService

extension Operation {
    /// Enrol a PIN; the result carries the recovery key.
    public struct Enrol: FieldlessOperation {
        static let name = "enrol"
        static let lock = OperationLock.userAfterFirstWayIn
        /// Creates the operation.
        public init() {}
    }
}

extension DaemonClient {
    /// Enrols a PIN; the recovery key comes back in guarded memory.
    public func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult {
        try enrolment(Request(.enrol(.init()), user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }
}
