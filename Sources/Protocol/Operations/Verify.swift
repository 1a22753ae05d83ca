package import TokenpinCore
package import TokenpinService

extension Operation {
    /// Verify: the token first when enabled and present, else the PIN.
    package struct Verify: WireOperation {
        static let name = "verify"
        static let lock = OperationLock.user
        static let fieldNames: Set<String> = ["method", "loginKeyring"]

        /// The one authentication type to use (`pin` or `token`); nil: as the record and the configuration say.
        package var method: VerificationMethod?
        /// From PAM: hand back the sealed login password after a success at the seat (`login-keyring`).
        package var loginKeyring: Bool

        /// Creates the operation.
        package init(method: VerificationMethod? = nil, loginKeyring: Bool = false) {
            self.method = method
            self.loginKeyring = loginKeyring
        }

        init(fields: MessageFields) throws(ProtocolError) {
            method = try fields.method()
            loginKeyring = try fields.optionalBool("loginKeyring") ?? false
        }

        func encode(into writer: inout LineWriter) {
            writer.append(method: method)
            if loginKeyring { writer.append("loginKeyring", .bool(true)) }
        }
    }
}

extension DaemonClient {
    /// Verifies: the token first when enabled and present, else the PIN; `method` forces one.
    package func verify(_ interaction: some Interaction, method: VerificationMethod? = nil) throws(ServiceError)
        -> VerifyReport
    {
        try report(selected(Request(.verify(.init(method: method)), user: user)), interaction)
    }
}
