import Synchronization
public import TokenpinCore

/// Takes the vault key at the moment a verification opened it and keeps only the application key derived from it.
///
/// A `derive` runs the very verification `verify` runs, with one of these set on the service (`keyRelease`): the
/// two places a verification succeeds (a counted PIN attempt, a token attempt) hand it the vault key under the
/// user's lock, before the record is saved, and it derives the key at once. The vault key never leaves the
/// service; the application key stays in guarded memory until `take()` moves it out.
public final class ApplicationKeyRelease: Sendable {
    /// Whose key and for which application.
    public let user: String
    /// The application.
    public let application: ApplicationName
    private let released = Mutex<SecretBytes?>(nil)

    /// A release of `application`'s key for `user`.
    public init(user: String, application: ApplicationName) {
        self.user = user
        self.application = application
    }

    /// Derives the application key from the vault key a verification just opened.
    func opened(_ vaultKey: borrowing SecretBytes) throws {
        try released.withLock { (slot: inout sending SecretBytes?) throws(CryptoError) in
            slot = try ApplicationKeys.key(vaultKey: vaultKey, user: user, application: application)
        }
    }

    /// The key, once: nil when no verification succeeded.
    func take() -> SecretBytes? {
        released.withLock { slot in slot.take() }
    }
}

/// What `derive` gives: the verification's report, and the key when it succeeded.
public struct DerivedKey: ~Copyable {
    /// The verification, as `verify` reports it.
    public var report: VerifyReport
    /// The application key (32 bytes, guarded memory); nil unless `report` is a success.
    public var key: SecretBytes?

    /// Creates a result.
    public init(report: VerifyReport, key: consuming SecretBytes?) {
        self.report = report
        self.key = key
    }
}

extension PINService {
    /// Verifies the user exactly as `verify` does (token first with fallback, prompts, counter, events) and, on
    /// success, releases the key of `application`; a failed verification releases nothing.
    public func derive(_ interaction: some Interaction, application: ApplicationName, method: VerificationMethod?)
        throws(ServiceError) -> DerivedKey
    {
        var service = self
        let release = ApplicationKeyRelease(user: user, application: application)
        service.keyRelease = release
        let report = try service.verify(interaction, method: method)
        let key = release.take()
        guard case .verified = report.outcome, let key else {
            return DerivedKey(report: report, key: nil)
        }
        logger.info("key released", [("user", user), ("app", application.rawValue)])
        return DerivedKey(report: report, key: key)
    }

    /// Hands the vault key a verification opened to the release of a `derive`; nothing outside a `derive`.
    func releaseKey(_ vaultKey: borrowing SecretBytes) throws {
        try keyRelease?.opened(vaultKey)
    }
}
