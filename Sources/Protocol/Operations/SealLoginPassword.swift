extension Operation {
    /// Keep the login password sealed for the login keyring (the password stack; LoginKeyringMessages.swift).
    package struct SealLoginPassword: FieldlessOperation {
        static let name = "seal-login-password"
        static let lock = OperationLock.user
        /// Creates the operation.
        package init() {}
    }
}
