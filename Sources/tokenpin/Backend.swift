import TokenpinCore
import TokenpinProtocol
import TokenpinService

/// Where the CLI's operations run: in this process on the user's own store (local mode), or in tokenpind over
/// its socket. Both give the same values and errors, so output and exit codes are the same in both modes.
protocol Backend {
    func enrol(_ interaction: some Interaction) throws(ServiceError) -> EnrolmentResult
    func verify(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError) -> VerifyReport
    func change(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport
    func reset(_ interaction: some Interaction) throws(ServiceError) -> VerifyReport
    func status() throws(ServiceError) -> StatusReport
    func types() throws(ServiceError) -> [TypeStatus]
    func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError)
    func enableToken(_ interaction: some Interaction, generateKey: Bool, assumeYes: Bool,
                     mode: VerificationMode?) throws(ServiceError) -> VerifyReport
    func disableToken(_ interaction: some Interaction, method: VerificationMethod?) throws(ServiceError) -> VerifyReport
    func listReaders() throws(ServiceError) -> [ReaderInfo]
    func changeCardPIN(_ interaction: some Interaction) throws(ServiceError)
    func unblockCardPIN(_ interaction: some Interaction, admin: Bool) throws(ServiceError)
}

extension PINService: Backend {
    func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        try togglePIN(on: on)
    }
}

extension DaemonClient: Backend {
    func togglePIN(on: Bool, _ interaction: some Interaction) throws(ServiceError) {
        try toggle(.pin, on: on, interaction)
    }
}
