package import TokenpinService

extension Operation {
    /// Change the PIN.
    package struct Change: FieldlessOperation {
        static let name = "change"
        static let lock = OperationLock.user
        /// Creates the operation.
        package init() {}
    }
}

extension DaemonClient {
    /// Changes the PIN.
    package func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport {
        try report(Request(.change(.init()), user: user, newPINAttempts: Self.attempts(interaction)), interaction)
    }
}
