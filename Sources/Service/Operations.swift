package import TokenpinCore

/// The operations of the PIN service that tokenpind runs with behaviour of its own (counted attempts with their
/// audit records and events, the login keyring, the card's PIN), declared once.
///
/// `PINService` runs them in this process on a store; the daemon client (TokenpinProtocol) runs them in tokenpind
/// over its socket; the CLI is written against this protocol, and tokenpind dispatches each decoded request to it
/// in one place. Both give the same values and errors, so the CLI's output and exit codes are the same in both modes.
/// The operations with no such behaviour (`status`, `types`, `readers`, `ping`) are not here: each is declared once
/// as a `PerformableOperation` in TokenpinProtocol, which the CLI runs through `PINBackend.perform`.
package protocol PINOperations {
    /// Enrols a first PIN and returns the recovery key (`created`).
    func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult
    /// Verifies the user: token first with fallback to the PIN, or only `method` when given.
    func verify(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError) -> VerifyReport
    /// Verifies as `verify` does, then releases the key of `application` derived from the vault key (a failed
    /// verification releases nothing).
    func derive(_ interaction: some Interaction, application: ApplicationName, method: VerificationMethod?)
        throws(ServiceError) -> DerivedKey
    /// Changes the PIN after a counted check of the current one.
    func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport
    /// Sets a new PIN with the recovery key and resets the counter.
    func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport
    /// Switches the PIN type on or off (off is always refused: the PIN is the first type).
    func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError)
    /// Binds a card and switches the token on (`mode`: `either`, or `both` for the composite slot), with the key
    /// in `slot` where the card application has slots (PIV).
    func enableToken(
        _ interaction: some Interaction, generateKey: Bool, assumeYes: Bool, mode: VerificationMode?, slot: String?
    ) throws(ServiceError) -> VerifyReport
    /// Switches the token off after a counted PIN attempt or the card (`method`).
    func disableToken(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError)
        -> VerifyReport
    /// Changes the card's own PIN.
    func changeCardPIN(_ interaction: some Interaction) throws(ServiceError)
    /// Unblocks the card's PIN with the reset code or, with `admin`, the admin PIN.
    func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError)
    /// Removes the record after a verification, or without one for an administrator (root, `--user`).
    func unenrol(_ interaction: some Interaction, method: VerificationMethod?, administrator: Bool)
        throws(ServiceError) -> VerifyReport
    /// Root's reset without the recovery key: a new PIN, a new record and recovery key (`reset --user`).
    func administratorReset(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult
}

extension PINService: PINOperations {
    package func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        try togglePIN(on: on)
    }
}

extension VerifyOutcome {
    /// The exit code of an operation that ended with this outcome: the one mapping the CLI and tokenpind share.
    package var exitCode: ExitCode {
        switch self {
        case .verified: .success
        case .rejected, .tokenRejected: .notVerified
        case .locked, .delayed: .locked
        }
    }
}

extension VerifyReport {
    /// The exit code of this report (its outcome's).
    package var exitCode: ExitCode { outcome.exitCode }
}
